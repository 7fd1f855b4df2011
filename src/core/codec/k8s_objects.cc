#include "core/codec/k8s_objects.h"

#include <limits>

namespace tessera::codec {
namespace {

Status ReadStringMap(const Json& obj, std::string_view key, const std::string& where,
                     std::map<std::string, std::string>* out) {
  const Json* m = FindKey(obj, key);
  if (m == nullptr || m->is_null()) return Status::Ok();
  if (!m->is_object()) return Error{where + "." + std::string(key) + ": expected an object"};
  for (auto it = m->begin(); it != m->end(); ++it) {
    const Json& v = it.value();
    if (v.is_string()) {
      (*out)[it.key()] = v.get<std::string>();
    } else if (v.is_number() || v.is_boolean()) {
      (*out)[it.key()] = v.dump();  // YAML scenario files write `key: 2` for "2"
    } else {
      return Error{where + "." + std::string(key) + "[\"" + it.key() +
                   "\"]: expected a string, got " + DescribeJsonValue(v)};
    }
  }
  return Status::Ok();
}

// Resource lists accept strings ("8Gi") and numbers (2), the latter as their JSON text.
Status ReadResourceList(const Json& obj, std::string_view key, const std::string& where,
                        model::ResourceList* out) {
  const Json* m = FindKey(obj, key);
  if (m == nullptr || m->is_null()) return Status::Ok();
  if (!m->is_object()) return Error{where + "." + std::string(key) + ": expected an object"};
  for (auto it = m->begin(); it != m->end(); ++it) {
    const Json& v = it.value();
    if (v.is_string()) {
      (*out)[it.key()] = v.get<std::string>();
    } else if (v.is_number()) {
      (*out)[it.key()] = v.dump();
    } else {
      return Error{where + "." + std::string(key) + "[\"" + it.key() +
                   "\"]: expected a quantity, got " + DescribeJsonValue(v)};
    }
  }
  return Status::Ok();
}

// HAMi reads the variable with Go's strconv.ParseBool; an env list it cannot read is not the
// scheduler's to refuse (the kubelet validates it), so anything unreadable means "not set".
bool CudaDisableControl(const Json& container) {
  const Json* env = FindKey(container, "env");
  if (env == nullptr || !env->is_array()) return false;
  for (const Json& var : *env) {
    if (!var.is_object()) continue;
    const Json* name = FindKey(var, "name");
    if (name == nullptr || !name->is_string() || *name != "CUDA_DISABLE_CONTROL") continue;
    const Json* value = FindKey(var, "value");
    if (value == nullptr || !value->is_string()) return false;
    const std::string& v = value->get_ref<const std::string&>();
    return v == "1" || v == "t" || v == "T" || v == "true" || v == "TRUE" || v == "True";
  }
  return false;
}

Result<std::vector<model::Container>> DecodeContainers(const Json& spec, std::string_view key,
                                                       const std::string& where) {
  std::vector<model::Container> out;
  const Json* list = FindKey(spec, key);
  if (list == nullptr || list->is_null()) return out;
  if (!list->is_array()) return Error{where + "." + std::string(key) + ": expected an array"};
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& c = (*list)[i];
    std::string cw = where + "." + std::string(key) + "[" + std::to_string(i) + "]";
    if (!c.is_object()) return Error{cw + ": expected an object"};
    model::Container container;
    if (auto s = ReadString(c, "name", cw, &container.name); !s) return Error{s.message()};
    if (container.name.empty()) container.name = std::string(key) + "-" + std::to_string(i);
    if (const Json* res = FindKey(c, "resources"); res != nullptr && !res->is_null()) {
      if (!res->is_object()) return Error{cw + ".resources: expected an object"};
      if (auto s = ReadResourceList(*res, "limits", cw + ".resources", &container.limits); !s) {
        return Error{s.message()};
      }
      if (auto s = ReadResourceList(*res, "requests", cw + ".resources", &container.requests); !s) {
        return Error{s.message()};
      }
    }
    if (const Json* sc = FindKey(c, "securityContext"); sc != nullptr && sc->is_object()) {
      if (auto s = ReadBool(*sc, "privileged", cw + ".securityContext", &container.privileged);
          !s) {
        return Error{s.message()};
      }
    }
    container.cuda_disable_control = CudaDisableControl(c);
    out.push_back(std::move(container));
  }
  return out;
}

Status DecodeMetadata(const Json& j, const std::string& kind, std::string* name, std::string* ns,
                      std::string* uid, std::string* rv, std::map<std::string, std::string>* ann,
                      std::map<std::string, std::string>* labels, bool* deleting) {
  const Json* meta = FindKey(j, "metadata");
  if (meta == nullptr || !meta->is_object()) return Error{kind + ": metadata missing"};
  const std::string where = kind + ".metadata";
  if (auto s = ReadString(*meta, "name", where, name); !s) return s;
  if (name->empty()) return Error{where + ".name: missing"};
  if (ns != nullptr) {
    if (auto s = ReadString(*meta, "namespace", where, ns); !s) return s;
    if (ns->empty()) *ns = "default";
  }
  if (auto s = ReadString(*meta, "uid", where, uid); !s) return s;
  if (auto s = ReadString(*meta, "resourceVersion", where, rv); !s) return s;
  if (auto s = ReadStringMap(*meta, "annotations", where, ann); !s) return s;
  if (auto s = ReadStringMap(*meta, "labels", where, labels); !s) return s;
  if (deleting != nullptr) {
    const Json* dt = FindKey(*meta, "deletionTimestamp");
    *deleting = dt != nullptr && !dt->is_null();
  }
  return Status::Ok();
}

// The kind and uid of the owner reference marked controller (at most one, as the API server
// enforces); "" when none is.
Status ReadController(const Json& object, const std::string& where, std::string* kind,
                      std::string* uid) {
  const Json* meta = FindKey(object, "metadata");
  const Json* owners = meta != nullptr ? FindKey(*meta, "ownerReferences") : nullptr;
  if (owners == nullptr || owners->is_null()) return Status::Ok();
  if (!owners->is_array()) return Error{where + ": expected a list"};
  for (const Json& owner : *owners) {
    if (!owner.is_object()) return Error{where + ": expected objects"};
    const Json* controller = FindKey(owner, "controller");
    if (controller == nullptr || !controller->is_boolean() || !controller->get<bool>()) continue;
    if (auto s = ReadString(owner, "kind", where, kind); !s) return s;
    return ReadString(owner, "uid", where, uid);
  }
  return Status::Ok();
}

}  // namespace

