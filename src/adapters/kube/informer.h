#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "adapters/kube/backoff.h"
#include "adapters/kube/client.h"
#include "adapters/kube/json_text.h"
#include "adapters/kube/stop_signal.h"

namespace tessera::kube {

// Called on the informer's thread, one at a time, in the order the server sent the changes.
// An exception from a handler is logged to stderr and the informer carries on.
struct InformerHandlers {
  std::function<void(std::vector<Json> objects)> on_replace;  // after every (re)list: all objects
  std::function<void(const Json& object)> on_upsert;          // ADDED / MODIFIED
  std::function<void(const Json& object)> on_delete;          // DELETED
};

struct InformerOptions {
  std::string field_selector, label_selector;
  int page_size = 500;
  std::chrono::seconds watch_timeout{300};  // asked of the server, jittered by +-10%
  std::chrono::milliseconds backoff_initial{200}, backoff_max{10000};
  uint64_t jitter_seed = 0;  // 0: from std::random_device
  // A watch that delivers nothing, not even a bookmark, for this long is ended and started
  // again from the last resource version: a connection can die without a word, and a view fed
  // by it would look synced forever. The API server sends a bookmark about every minute, so
  // twice that is a safe bound. 0: only the watch timeout ends a silent watch.
  std::chrono::milliseconds watch_silence_limit{0};
};

// List + watch of one resource collection ("/api/v1/pods"), as client-go's reflector does:
// paginated LIST, then WATCH from the list's resourceVersion with bookmarks; rewatch from the
// last seen resourceVersion after errors (with backoff) and relist when the server answers 410
// Gone. Resource versions are opaque strings.
class Informer {
 public:
  Informer(Client& client, std::string collection_path, InformerHandlers handlers,
           InformerOptions options = {});
  ~Informer();  // stops
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void Start();  // runs on its own thread; once
  // Returns within about 100 ms even while a request hangs. Safe to call from a handler (it then
  // only asks the thread to end).
  void Stop();

  bool HasSynced() const { return synced_.load(); }  // the first complete list was delivered
  // Up to when the handlers provably have every change: when the last complete list was
  // requested, or when the last watch event or bookmark was received, after its handler ran.
  // The epoch before the first list. Unlike HasSynced it stops advancing when the watch does.
  std::chrono::system_clock::time_point last_fresh() const;
  std::string resource_version() const;
  uint64_t relists() const { return relists_.load(); }  // complete lists delivered so far

 private:
  enum class WatchEnd {
    kStopped,
    kRelist,      // 410 Gone: the resource version is too old
    kRewatch,     // an error: rewatch from the last resource version after a backoff
    kRewatchNow,  // the server ended a healthy watch (its timeout)
  };

  void Run();
  bool List();
  WatchEnd Watch();
  // One line of a watch stream; false ends the stream with `*end` set.
  bool HandleEvent(std::string_view line, bool* delivered, WatchEnd* end);
  void MarkFresh(std::chrono::system_clock::time_point as_of);
  std::string Query() const;  // the selectors, "&fieldSelector=...", possibly empty
  std::chrono::seconds JitteredWatchTimeout();
  void SetResourceVersion(std::string rv);
  void Log(const std::string& message) const;
  template <class Fn>
  void CallHandler(const char* name, const Fn& fn);

  Client& client_;
  const std::string collection_path_;
  const InformerHandlers handlers_;
  const InformerOptions options_;
  Backoff backoff_;
  std::mt19937_64 rng_;  // used on the informer thread only
  StopSignal stop_;
  std::atomic<bool> synced_{false};
  std::atomic<uint64_t> relists_{0};
  std::atomic<int64_t> fresh_ms_{0};  // last_fresh(), in ms since the epoch
  mutable std::mutex rv_mu_;
  std::string rv_;
  std::mutex thread_mu_;
  std::thread thread_;
};

}  // namespace tessera::kube
