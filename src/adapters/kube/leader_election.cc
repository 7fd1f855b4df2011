#include "adapters/kube/leader_election.h"

#include <exception>
#include <iostream>
#include <utility>

#include "adapters/kube/time_format.h"
#include "adapters/kube/url.h"

namespace tessera::kube {
namespace {

using Clock = std::chrono::steady_clock;

long long LeaseSeconds(std::chrono::milliseconds duration) {
  return std::max(1LL, static_cast<long long>((duration.count() + 999) / 1000));
}

long long IntAt(const Json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<long long>() : 0;
}

void Call(const std::function<void()>& callback, const char* name) {
  if (!callback) return;
  try {
    callback();
  } catch (const std::exception& e) {
    std::cerr << (std::string("tessera: leader election: ") + name + " threw: " + e.what() + "\n");
  } catch (...) {
    std::cerr << (std::string("tessera: leader election: ") + name + " threw\n");
  }
}

}  // namespace

LeaderElector::LeaderElector(Client& client, LeaderElectionOptions options,
                             std::function<void()> on_started_leading,
                             std::function<void()> on_stopped_leading)
    : client_(client),
      options_(std::move(options)),
      on_started_leading_(std::move(on_started_leading)),
      on_stopped_leading_(std::move(on_stopped_leading)) {}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::Start() {
  std::lock_guard<std::mutex> lock(thread_mu_);
  if (thread_.joinable() || stop_.requested()) return;
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Stop() {
  stop_.Request();
  std::lock_guard<std::mutex> lock(thread_mu_);
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

std::string LeaderElector::LeasePath() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + EscapeUrlComponent(options_.lease_namespace) +
         "/leases/" + EscapeUrlComponent(options_.lease_name);
}

void LeaderElector::Log(const std::string& message) const {
  std::cerr << ("tessera: leader election " + options_.lease_namespace + "/" + options_.lease_name +
                " (" + options_.identity + "): " + message + "\n");
}

void LeaderElector::Run() {
  while (!stop_.requested()) {
    if (TryAcquireOrRenew([this] { return stop_.requested(); }) == Attempt::kLeading) {
      Log("became leader");
      Call(on_started_leading_, "on_started_leading");
      leading_.store(true);  // IsLeader() holds only between the two callbacks
      Lead();
      if (stop_.requested()) break;
    }
    if (!stop_.SleepFor(options_.retry_period)) break;
  }
  if (leading_.load()) {
    Release();
    StepDown();
  }
}

void LeaderElector::Lead() {
  Clock::time_point renewed = Clock::now();
  while (stop_.SleepFor(options_.retry_period)) {
    const Clock::time_point deadline = renewed + options_.renew_deadline;
    const Attempt attempt =
        TryAcquireOrRenew([&] { return stop_.requested() || Clock::now() >= deadline; });
    if (stop_.requested()) return;
    if (attempt == Attempt::kLeading) {
      renewed = Clock::now();
      continue;
    }
    if (attempt == Attempt::kHeldByOther || Clock::now() >= deadline) {
      Log(attempt == Attempt::kHeldByOther ? "another holder took the lease; stepping down"
                                           : "could not renew within the renew deadline; "
                                             "stepping down");
      StepDown();
      return;
    }
  }
}

void LeaderElector::StepDown() {
  leading_.store(false);
  Call(on_stopped_leading_, "on_stopped_leading");
}

void LeaderElector::Observe(const Json& lease) {
  Record record{StringAt(lease, {"spec", "holderIdentity"}), StringAt(lease, {"spec", "renewTime"}),
                StringAt(lease, {"metadata", "resourceVersion"})};
  if (record != observed_) {
    observed_ = std::move(record);
    observed_at_ = Clock::now();
  }
}

LeaderElector::Attempt LeaderElector::TryAcquireOrRenew(const std::function<bool()>& should_stop) {
  Response got = client_.Send({"GET", LeasePath(), "", ""}, should_stop);
  if (got.status == 404) return Create(should_stop);
  if (!got.ok()) {
    if (!got.cancelled) Log("get lease: " + got.Describe());
    return Attempt::kFailed;
  }
  Json lease = Json::parse(got.body, nullptr, /*allow_exceptions=*/false);
  if (!lease.is_object()) {
    Log("get lease: the response is not a JSON object");
    return Attempt::kFailed;
  }
  Observe(lease);
  const bool held_by_other = !observed_.holder.empty() && observed_.holder != options_.identity;
  if (held_by_other && Clock::now() < observed_at_ + options_.lease_duration) {
    return Attempt::kHeldByOther;
  }
  return Update(std::move(lease), observed_, should_stop);
}

LeaderElector::Attempt LeaderElector::Create(const std::function<bool()>& should_stop) {
  const std::string now = FormatMicroTime(std::chrono::system_clock::now());
  const Json lease = {
      {"apiVersion", "coordination.k8s.io/v1"},
      {"kind", "Lease"},
      {"metadata", {{"name", options_.lease_name}, {"namespace", options_.lease_namespace}}},
      {"spec",
       {{"holderIdentity", options_.identity},
        {"leaseDurationSeconds", LeaseSeconds(options_.lease_duration)},
        {"acquireTime", now},
        {"renewTime", now},
        {"leaseTransitions", 0}}}};
  const std::string collection = "/apis/coordination.k8s.io/v1/namespaces/" +
                                 EscapeUrlComponent(options_.lease_namespace) + "/leases";
  Response created =
      client_.Send({"POST", collection, ToJsonText(lease), "application/json"}, should_stop);
  if (!created.ok()) {
    // 409: another candidate created it first; the next attempt reads theirs.
    if (!created.cancelled) Log("create lease: " + created.Describe());
    return Attempt::kFailed;
  }
  Json stored = Json::parse(created.body, nullptr, /*allow_exceptions=*/false);
  Observe(stored.is_object() ? stored : lease);
  return Attempt::kLeading;
}

LeaderElector::Attempt LeaderElector::Update(Json lease, const Record& record,
                                             const std::function<bool()>& should_stop) {
  const std::string now = FormatMicroTime(std::chrono::system_clock::now());
  if (!lease["spec"].is_object()) lease["spec"] = Json::object();
  Json& spec = lease["spec"];
  if (record.holder != options_.identity) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = IntAt(spec, "leaseTransitions") + 1;
  }
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] = LeaseSeconds(options_.lease_duration);
  spec["renewTime"] = now;
  // The PUT carries the resourceVersion we read: if anyone wrote in between, it fails with 409.
  Response put =
      client_.Send({"PUT", LeasePath(), ToJsonText(lease), "application/json"}, should_stop);
  if (!put.ok()) {
    if (!put.cancelled) {
      Log(put.status == 409 ? "lost the race to update the lease"
                            : "update lease: " + put.Describe());
    }
    return Attempt::kFailed;
  }
  Json stored = Json::parse(put.body, nullptr, /*allow_exceptions=*/false);
  Observe(stored.is_object() ? stored : lease);
  return Attempt::kLeading;
}

