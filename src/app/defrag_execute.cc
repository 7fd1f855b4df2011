#include "app/defrag_execute.h"

#include <chrono>
#include <map>
#include <ostream>
#include <thread>
#include <vector>

#include "adapters/kube/events.h"
#include "adapters/kube/object_writes.h"
#include "adapters/kube/time_format.h"
#include "adapters/kube/url.h"
#include "app/cluster_snapshot.h"
#include "core/codec/json_util.h"

namespace tessera::app {
namespace {

using codec::Json;

struct PodName {
  std::string ns;
  std::string name;
};

PodName SplitKey(const std::string& key) {
  const size_t slash = key.find('/');
  return {key.substr(0, slash), key.substr(slash + 1)};
}

std::string Text(const Json& object, std::initializer_list<const char*> path) {
  const Json* at = &object;
  for (const char* key : path) {
    at = codec::FindKey(*at, key);
    if (at == nullptr) return "";
  }
  return at->is_string() ? at->get<std::string>() : "";
}

// What the executor reads of a pod: its uid, node, whether it is terminating, and the uid of its
// controlling owner.
struct PodFacts {
  std::string uid;
  std::string node;
  bool deleting = false;
  std::string controller_uid;
};

PodFacts FactsOf(const Json& pod) {
  PodFacts facts{Text(pod, {"metadata", "uid"}), Text(pod, {"spec", "nodeName"}),
                 codec::FindKey(pod, "metadata") != nullptr &&
                     codec::FindKey(pod["metadata"], "deletionTimestamp") != nullptr &&
                     !pod["metadata"]["deletionTimestamp"].is_null(),
                 ""};
  const Json* owners = codec::FindKey(pod, "metadata") != nullptr
                           ? codec::FindKey(pod["metadata"], "ownerReferences")
                           : nullptr;
  if (owners != nullptr && owners->is_array()) {
    for (const Json& owner : *owners) {
      const Json* controller = codec::FindKey(owner, "controller");
      if (controller != nullptr && controller->is_boolean() && controller->get<bool>()) {
        facts.controller_uid = Text(owner, {"uid"});
      }
    }
  }
  return facts;
}

Result<PodFacts> ReadPod(kube::Client& client, const PodName& pod) {
  const std::string path = kube::PodPath(pod.ns, pod.name);
  kube::Response r = client.Get(path);
  if (!r.ok()) return r.ToError("read pod " + pod.ns + "/" + pod.name);
  auto json = codec::ParseJson(r.body, "pod " + pod.ns + "/" + pod.name);
  if (!json.ok()) return json.error();
  return FactsOf(*json);
}

// The pods of namespace `ns` whose controlling owner is `owner`, bound and not terminating.
Result<int> BoundPodsOf(kube::Client& client, const std::string& ns, const std::string& owner) {
  auto pods = ListItems(client, "/api/v1/namespaces/" + kube::EscapeUrlComponent(ns) + "/pods");
  if (!pods.ok()) return pods.error();
  int bound = 0;
  for (const Json& pod : *pods) {
    const PodFacts facts = FactsOf(pod);
    if (facts.controller_uid == owner && !facts.node.empty() && !facts.deleting) ++bound;
  }
  return bound;
}

void Record(kube::Client& client, const PodName& pod, const std::string& uid, bool warning,
            const std::string& reason, const std::string& message, std::ostream& out) {
  kube::EventSpec event = kube::PodEvent(pod.ns, pod.name, uid, warning, reason, message);
  event.reporting_component = "tessera-defrag";
  if (Status s = kube::CreateEvent(client, event); !s.ok()) {
    out << "  (event not recorded: " << s.message() << ")\n";
  }
}

// An evicted pod, as read before its eviction.
struct Evictee {
  PodName name;
  PodFacts facts;
  int owner_bound_before = 0;
};

}  // namespace

Result<int> EvictionsInTheLastHour(kube::Client& client) {
  auto events = ListItems(
      client, std::string("/api/v1/events?fieldSelector=reason%3D") + kDefragEvictedReason);
  if (!events.ok()) return events.error();
  const std::string hour_ago =
      kube::FormatTime(std::chrono::system_clock::now() - std::chrono::hours(1));
  int count = 0;
  for (const Json& event : *events) {
    // metav1.Time text sorts as the time does.
    if (Text(event, {"lastTimestamp"}) >= hour_ago) ++count;
  }
  return count;
}

DefragOutcome ExecuteDefragPlan(kube::Client& client, const sched::DefragPlan& plan,
                                const DefragExecution& options, std::ostream& out) {
  DefragOutcome outcome;
  auto stop = [&outcome](std::string why) {
    outcome.stopped = std::move(why);
    return outcome;
  };
  if (plan.mode != sched::DefragPlan::Mode::kAdmitPending) {
    out << "nothing executed: only plans that admit pending pods are carried out ("
        << (plan.mode == sched::DefragPlan::Mode::kNothing ? "this plan has no step"
                                                           : "moves that only raise placeability "
                                                             "are a dry run")
        << ")\n";
    return outcome;
  }
  std::map<std::string, const sched::DefragStep*> step_of;
  for (const auto& step : plan.steps) step_of[step.pod] = &step;
  for (const sched::AdmittedPod& admitted : plan.admitted) {
    if (admitted.evicted.empty()) continue;  // fits with earlier steps done: kube-scheduler's
    const PodName pending = SplitKey(admitted.pod);
    auto pending_facts = ReadPod(client, pending);
    if (!pending_facts.ok()) return stop("stopped: " + pending_facts.error().message);
    if (!pending_facts->node.empty() || pending_facts->deleting) {
      return stop("stopped before evicting for " + admitted.pod +
                  ": it is no longer pending (the plan is stale)");
    }
    std::vector<Evictee> evictees;
    for (const std::string& key : admitted.evicted) {
      Evictee e{SplitKey(key), {}, 0};
      auto facts = ReadPod(client, e.name);
      if (!facts.ok()) return stop("stopped: " + facts.error().message);
      e.facts = *facts;
      const sched::DefragStep* step = step_of[key];
      if (step == nullptr || e.facts.node != step->node || e.facts.deleting) {
        return stop("stopped before evicting " + key + ": it is no longer where the plan found it");
      }
      auto bound = BoundPodsOf(client, e.name.ns, e.facts.controller_uid);
      if (!bound.ok()) return stop("stopped: " + bound.error().message);
      e.owner_bound_before = *bound;
      evictees.push_back(std::move(e));
    }
    if (Status s =
            kube::NominatePod(client, pending.ns, pending.name, pending_facts->uid, admitted.node);
        !s.ok()) {
      return stop("stopped: " + s.message());
    }
    out << "nominated " << admitted.pod << " to node " << admitted.node << "\n";
    for (const Evictee& e : evictees) {
      const std::string key = e.name.ns + "/" + e.name.name;
      if (Status s = kube::EvictPod(client, e.name.ns, e.name.name, e.facts.uid,
                                    options.grace_period_seconds);
          !s.ok()) {
        return stop("stopped: " + s.message());
      }
      ++outcome.evictions;
      const sched::DefragStep& step = *step_of[key];
      out << "evicted " << key << " from node " << step.node << " (expected back on node "
          << step.replaced_node << ")\n";
      Record(client, e.name, e.facts.uid, false, kDefragEvictedReason,
             "evicted by tessera defrag to make room for " + admitted.pod + " on node " +
                 admitted.node + "; expected to be placed again on node " + step.replaced_node,
             out);
    }
    // Delivered: the pending pod bound on the planned node, and every evicted pod's controller
    // with as many pods bound as before.
    const auto deadline = std::chrono::steady_clock::now() + options.step_timeout;
    std::string last;
    for (;;) {
      auto now_facts = ReadPod(client, pending);
      bool done = now_facts.ok() && !now_facts->node.empty();
      if (done && now_facts->node != admitted.node) {
        Record(client, pending, pending_facts->uid, true, kDefragAdmittedReason,
               "tessera defrag made room on node " + admitted.node + " but the pod was bound to " +
                   now_facts->node,
               out);
        return stop("stopped: " + admitted.pod + " was bound to node " + now_facts->node +
                    ", not node " + admitted.node + " as planned");
      }
      for (const Evictee& e : evictees) {
        auto bound = BoundPodsOf(client, e.name.ns, e.facts.controller_uid);
        if (!bound.ok() || *bound < e.owner_bound_before) {
          done = false;
          last = "the controller of " + e.name.ns + "/" + e.name.name + " has " +
                 (bound.ok() ? std::to_string(*bound) : "?") + " of " +
                 std::to_string(e.owner_bound_before) + " pods bound";
        }
      }
      if (!now_facts.ok() || now_facts->node.empty()) last = admitted.pod + " is not bound yet";
      if (done) break;
      if (options.should_stop && options.should_stop()) {
        return stop("stopped: shutting down while the step for " + admitted.pod + " waited");
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return stop("stopped: the step for " + admitted.pod + " did not deliver within " +
                    std::to_string(options.step_timeout.count() / 1000) + " s: " + last);
      }
      std::this_thread::sleep_for(options.poll);
    }
    ++outcome.admitted;
    std::string names;
    for (const std::string& key : admitted.evicted) names += (names.empty() ? "" : ", ") + key;
    out << "admitted " << admitted.pod << " on node " << admitted.node << "; " << names
        << " placed again\n";
    Record(client, pending, pending_facts->uid, false, kDefragAdmittedReason,
           "bound on node " + admitted.node + " after tessera defrag evicted " + names, out);
  }
  return outcome;
}

}  // namespace tessera::app