Result<model::Pod> DecodePod(const Json& j) {
  if (!j.is_object()) return Error{"Pod: expected an object"};
  model::Pod pod;
  std::string uid;
  if (auto s = DecodeMetadata(j, "Pod", &pod.name, &pod.ns, &pod.uid, &pod.resource_version,
                              &pod.annotations, &pod.labels, &pod.deleting);
      !s) {
    return Error{s.message()};
  }
  if (auto s = ReadController(j, "Pod " + pod.Key() + ": metadata.ownerReferences",
                              &pod.controller_kind, &pod.controller_uid);
      !s) {
    return Error{s.message()};
  }
  if (const Json* meta = FindKey(j, "metadata"); meta != nullptr) {
    if (auto s =
            ReadString(*meta, "creationTimestamp", "Pod " + pod.Key() + ": metadata", &pod.created);
        !s) {
      return Error{s.message()};
    }
  }
  const std::string where = "Pod " + pod.Key() + ": spec";
  if (const Json* spec = FindKey(j, "spec"); spec != nullptr && !spec->is_null()) {
    if (!spec->is_object()) return Error{where + ": expected an object"};
    if (auto s = ReadString(*spec, "nodeName", where, &pod.node_name); !s)
      return Error{s.message()};
    if (auto s = ReadString(*spec, "schedulerName", where, &pod.scheduler_name); !s) {
      return Error{s.message()};
    }
    // Kubernetes keeps priorities in int32 (PriorityClass.value).
    if (auto s = ReadIntAs(*spec, "priority", where, std::numeric_limits<int32_t>::min(),
                           std::numeric_limits<int32_t>::max(), &pod.priority);
        !s) {
      return Error{s.message()};
    }
    auto init = DecodeContainers(*spec, "initContainers", where);
    if (!init.ok()) return init.error();
    pod.init_containers = std::move(init.value());
    auto app = DecodeContainers(*spec, "containers", where);
    if (!app.ok()) return app.error();
    pod.containers = std::move(app.value());
  }
  if (const Json* status = FindKey(j, "status"); status != nullptr && status->is_object()) {
    const std::string sw = "Pod " + pod.Key() + ": status";
    if (auto s = ReadString(*status, "phase", sw, &pod.phase); !s) return Error{s.message()};
    if (auto s = ReadString(*status, "nominatedNodeName", sw, &pod.nominated_node); !s) {
      return Error{s.message()};
    }
    if (const Json* ics = FindKey(*status, "initContainerStatuses"); ics && ics->is_array()) {
      for (const auto& cs : *ics) {
        model::ContainerStatus st;
        if (!cs.is_object()) continue;
        (void)ReadString(cs, "name", sw, &st.name);
        const Json* state = FindKey(cs, "state");
        const Json* term = state ? FindKey(*state, "terminated") : nullptr;
        if (term != nullptr && term->is_object()) {
          st.terminated = true;
          long long code = 0;
          (void)ReadInt(*term, "exitCode", sw, -1000000, 1000000, &code);
          st.exit_code = static_cast<int>(code);
        }
        pod.init_container_statuses.push_back(st);
      }
    }
  }
  return pod;
}