void LeaderElector::Release() {
  // Reads the lease afresh: a renewal cancelled by Stop() may have reached the server anyway,
  // leaving our copy's resourceVersion stale.
  const Clock::time_point deadline = Clock::now() + options_.renew_deadline;
  const auto give_up = [&] { return Clock::now() >= deadline; };
  for (int attempt = 0; attempt < 3 && !give_up(); ++attempt) {
    Response got = client_.Send({"GET", LeasePath(), "", ""}, give_up);
    if (!got.ok()) {
      Log("release lease: " + got.Describe());
      return;
    }
    Json lease = Json::parse(got.body, nullptr, /*allow_exceptions=*/false);
    if (!lease.is_object() || StringAt(lease, {"spec", "holderIdentity"}) != options_.identity) {
      return;  // no longer ours
    }
    Json& spec = lease["spec"];
    const std::string now = FormatMicroTime(std::chrono::system_clock::now());
    spec["holderIdentity"] = "";
    spec["leaseDurationSeconds"] = 1;
    spec["acquireTime"] = now;
    spec["renewTime"] = now;
    Response put =
        client_.Send({"PUT", LeasePath(), ToJsonText(lease), "application/json"}, give_up);
    if (put.ok()) return;
    if (put.status != 409) {
      Log("release lease: " + put.Describe());
      return;
    }
  }
}

}  // namespace tessera::kube
