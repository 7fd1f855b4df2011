#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "adapters/kube/client.h"
#include "adapters/kube/events.h"
#include "adapters/kube/stop_signal.h"

namespace tessera::kube {

struct EventRecorderOptions {
  double events_per_second = 10;
  int burst = 25;
  size_t queue_capacity = 1000;
};

// Sends events asynchronously, rate-limited, so that the scheduling path never waits on the API
// server. Events beyond the queue's capacity are dropped and counted. Thread-safe.
class EventRecorder {
 public:
  // `reporting_component` fills EventSpec::reporting_component where that is empty.
  explicit EventRecorder(Client& client, std::string reporting_component = "tessera",
                         EventRecorderOptions options = {});
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  void Start();  // the sender thread; events recorded before are queued
  // Queues the event; false (and counted as dropped) when the queue is full or stopped.
  bool Record(EventSpec event);
  // Ends the sender after the event in flight, if any; queued events are dropped. Joins.
  void Stop();

  uint64_t sent() const { return sent_.load(); }
  uint64_t failed() const { return failed_.load(); }
  uint64_t dropped() const { return dropped_.load(); }

 private:
  void Run();

  Client& client_;
  const std::string reporting_component_;
  const EventRecorderOptions options_;
  StopSignal stop_;
  std::mutex mu_;
  std::condition_variable queued_;
  std::deque<EventSpec> queue_;
  bool stopping_ = false;
  std::atomic<uint64_t> sent_{0}, failed_{0}, dropped_{0};
  std::mutex thread_mu_;
  std::thread thread_;
};

}  // namespace tessera::kube
