#include "core/extender/extender_protocol.h"

namespace tessera::extender {

using codec::FindKey;
using codec::Json;

namespace {

Result<std::optional<std::vector<std::string>>> ReadNameList(const Json& obj, std::string_view key,
                                                             size_t max_names) {
  const Json* v = FindKey(obj, key);
  if (v == nullptr || v->is_null()) return std::optional<std::vector<std::string>>{};
  const std::string where = "ExtenderArgs." + std::string(key);
  if (!v->is_array()) return Error{where + ": expected a list of node names"};
  if (v->size() > max_names) return TooManyNodes(key, max_names);
  std::vector<std::string> names;
  names.reserve(v->size());
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      return Error{where + "[" + std::to_string(i) + "]: expected a string"};
    }
    names.push_back((*v)[i].get<std::string>());
  }
  return std::optional<std::vector<std::string>>{std::move(names)};
}

Json NullableNames(const std::optional<std::vector<std::string>>& names) {
  if (!names) return nullptr;
  return Json(*names);
}

Json NullableMap(const std::map<std::string, std::string>& m) {
  if (m.empty()) return nullptr;
  return Json(m);
}

Result<std::string> RequiredString(const Json& obj, std::string_view key) {
  std::string out;
  Status s = codec::ReadString(obj, key, "ExtenderBindingArgs", &out);
  if (!s.ok()) return Error{s.message()};
  if (out.empty()) return Error{"ExtenderBindingArgs." + std::string(key) + ": missing"};
  return out;
}

}  // namespace

Error TooManyNodes(std::string_view field, size_t max_nodes) {
  return Error{"ExtenderArgs." + std::string(field) + ": more than " + std::to_string(max_nodes) +
               " nodes, the most this scheduler takes in one request"};
}

Result<ExtenderArgs> DecodeExtenderArgs(std::string_view body, size_t max_nodes) {
  auto root = codec::ParseJson(body, "ExtenderArgs");
  if (!root.ok()) return root.error();
  if (!root->is_object()) return Error{"ExtenderArgs: expected a JSON object"};
  ExtenderArgs args;
  const Json* pod = FindKey(*root, "Pod");
  if (pod == nullptr || pod->is_null()) return Error{"extender args missing pod"};
  if (!pod->is_object()) return Error{"ExtenderArgs.Pod: expected an object"};
  args.pod = *pod;
  auto names = ReadNameList(*root, "NodeNames", max_nodes);
  if (!names.ok()) return names.error();
  args.node_names = std::move(names.value());
  const Json* nodes = FindKey(*root, "Nodes");
  if (nodes != nullptr && !nodes->is_null()) {
    if (!nodes->is_object()) return Error{"ExtenderArgs.Nodes: expected a NodeList object"};
    const Json* items = FindKey(*nodes, "items");
    std::vector<Json> list;
    if (items != nullptr && !items->is_null()) {
      if (!items->is_array()) return Error{"ExtenderArgs.Nodes.items: expected a list"};
      if (items->size() > max_nodes) return TooManyNodes("Nodes.items", max_nodes);
      for (size_t i = 0; i < items->size(); ++i) {
        if (!(*items)[i].is_object()) {
          return Error{"ExtenderArgs.Nodes.items[" + std::to_string(i) + "]: expected a Node"};
        }
        list.push_back((*items)[i]);
      }
    }
    args.nodes = std::move(list);
  }
  return args;
}

Result<BindingArgs> DecodeBindingArgs(std::string_view body) {
  auto root = codec::ParseJson(body, "ExtenderBindingArgs");
  if (!root.ok()) return root.error();
  if (!root->is_object()) return Error{"ExtenderBindingArgs: expected a JSON object"};
  BindingArgs args;
  auto name = RequiredString(*root, "PodName");
  if (!name.ok()) return name.error();
  auto ns = RequiredString(*root, "PodNamespace");
  if (!ns.ok()) return ns.error();
  auto node = RequiredString(*root, "Node");
  if (!node.ok()) return node.error();
  // The uid ties the bind to the pod its filter saw, never to a new pod of the same name.
  auto uid = RequiredString(*root, "PodUID");
  if (!uid.ok()) return uid.error();
  args.pod_name = std::move(name.value());
  args.pod_namespace = std::move(ns.value());
  args.node = std::move(node.value());
  args.pod_uid = std::move(uid.value());
  return args;
}

std::string EncodeFilterResult(const FilterResult& result) {
  Json out = Json::object();
  if (result.nodes) {
    out["Nodes"] = Json{{"apiVersion", "v1"}, {"kind", "NodeList"}, {"items", *result.nodes}};
  } else {
    out["Nodes"] = nullptr;
  }
  out["NodeNames"] = NullableNames(result.node_names);
  out["FailedNodes"] = NullableMap(result.failed_nodes);
  out["FailedAndUnresolvableNodes"] = NullableMap(result.failed_and_unresolvable);
  out["Error"] = result.error;
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string EncodeBindingResult(const std::string& error) {
  return Json{{"Error", error}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string EncodeHostPriorityList(const std::vector<HostPriority>& priorities) {
  Json out = Json::array();
  for (const auto& p : priorities) out.push_back(Json{{"Host", p.host}, {"Score", p.score}});
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::vector<std::string> CandidateNames(const ExtenderArgs& args) {
  if (args.node_names) return *args.node_names;
  std::vector<std::string> names;
  if (args.nodes) {
    for (const auto& n : *args.nodes) {
      const Json* meta = FindKey(n, "metadata");
      const Json* name = meta != nullptr ? FindKey(*meta, "name") : nullptr;
      if (name != nullptr && name->is_string()) names.push_back(name->get<std::string>());
    }
  }
  return names;
}

}  // namespace tessera::extender
