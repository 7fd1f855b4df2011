#pragma once

// An in-memory NodeApi: pods and one node, merge patches with resource versions (409 on a
// stale one, or injected), recorded events, the pod view's freshness, and direct reads of one
// pod from "the API server" (which may hold other pods than the view).

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "agent/node_api.h"

namespace tessera::testing {

class FakeNodeApi : public agent::NodeApi {
 public:
  std::vector<model::Pod> pods;
  model::Node node;
  std::vector<std::string> events;       // "<pod> <reason>: <message>"
  std::vector<std::string> node_events;  // "<reason>: <message>"
  std::vector<std::string> failed;       // "<pod> <reason>: <message>"
  int conflicts_to_inject = 0;
  int patches = 0;

  // The view's freshness (ms since the epoch); unset: fresh at the moment it is asked.
  std::optional<int64_t> fresh_ms;
  // The pods ReadPod finds, as the API server holds them now; unset: the same as `pods`.
  std::optional<std::vector<model::Pod>> server_pods;
  std::optional<Error> read_failure;  // set: every ReadPod fails with it
  std::vector<std::string> reads;     // "<namespace>/<name>" of each ReadPod

  // What the informer's cache shows (unset: `pods`), and how often the pods were listed.
  std::optional<std::vector<model::Pod>> cached_pods;
  int cache_reads = 0;
  int fresh_lists = 0;

  agent::ApiResult<std::vector<model::Pod>> PodsOnNode(bool fresh) override {
    ++(fresh ? fresh_lists : cache_reads);
    return fresh ? pods : cached_pods.value_or(pods);
  }
  agent::ApiResult<agent::PodView> PodViewOnNode() override {
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    return agent::PodView{pods, fresh_ms.value_or(now)};
  }
  // Set: GetNode and PatchNode fail with it. Counted: reads and patches of the node.
  std::optional<Error> node_failure;
  int node_reads = 0;
  int node_patches = 0;
  std::vector<bool> node_event_warnings;  // per node_events entry

  agent::ApiResult<model::Node> GetNode() override {
    ++node_reads;
    if (node_failure) return *node_failure;
    return node;
  }
  agent::ApiResult<std::optional<model::Pod>> ReadPod(const std::string& ns,
                                                      const std::string& name) override {
    reads.push_back(ns + "/" + name);
    if (read_failure) return *read_failure;
    std::optional<model::Pod> read;  // NotFound unless a pod has the name
    for (const auto& p : server_pods.value_or(pods)) {
      if (p.ns == ns && p.name == name) read.emplace(p);
    }
    return read;
  }

  agent::ApiResult<model::Pod> PatchPod(const model::Pod& pod, const agent::AnnotationPatch& patch,
                                        const std::string& rv) override {
    ++patches;
    auto it =
        std::find_if(pods.begin(), pods.end(), [&](const auto& p) { return p.uid == pod.uid; });
    if (it == pods.end()) return agent::ApiFailure(404, "pod not found");
    if (!rv.empty() && (conflicts_to_inject > 0 || rv != it->resource_version)) {
      if (conflicts_to_inject > 0) {
        --conflicts_to_inject;
        it->resource_version = std::to_string(std::stoi(it->resource_version) + 1);
      }
      return agent::ApiFailure(409, "the object has been modified");
    }
    for (const auto& [k, v] : patch) {
      if (v) {
        it->annotations[k] = *v;
      } else {
        it->annotations.erase(k);
      }
    }
    it->resource_version = std::to_string(std::stoi(it->resource_version) + 1);
    return *it;
  }
  agent::ApiResult<model::Node> PatchNode(const agent::AnnotationPatch& patch,
                                          const std::string&) override {
    if (node_failure) return *node_failure;
    ++node_patches;
    for (const auto& [k, v] : patch) {
      if (v) {
        node.annotations[k] = *v;
      } else {
        node.annotations.erase(k);
      }
    }
    return node;
  }
  void PodEvent(const model::Pod& pod, const std::string& reason, const std::string& message,
                bool) override {
    events.push_back(pod.Key() + " " + reason + ": " + message);
  }
  agent::ApiResult<model::Pod> FailPod(const model::Pod& pod, const std::string& reason,
                                       const std::string& message) override {
    for (auto& p : pods) {
      if (p.uid != pod.uid) continue;
      p.phase = "Failed";
      failed.push_back(p.Key() + " " + reason + ": " + message);
      return p;
    }
    return agent::ApiFailure(409, "pod " + pod.Key() + ": uid precondition failed");
  }
  void NodeEvent(const std::string& reason, const std::string& message, bool warning) override {
    node_events.push_back(reason + ": " + message);
    node_event_warnings.push_back(warning);
  }
  const model::Pod& Pod(const std::string& name) const {
    return *std::find_if(pods.begin(), pods.end(), [&](const auto& p) { return p.name == name; });
  }
};

}  // namespace tessera::testing
