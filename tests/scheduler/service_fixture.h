#pragma once

// The scheduler's test fixture: a SchedulerService (the cluster view and its front ends) over a
// recording ClusterWriter and a manual clock, with helpers that speak the extender's JSON.

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "scheduler/scheduler_service.h"
#include "support/builders.h"
#include "support/k8s_json.h"

namespace tessera::scheduler::testing_support {

using codec::Json;
using testing::NodeJson;
using testing::PodJson;

// Records what the scheduler writes; can be told to fail.
class FakeWriter : public ClusterWriter {
 public:
  Status PatchPodAnnotations(const PodRef& pod, const AnnotationChanges& changes) override {
    std::lock_guard lock(mu);
    ++patches;
    if (fail_patch) return Error{"injected patch failure"};
    for (const auto& [k, v] : changes) {
      if (v) {
        annotations[pod.Key()][k] = *v;
      } else {
        annotations[pod.Key()].erase(k);
      }
    }
    return Status::Ok();
  }
  Status BindPod(const PodRef& pod, const std::string& node,
                 const BindingAnnotations& with) override {
    std::lock_guard lock(mu);
    ++bindings;
    if (fail_bind) return Error{"injected bind failure"};
    bound[pod.Key()] = node;
    for (const auto& [k, v] : with) annotations[pod.Key()][k] = v;  // as the API server does
    return Status::Ok();
  }
  void RecordEvent(const PodRef& pod, bool warning, const std::string& reason,
                   const std::string& message) override {
    std::lock_guard lock(mu);
    events.push_back(pod.Key() + " " + (warning ? "Warning " : "Normal ") + reason + ": " +
                     message);
  }
  Status LockNode(const std::string& node, const PodRef&) override {
    std::lock_guard lock(mu);
    locks.push_back(node);
    return Status::Ok();
  }
  Status UnlockNode(const std::string&, const PodRef&) override { return Status::Ok(); }

  std::mutex mu;
  bool fail_patch = false;
  bool fail_bind = false;
  int patches = 0;
  int bindings = 0;
  std::map<std::string, std::map<std::string, std::string>> annotations;
  std::map<std::string, std::string> bound;
  std::vector<std::string> events;
  std::vector<std::string> locks;
};

struct ManualClock {
  std::chrono::steady_clock::time_point now{};
};

class ServiceTest : public ::testing::Test {
 protected:
  ServiceTest() {
    options.reservation_timeout = std::chrono::seconds(30);
    options.ready_wait = std::chrono::milliseconds(20);
    clocks.steady = [this] { return clock.now; };
    clocks.unix_seconds = [] { return int64_t{1767225600}; };
  }

  SchedulerService& Make() {
    service =
        std::make_unique<SchedulerService>(config::SchedulerConfig{}, options, writer, clocks);
    return *service;
  }

  // A scheduler over these nodes, listed and ready.
  SchedulerService& MakeSynced(const std::vector<model::Node>& nodes) {
    auto& s = Make();
    std::vector<Json> objects;
    for (const auto& n : nodes) objects.push_back(NodeJson(n));
    s.view.ReplaceNodes(objects);
    s.view.SetSynced(true);
    return s;
  }

  static std::string FilterBody(const model::Pod& pod, const std::vector<std::string>& nodes) {
    return Json{{"Pod", PodJson(pod)}, {"Nodes", nullptr}, {"NodeNames", nodes}}.dump();
  }
  static std::string BindBody(const model::Pod& pod, const std::string& node) {
    return Json{
        {"PodName", pod.name}, {"PodNamespace", pod.ns}, {"PodUID", pod.uid}, {"Node", node}}
        .dump();
  }

  Json Filter(const model::Pod& pod, const std::vector<std::string>& nodes) {
    return Json::parse(service->verbs.Filter(FilterBody(pod, nodes)));
  }
  std::string Bind(const model::Pod& pod, const std::string& node) {
    return Json::parse(service->verbs.Bind(BindBody(pod, node)))["Error"].get<std::string>();
  }
  bool Holds(const std::string& key) {
    bool held = false;
    service->view.WithState([&](const state::ClusterState& s) { held = s.pod(key) != nullptr; });
    return held;
  }

  ServiceOptions options;
  ServiceClocks clocks;
  ManualClock clock;
  FakeWriter writer;
  std::unique_ptr<SchedulerService> service;
};

inline Json QuotaJson(const std::string& ns, const std::string& name, const Json& hard) {
  return Json{{"apiVersion", "v1"},
              {"kind", "ResourceQuota"},
              {"metadata", {{"name", name}, {"namespace", ns}}},
              {"spec", {{"hard", hard}}}};
}

inline Json ReviewJson(const std::string& ns, const model::Pod& pod) {
  Json object = PodJson(pod);
  object["metadata"].erase("namespace");  // on CREATE the object may not say; the request does
  return Json{
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request", {{"uid", "u1"}, {"operation", "CREATE"}, {"namespace", ns}, {"object", object}}}};
}

}  // namespace tessera::scheduler::testing_support