Result<model::ResourceQuota> DecodeResourceQuota(const Json& j) {
  if (!j.is_object()) return Error{"ResourceQuota: expected an object"};
  model::ResourceQuota quota;
  std::string uid;
  std::string rv;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> labels;
  if (auto s = DecodeMetadata(j, "ResourceQuota", &quota.name, &quota.ns, &uid, &rv, &annotations,
                              &labels, nullptr);
      !s) {
    return Error{s.message()};
  }
  if (const Json* spec = FindKey(j, "spec"); spec != nullptr && !spec->is_null()) {
    const std::string where = "ResourceQuota " + quota.Key() + ": spec";
    if (!spec->is_object()) return Error{where + ": expected an object"};
    if (auto s = ReadResourceList(*spec, "hard", where, &quota.hard); !s) return Error{s.message()};
  }
  return quota;
}

namespace {

Result<model::LabelRequirement::Operator> ReadOperator(const std::string& op,
                                                       const std::string& where) {
  using Op = model::LabelRequirement::Operator;
  if (op == "In") return Op::kIn;
  if (op == "NotIn") return Op::kNotIn;
  if (op == "Exists") return Op::kExists;
  if (op == "DoesNotExist") return Op::kDoesNotExist;
  return Error{where + ".operator: " + DescribeJsonValue(Json(op)) +
               " is not In, NotIn, Exists or DoesNotExist"};
}

Status ReadSelector(const Json& selector, const std::string& where,
                    model::DisruptionBudget* budget) {
  if (!selector.is_object()) return Error{where + ": expected an object"};
  if (auto s = ReadStringMap(selector, "matchLabels", where, &budget->match_labels); !s) return s;
  const Json* expressions = FindKey(selector, "matchExpressions");
  if (expressions == nullptr || expressions->is_null()) return Status::Ok();
  if (!expressions->is_array()) return Error{where + ".matchExpressions: expected a list"};
  for (size_t i = 0; i < expressions->size(); ++i) {
    const Json& e = (*expressions)[i];
    const std::string at = where + ".matchExpressions[" + std::to_string(i) + "]";
    if (!e.is_object()) return Error{at + ": expected an object"};
    model::LabelRequirement r;
    std::string op;
    if (auto s = ReadString(e, "key", at, &r.key); !s) return s;
    if (auto s = ReadString(e, "operator", at, &op); !s) return s;
    auto parsed = ReadOperator(op, at);
    if (!parsed.ok()) return parsed.error();
    r.op = parsed.value();
    if (const Json* values = FindKey(e, "values"); values != nullptr && !values->is_null()) {
      if (!values->is_array()) return Error{at + ".values: expected a list"};
      for (const Json& v : *values) {
        if (!v.is_string()) return Error{at + ".values: expected strings"};
        r.values.push_back(v.get<std::string>());
      }
    }
    budget->match_expressions.push_back(std::move(r));
  }
  return Status::Ok();
}

}  // namespace

Result<model::DisruptionBudget> DecodePodDisruptionBudget(const Json& j) {
  if (!j.is_object()) return Error{"PodDisruptionBudget: expected an object"};
  model::DisruptionBudget budget;
  std::string uid;
  std::string rv;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> labels;
  if (auto s = DecodeMetadata(j, "PodDisruptionBudget", &budget.name, &budget.ns, &uid, &rv,
                              &annotations, &labels, nullptr);
      !s) {
    return Error{s.message()};
  }
  const std::string where = "PodDisruptionBudget " + budget.Key();
  budget.no_selector = true;
  if (const Json* spec = FindKey(j, "spec"); spec != nullptr && !spec->is_null()) {
    if (!spec->is_object()) return Error{where + ": spec: expected an object"};
    if (const Json* selector = FindKey(*spec, "selector");
        selector != nullptr && !selector->is_null()) {
      budget.no_selector = false;
      if (auto s = ReadSelector(*selector, where + ": spec.selector", &budget); !s) {
        return Error{s.message()};
      }
    }
  }
  if (const Json* status = FindKey(j, "status"); status != nullptr && status->is_object()) {
    if (auto s = ReadIntAs(*status, "disruptionsAllowed", where + ": status", 0,
                           std::numeric_limits<int32_t>::max(), &budget.disruptions_allowed);
        !s) {
      return Error{s.message()};
    }
  }
  return budget;
}

Result<model::Node> DecodeNode(const Json& j) {
  if (!j.is_object()) return Error{"Node: expected an object"};
  model::Node node;
  std::string uid;
  if (auto s = DecodeMetadata(j, "Node", &node.name, nullptr, &uid, &node.resource_version,
                              &node.annotations, &node.labels, nullptr);
      !s) {
    return Error{s.message()};
  }
  if (const Json* status = FindKey(j, "status"); status != nullptr && status->is_object()) {
    if (auto s = ReadResourceList(*status, "allocatable", "Node " + node.name + ": status",
                                  &node.allocatable);
        !s) {
      return Error{s.message()};
    }
  }
  return node;
}

}  // namespace tessera::codec
