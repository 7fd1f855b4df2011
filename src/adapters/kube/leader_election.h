#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "adapters/kube/client.h"
#include "adapters/kube/json_text.h"
#include "adapters/kube/stop_signal.h"

namespace tessera::kube {

struct LeaderElectionOptions {
  std::string lease_namespace, lease_name;
  std::string identity;  // unique per process: pod name + random suffix
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

// Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm: a candidate
// takes the lease when it is free or when its record has not changed for lease_duration by our
// own monotonic clock (so clock skew between nodes does not matter); updates carry the observed
// resourceVersion so that only one candidate wins. The leader renews every retry_period and
// steps down when it could not renew within renew_deadline, then becomes a candidate again.
// The callbacks run on the elector's thread and must return quickly (renewal waits for them);
// on_started_leading and on_stopped_leading alternate, starting with on_started_leading.
class LeaderElector {
 public:
  LeaderElector(Client& client, LeaderElectionOptions options,
                std::function<void()> on_started_leading, std::function<void()> on_stopped_leading);
  ~LeaderElector();  // stops
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  void Start();  // runs on its own thread; once
  // If leading: releases the lease (holderIdentity "", leaseDurationSeconds 1) so that another
  // candidate takes over at once, and calls on_stopped_leading before returning.
  void Stop();
  // True from the return of on_started_leading until just before on_stopped_leading.
  bool IsLeader() const { return leading_.load(); }

 private:
  enum class Attempt { kLeading, kHeldByOther, kFailed };
  struct Record {
    std::string holder, renew_time, resource_version;
    bool operator==(const Record&) const = default;
  };

  void Run();
  void Lead();  // returns when leadership is lost or stop was requested
  Attempt TryAcquireOrRenew(const std::function<bool()>& should_stop);
  Attempt Create(const std::function<bool()>& should_stop);
  Attempt Update(Json lease, const Record& record, const std::function<bool()>& should_stop);
  void Release();
  void StepDown();
  void Observe(const Json& lease);
  std::string LeasePath() const;
  void Log(const std::string& message) const;

  Client& client_;
  const LeaderElectionOptions options_;
  const std::function<void()> on_started_leading_, on_stopped_leading_;
  std::atomic<bool> leading_{false};
  StopSignal stop_;
  // The elector thread's view of the lease.
  Record observed_;
  std::chrono::steady_clock::time_point observed_at_;
  std::mutex thread_mu_;
  std::thread thread_;
};

}  // namespace tessera::kube
