#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "core/common/task_runner.h"
#include "core/extender/admission_review.h"
#include "core/sched/scheduler.h"
#include "scheduler/filter_only_pods.h"

namespace tessera::scheduler {

// How `tessera serve` runs the scheduler (its flags): read by the cluster view and its front
// ends alike, fixed once they are built.
struct ServiceOptions {
  sched::PolicyDefaults policy;
  extender::WebhookOptions webhook;
  // A reservation made by filter that no bind confirms within this time is released.
  std::chrono::milliseconds reservation_timeout{std::chrono::seconds(60)};
  // How long filter waits for the first sync before answering with an Error.
  std::chrono::milliseconds ready_wait{std::chrono::seconds(10)};
  bool hami_node_lock = false;
  // --node-lock-timeout: a node lock held this long counts as stale (NodeLocks).
  std::chrono::seconds node_lock_timeout{300};
  // Where the placement annotations are written. In bind (the default) filter answers from
  // memory and one merge patch carries placement and bind-phase together, taking an API round
  // trip off kube-scheduler's one-pod-at-a-time cycle; a restart (or a new leader) between filter
  // and bind is met by the bind placing the pod on its node itself (ClusterView::StartBind). In
  // filter (HAMi's behaviour) the pod carries its placement from its filter on (docs/serve.md).
  bool write_placement_in_bind = true;
  // --node-label-selector (key=value,...): only matching nodes are registered; the others fail
  // with "node unregistered", as in HAMi's register loop. Empty: every node.
  std::map<std::string, std::string> node_selector{};
  // A registered node whose allocatable GPU count (nvidia.com/gpu) has been 0 this long gets no
  // new GPU pods (its device plugin is gone, hami-protocol.md 9). Zero turns the check off.
  std::chrono::seconds node_liveness_grace{60};
  // --requeue-after: a pod the filter placed nowhere is asked about again by kube-scheduler after
  // any cluster event, but kube-scheduler may see the event first and ask while this view still
  // holds the departed pod, and some changes it never sees (a quota raised, a reservation
  // expired, a node live again). A waiting pod refused before such a change, not filtered since
  // for this long, that now fits on a node of its last filter, gets tessera.io/requeued-at: an
  // update kube-scheduler answers by trying it again. Zero turns it off. Short: kube-scheduler
  // retries a pod within tens of milliseconds of an event it sees (docs/performance.md), so a
  // pod not filtered half a second after the change is one it missed.
  std::chrono::milliseconds requeue_after{500};
  // Single-node fits one /preempt request may spend over all its candidate nodes (each costs
  // about 25 us): kube-scheduler sends up to max(100, 10% of the nodes) candidates, and each may
  // take a few hundred fits. Nodes past it are dropped, never answered with kube-scheduler's
  // GPU-blind victims.
  int preempt_fit_budget = 8192;
  // The most waiting pods one requeue pass evaluates (each is a filter without reasons); passes
  // run four times a second.
  size_t requeue_batch = 8;
  // Threads for the filter phase (--filter-threads); nullptr: the request's own thread. Must
  // outlive the cluster view.
  TaskRunner* filter_runner = nullptr;
  // Pods only filter requests named (the cluster feed has not shown them) are remembered until
  // no filter has named them for reservation_timeout, and at most this many, the least recently
  // named forgotten first (docs/serve.md, "Limits").
  size_t max_filter_only_pods = FilterOnlyPods::kDefaultMaxPods;
};

// Clocks are injectable so that tests can drive reservation expiry.
struct ServiceClocks {
  std::function<std::chrono::steady_clock::time_point()> steady = [] {
    return std::chrono::steady_clock::now();
  };
  std::function<int64_t()> unix_seconds = [] {
    return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
  };
};

}  // namespace tessera::scheduler
