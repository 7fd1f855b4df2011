#include "core/extender/extender_preemption.h"

#include <limits>
#include <utility>

namespace tessera::extender {

using codec::FindKey;
using codec::Json;

namespace {

constexpr const char* kArgs = "ExtenderPreemptionArgs";

// A node name from a client, for an error message: quoted and cut short.
std::string Named(const std::string& name) { return codec::DescribeJsonValue(Json(name)); }

// The uid of one pod of a victim list: MetaPod's UID, or v1.Pod's metadata.uid.
Result<std::string> VictimUid(const Json& pod, bool meta, const std::string& where) {
  if (!pod.is_object()) return Error{where + ": expected an object"};
  const Json* holder = &pod;
  std::string field = where + ".UID";
  if (!meta) {
    holder = FindKey(pod, "metadata");
    if (holder == nullptr || !holder->is_object()) return Error{where + ".metadata: missing"};
    field = where + ".metadata.uid";
  }
  const Json* uid = FindKey(*holder, meta ? "UID" : "uid");
  if (uid == nullptr || !uid->is_string()) return Error{field + ": expected a string"};
  std::string out = uid->get<std::string>();
  if (out.empty()) return Error{field + ": missing"};
  return out;
}

// One map of ExtenderPreemptionArgs (`meta`: NodeNameToMetaVictims, else NodeNameToVictims)
// into `out`.
Status ReadVictimMap(const Json& root, bool meta, const PreemptionArgsLimits& limits,
                     std::map<std::string, MetaVictims>* out) {
  const std::string key = meta ? "NodeNameToMetaVictims" : "NodeNameToVictims";
  const Json* map = FindKey(root, key);
  if (map == nullptr || map->is_null()) return Status::Ok();
  const std::string where = std::string(kArgs) + "." + key;
  if (!map->is_object()) return Error{where + ": expected an object of node names"};
  if (map->size() > limits.max_nodes) {
    return Error{where + ": more than " + std::to_string(limits.max_nodes) +
                 " nodes, the most this scheduler takes in one request"};
  }
  for (auto it = map->begin(); it != map->end(); ++it) {
    const std::string node_where = where + "[" + Named(it.key()) + "]";
    if (it.key().empty()) return Error{where + ": a node without a name"};
    MetaVictims victims;
    const Json& v = it.value();
    if (!v.is_null()) {
      if (!v.is_object()) return Error{node_where + ": expected an object"};
      long long violations = 0;
      if (Status s = codec::ReadInt(v, "NumPDBViolations", node_where, 0,
                                    std::numeric_limits<int32_t>::max(), &violations);
          !s.ok()) {
        return s;
      }
      victims.num_pdb_violations = violations;
      const Json* pods = FindKey(v, "Pods");
      if (pods != nullptr && !pods->is_null()) {
        if (!pods->is_array()) return Error{node_where + ".Pods: expected a list"};
        if (pods->size() > limits.max_victims_per_node) {
          return Error{node_where + ".Pods: more than " +
                       std::to_string(limits.max_victims_per_node) + " victims"};
        }
        for (size_t i = 0; i < pods->size(); ++i) {
          auto uid = VictimUid((*pods)[i], meta, node_where + ".Pods[" + std::to_string(i) + "]");
          if (!uid.ok()) return uid.error();
          victims.pod_uids.push_back(std::move(uid.value()));
        }
      }
    }
    (*out)[it.key()] = std::move(victims);
  }
  return Status::Ok();
}

}  // namespace

Result<PreemptionArgs> DecodePreemptionArgs(std::string_view body,
                                            const PreemptionArgsLimits& limits) {
  auto root = codec::ParseJson(body, kArgs);
  if (!root.ok()) return root.error();
  if (!root->is_object()) return Error{std::string(kArgs) + ": expected a JSON object"};
  PreemptionArgs args;
  const Json* pod = FindKey(*root, "Pod");
  if (pod == nullptr || pod->is_null()) return Error{std::string(kArgs) + ".Pod: missing"};
  if (!pod->is_object()) return Error{std::string(kArgs) + ".Pod: expected an object"};
  args.pod = *pod;
  // Whole pods first, so that a node in both maps keeps its MetaVictims.
  if (Status s = ReadVictimMap(*root, false, limits, &args.victims_by_node); !s.ok()) {
    return Error{s.message()};
  }
  if (Status s = ReadVictimMap(*root, true, limits, &args.victims_by_node); !s.ok()) {
    return Error{s.message()};
  }
  if (args.victims_by_node.size() > limits.max_nodes) {
    return Error{std::string(kArgs) + ": more than " + std::to_string(limits.max_nodes) +
                 " nodes, the most this scheduler takes in one request"};
  }
  return args;
}

std::string EncodePreemptionResult(const std::map<std::string, MetaVictims>& victims_by_node) {
  Json nodes = Json::object();
  for (const auto& [node, victims] : victims_by_node) {
    Json pods = Json::array();
    for (const auto& uid : victims.pod_uids) pods.push_back(Json{{"UID", uid}});
    nodes[node] = Json{{"Pods", std::move(pods)}, {"NumPDBViolations", victims.num_pdb_violations}};
  }
  return Json{{"NodeNameToMetaVictims", std::move(nodes)}}.dump(-1, ' ', false,
                                                                Json::error_handler_t::replace);
}

}  // namespace tessera::extender
