#include <nlohmann/json.hpp>

#include "core/sched/node_status.h"
#include "sim/report.h"

namespace tessera::sim {
namespace {

using OJson = nlohmann::ordered_json;

OJson PlacementJson(const model::Placement& p) {
  return OJson{{"start", p.start}, {"size", p.size}};
}

}  // namespace

std::string StepJson(const StepResult& r) {
  OJson j;
  j["step"] = r.step;
  j["action"] = r.action;
  if (r.action == "node") {
    j["node"] = r.node;
    if (!r.node_unusable.empty()) j["unusable"] = r.node_unusable;
    return j.dump();
  }
  j["pod"] = r.pod;
  if (r.action == "delete") {
    if (!r.found) j["message"] = "pod " + r.pod + " holds no devices";
    OJson released = OJson::array();
    for (const auto& d : r.released) {
      OJson e;
      e["node"] = d.node;
      e["uuid"] = d.uuid;
      if (!d.mig_profile.empty()) {
        e["migProfile"] = d.mig_profile;
        e["placement"] = PlacementJson(d.placement);
      } else {
        e["memMiB"] = d.mem;
        e["cores"] = d.cores;
      }
      released.push_back(e);
    }
    j["released"] = released;
    return j.dump();
  }
  if (!r.error.empty()) {
    j["scheduled"] = false;
    j["error"] = r.error;
    return j.dump();
  }
  const sched::Decision& d = r.decision;
  if (r.adopted) j["adopted"] = true;
  if (!r.warning.empty()) j["warning"] = r.warning;
  if (d.passthrough()) {
    j["scheduled"] = false;
    j["passthrough"] = true;
    j["message"] = "no GPU request: left to kube-scheduler";
    return j.dump();
  }
  j["scheduled"] = d.scheduled();
  if (!d.scheduled()) {
    j["message"] = d.message;
    OJson failed = OJson::object();
    for (const auto& [node, why] : sched::FormatNodeStatuses(d.failed_nodes)) failed[node] = why;
    j["failedNodes"] = failed;
    return j.dump();
  }
  j["node"] = d.node;
  OJson containers = OJson::array();
  for (size_t slot = 0; slot < d.container_names.size(); ++slot) {
    OJson c;
    c["name"] = d.container_names[slot];
    OJson devices = OJson::array();
    if (slot < d.containers.size()) {
      for (const auto& g : d.containers[slot]) {
        OJson dev;
        dev["uuid"] = g.uuid;
        dev["memMiB"] = g.mem;
        dev["cores"] = g.cores;
        if (!g.mig_profile.empty()) {
          dev["migProfile"] = g.mig_profile;
          dev["placement"] = PlacementJson(g.placement);
        }
        devices.push_back(dev);
      }
    }
    c["devices"] = devices;
    containers.push_back(c);
  }
  j["containers"] = containers;
  OJson annotations = OJson::object();
  for (const auto& [k, v] : d.annotations) annotations[k] = v;
  j["annotations"] = annotations;
  return j.dump();
}

std::string FinalJson(const state::ClusterState& state) {
  OJson j;
  j["final"] = true;
  OJson nodes = OJson::array();
  for (const auto& [name, ns] : state.nodes()) {
    OJson n;
    n["name"] = name;
    if (!ns.usable()) n["unusable"] = ns.unusable_reason;
    OJson gpus = OJson::array();
    for (size_t i = 0; i < ns.devices.size(); ++i) {
      const auto& d = ns.devices[i];
      const auto& u = ns.usage[i];
      OJson g;
      g["uuid"] = d.uuid;
      g["mode"] = d.mode;
      g["used"] = u.used;
      g["count"] = d.count;
      g["usedMemMiB"] = u.used_mem;
      g["totalMemMiB"] = d.total_mem_mib;
      g["usedCores"] = u.used_cores;
      if (d.IsMig()) {
        OJson instances = OJson::array();
        for (const auto& inst : ns.instances[i]) {
          OJson one{{"pod", inst.pod_key},
                    {"profile", inst.profile_name},
                    {"start", inst.placement.start},
                    {"size", inst.placement.size}};
          if (inst.foreign) one["foreign"] = true;  // not tessera's: no pod holds it
          instances.push_back(std::move(one));
        }
        g["instances"] = instances;
      }
      if (!u.Trusted()) g["failClosed"] = true;
      gpus.push_back(g);
    }
    n["gpus"] = gpus;
    nodes.push_back(n);
  }
  j["nodes"] = nodes;
  return j.dump();
}

}  // namespace tessera::sim
