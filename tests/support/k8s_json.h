#pragma once

// v1.Pod / v1.Node JSON from the model, as the API server and kube-scheduler send them.

#include <nlohmann/json.hpp>
#include <string>

#include "core/model/pod.h"

namespace tessera::testing {

inline nlohmann::json ContainerJson(const model::Container& c) {
  nlohmann::json j = {{"name", c.name}, {"image", "cuda"}};
  nlohmann::json resources = nlohmann::json::object();
  if (!c.limits.empty()) resources["limits"] = c.limits;
  if (!c.requests.empty()) resources["requests"] = c.requests;
  j["resources"] = resources;
  if (c.privileged) j["securityContext"] = {{"privileged", true}};
  return j;
}

inline nlohmann::json PodJson(const model::Pod& pod) {
  nlohmann::json meta = {{"name", pod.name}, {"namespace", pod.ns}, {"uid", pod.uid}};
  if (!pod.resource_version.empty()) meta["resourceVersion"] = pod.resource_version;
  if (!pod.annotations.empty()) meta["annotations"] = pod.annotations;
  if (!pod.labels.empty()) meta["labels"] = pod.labels;
  if (pod.deleting) meta["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  if (!pod.controller_kind.empty()) {
    meta["ownerReferences"] = nlohmann::json::array({{{"kind", pod.controller_kind},
                                                      {"name", "owner"},
                                                      {"uid", pod.controller_uid},
                                                      {"controller", true}}});
  }
  nlohmann::json spec = {{"containers", nlohmann::json::array()}};
  for (const auto& c : pod.containers) spec["containers"].push_back(ContainerJson(c));
  if (!pod.init_containers.empty()) {
    spec["initContainers"] = nlohmann::json::array();
    for (const auto& c : pod.init_containers) spec["initContainers"].push_back(ContainerJson(c));
  }
  if (!pod.node_name.empty()) spec["nodeName"] = pod.node_name;
  if (!pod.scheduler_name.empty()) spec["schedulerName"] = pod.scheduler_name;
  if (pod.priority != 0) spec["priority"] = pod.priority;
  nlohmann::json out = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", meta}, {"spec", spec}};
  out["status"] = {{"phase", pod.phase.empty() ? "Pending" : pod.phase}};
  return out;
}

inline nlohmann::json NodeJson(const model::Node& node) {
  nlohmann::json meta = {{"name", node.name}};
  if (!node.resource_version.empty()) meta["resourceVersion"] = node.resource_version;
  if (!node.annotations.empty()) meta["annotations"] = node.annotations;
  if (!node.labels.empty()) meta["labels"] = node.labels;
  nlohmann::json out = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", meta}};
  if (!node.allocatable.empty()) out["status"] = {{"allocatable", node.allocatable}};
  return out;
}

}  // namespace tessera::testing
