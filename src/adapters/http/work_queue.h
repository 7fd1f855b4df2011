#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::http {

// Worker threads behind a queue of fixed capacity: a burst beyond it is refused at once (the
// listener answers 503) instead of queueing without bound while every client times out.
class WorkQueue {
 public:
  WorkQueue(size_t threads, size_t capacity);
  ~WorkQueue();  // stops the workers; tasks still queued are dropped, not run
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `task` unless `capacity` tasks are already waiting; false: refused.
  bool TryPost(std::function<void()> task);
  void Stop();
  uint64_t refused() const;

 private:
  void WorkerLoop();

  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  uint64_t refused_ = 0;
  std::vector<std::thread> workers_;
};

}  // namespace tessera::http
