#include "app/defrag_execute.h"

#include <chrono>
#include <map>
#include <optional>
#include <ostream>
#include <thread>
#include <vector>

#include "adapters/kube/events.h"
#include "adapters/kube/object_writes.h"
#include "adapters/kube/time_format.h"
#include "adapters/kube/url.h"
#include "app/cluster_snapshot.h"
#include "core/codec/json_util.h"
#include "core/model/annotations.h"

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

// The pods of namespace `ns` whose controlling owner is `owner`, bound and not terminating:
// their node by uid.
Result<std::map<std::string, std::string>> BoundPodsOf(kube::Client& client, const std::string& ns,
                                                       const std::string& owner) {
  auto pods = ListItems(client, "/api/v1/namespaces/" + kube::EscapeUrlComponent(ns) + "/pods");
  if (!pods.ok()) return pods.error();
  std::map<std::string, std::string> bound;
  for (const Json& pod : *pods) {
    PodFacts facts = FactsOf(pod);
    if (facts.controller_uid == owner && !facts.node.empty() && !facts.deleting) {
      bound.emplace(std::move(facts.uid), std::move(facts.node));
    }
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

// An evicted pod, as read before its eviction, with its controller's bound pods then.
struct Evictee {
  PodName name;
  PodFacts facts;
  std::map<std::string, std::string> owner_bound_before;  // node by pod uid
};

// Reads the pod of `step` and its controller's bound pods; an error when it is no longer where
// the plan found it.
Result<Evictee> ReadEvictee(kube::Client& client, const sched::DefragStep& step) {
  Evictee e{SplitKey(step.pod), {}, {}};
  auto facts = ReadPod(client, e.name);
  if (!facts.ok()) return facts.error();
  e.facts = *facts;
  if (e.facts.node != step.node || e.facts.deleting) {
    return Error{"stopped before evicting " + step.pod +
                 ": it is no longer where the plan found it"};
  }
  auto bound = BoundPodsOf(client, e.name.ns, e.facts.controller_uid);
  if (!bound.ok()) return bound.error();
  e.owner_bound_before = std::move(*bound);
  return e;
}

// Writes where the pod's replacement belongs (serve places the controller's next pod there,
// docs/defrag.md), then evicts it and records an Event saying why.
Status MarkAndEvict(kube::Client& client, const Evictee& e, const sched::DefragStep& step,
                    const std::string& why, const DefragExecution& options, std::ostream& out) {
  const Json marks{
      {"uid", e.facts.uid},
      {"annotations", {{std::string(model::annotations::kDefragMovingTo), step.replaced_node}}}};
  if (auto patched = kube::MergePatchPodMetadata(client, e.name.ns, e.name.name, marks, "");
      !patched.ok()) {
    return patched.error();
  }
  if (Status s =
          kube::EvictPod(client, e.name.ns, e.name.name, e.facts.uid, options.grace_period_seconds);
      !s.ok()) {
    return s;
  }
  out << "evicted " << step.pod << " from node " << step.node << " (expected back on node "
      << step.replaced_node << ")\n";
  Record(client, e.name, e.facts.uid, false, kDefragEvictedReason,
         "evicted by tessera defrag " + why + "; expected to be placed again on node " +
             step.replaced_node,
         out);
  return Status::Ok();
}

// A pod of the evictee's controller bound since its eviction, and not before: its replacement.
struct Replacement {
  std::string uid;
  std::string node;
};
std::optional<Replacement> ReplacementOf(const Evictee& e,
                                         const std::map<std::string, std::string>& bound_now) {
  if (bound_now.size() < e.owner_bound_before.size()) return std::nullopt;
  for (const auto& [uid, node] : bound_now) {
    if (!e.owner_bound_before.contains(uid)) return Replacement{uid, node};
  }
  return std::nullopt;
}

std::string Seconds(std::chrono::milliseconds d) { return std::to_string(d.count() / 1000); }

// The outcome so far, stopped for `why`.
DefragOutcome Stopped(DefragOutcome outcome, std::string why) {
  outcome.stopped = std::move(why);
  return outcome;
}

// Why a run stops at an error: as it says when it says so itself.
std::string StopReason(const Error& error) {
  return error.message.rfind("stopped", 0) == 0 ? error.message : "stopped: " + error.message;
}

// Mode (b): each step evicts one pod and delivers when its replacement is bound on the planned
// node (the move is what raises placeability).
DefragOutcome ExecuteMoves(kube::Client& client, const sched::DefragPlan& plan,
                           const DefragExecution& options, std::ostream& out) {
  DefragOutcome outcome;
  auto stop = [&outcome](std::string why) { return Stopped(outcome, std::move(why)); };
  for (const sched::DefragStep& step : plan.steps) {
    auto evictee = ReadEvictee(client, step);
    if (!evictee.ok()) return stop(StopReason(evictee.error()));
    const Evictee& e = *evictee;
    if (Status s = MarkAndEvict(client, e, step, "to raise placeability", options, out); !s.ok()) {
      return stop("stopped: " + s.message());
    }
    ++outcome.evictions;
    const auto deadline = std::chrono::steady_clock::now() + options.step_timeout;
    std::optional<Replacement> replacement;
    for (;;) {
      auto bound = BoundPodsOf(client, e.name.ns, e.facts.controller_uid);
      if (bound.ok()) replacement = ReplacementOf(e, *bound);
      if (replacement) break;
      if (options.should_stop && options.should_stop()) {
        return stop("stopped: shutting down while the move of " + step.pod + " waited");
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return stop("stopped: the move of " + step.pod + " did not deliver within " +
                    Seconds(options.step_timeout) + " s: no replacement bound yet");
      }
      std::this_thread::sleep_for(options.poll);
    }
    if (replacement->node != step.replaced_node) {
      return stop("stopped: the replacement of " + step.pod + " was bound to node " +
                  replacement->node + ", not node " + step.replaced_node + " as planned");
    }
    ++outcome.moved;
    out << "moved " << step.pod << " from node " << step.node << " to node " << step.replaced_node
        << "\n";
  }
  return outcome;
}

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
  auto stop = [&outcome](std::string why) { return Stopped(outcome, std::move(why)); };
  if (plan.mode == sched::DefragPlan::Mode::kNothing) {
    out << "nothing executed: this plan has no step\n";
    return outcome;
  }
  if (plan.mode == sched::DefragPlan::Mode::kRaisePlaceability) {
    return ExecuteMoves(client, plan, options, out);
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
      const sched::DefragStep* step = step_of[key];
      if (step == nullptr) return stop("stopped: the plan has no step for " + key);
      auto evictee = ReadEvictee(client, *step);
      if (!evictee.ok()) return stop(StopReason(evictee.error()));
      evictees.push_back(std::move(*evictee));
    }
    if (Status s =
            kube::NominatePod(client, pending.ns, pending.name, pending_facts->uid, admitted.node);
        !s.ok()) {
      return stop("stopped: " + s.message());
    }
    out << "nominated " << admitted.pod << " to node " << admitted.node << "\n";
    for (const Evictee& e : evictees) {
      const sched::DefragStep& step = *step_of[e.name.ns + "/" + e.name.name];
      if (Status s = MarkAndEvict(client, e, step,
                                  "to make room for " + admitted.pod + " on node " + admitted.node,
                                  options, out);
          !s.ok()) {
        return stop("stopped: " + s.message());
      }
      ++outcome.evictions;
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
        if (!bound.ok() || bound->size() < e.owner_bound_before.size()) {
          done = false;
          last = "the controller of " + e.name.ns + "/" + e.name.name + " has " +
                 (bound.ok() ? std::to_string(bound->size()) : "?") + " of " +
                 std::to_string(e.owner_bound_before.size()) + " pods bound";
        }
      }
      if (!now_facts.ok() || now_facts->node.empty()) last = admitted.pod + " is not bound yet";
      if (done) break;
      if (options.should_stop && options.should_stop()) {
        return stop("stopped: shutting down while the step for " + admitted.pod + " waited");
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        return stop("stopped: the step for " + admitted.pod + " did not deliver within " +
                    Seconds(options.step_timeout) + " s: " + last);
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
