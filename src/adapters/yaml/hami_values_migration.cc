#include "adapters/yaml/hami_values_migration.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <optional>
#include <set>
#include <utility>

#include "adapters/yaml/yaml_json.h"
#include "core/codec/json_util.h"

namespace tessera::adapters {
namespace {

using codec::Json;
using OrderedJson = nlohmann::ordered_json;

// Reasons shared by several keys.
constexpr const char* kNvidiaOnly = "tessera schedules NVIDIA GPUs only";
constexpr const char* kHamiImage =
    "HAMi's image; tessera's scheduler and agent run tessera's image (image.repository, "
    "image.tag)";
constexpr const char* kAgentPodSecurity =
    "the agent's pod security is fixed by tessera's chart (privileged, read-only root, no host "
    "PID namespace; docs/agent.md)";

// Subtrees reported as one key, and the reasons of the keys under them (the longest entry that
// is the key or one of its parents gives the reason). Keys under no entry get "no tessera
// equivalent".
struct KnownSubtree {
  const char* path;
  const char* reason;
};
constexpr KnownSubtree kKnownSubtrees[] = {
    {"namespaceOverride",
     "tessera installs into the release namespace (helm --namespace) and the agent into "
     "agent.namespace"},
    {"global.labels", "tessera's chart sets its own labels; it has no value for extra ones"},
    {"global.annotations",
     "tessera's chart sets its own annotations; it has no value for extra ones"},
    {"global.managedNodeSelector",
     "no tessera equivalent (HAMi's scheduler NODE_SELECTOR_* environment)"},
    {"global.managedNodeSelectorEnable",
     "no tessera equivalent (HAMi's scheduler NODE_SELECTOR_* environment)"},
    {"global.imageRegistry", kHamiImage},
    {"global.imageTag", kHamiImage},
    {"podSecurityPolicy",
     "PodSecurityPolicy is gone since Kubernetes 1.25; tessera's namespaces use Pod Security "
     "admission"},
    {"scheduler.service",
     "tessera's Service is ClusterIP on the HTTPS port (webhook, /metrics); kube-scheduler calls "
     "tessera inside its pod, so there is no NodePort"},
    {"scheduler.admissionWebhook.customURL",
     "tessera's webhook is always called through its Service"},
    {"scheduler.admissionWebhook.namespaceSelector",
     "tessera's webhook leaves out namespaces by name (webhook.excludeNamespaces) and by the label "
     "hami.io/webhook=ignore only"},
    {"scheduler.admissionWebhook.objectSelector",
     "tessera's webhook selects pods by the label hami.io/webhook=ignore only"},
    {"devicePlugin.gpuOperatorToolkitReady",
     "tessera's agent does not wait for the GPU Operator's toolkit"},
    {"devicePlugin.monitor",
     "HAMi's vGPUmonitor container; tessera's agent serves its own /metrics on agent.port "
     "(docs/agent.md)"},
    {"devicePlugin.service",
     "the NodePort of HAMi's monitor; tessera's agent serves /metrics on agent.port"},
    {"devicePlugin.nvidiaNodeSelector",
     "not carried over: tessera's agent runs on nodes labelled tessera.io/agent=true "
     "(agent.nodeSelector) so that it never shares a node with HAMi's device plugin; set "
     "agent.nodeSelector to this selector only once HAMi's device plugin is gone "
     "(docs/migrating-from-hami.md)"},
    {"devicePlugin.securityContext", kAgentPodSecurity},
    {"devicePlugin.hostPID", kAgentPodSecurity},
    {"devicePlugin.hostNetwork", kAgentPodSecurity},
    {"devicePlugin.podAnnotations",
     "tessera's chart has no annotations value for the agent's pods"},
    {"devicePlugin.extraEnvs", "tessera's chart has no environment value for the agent"},
    {"devicePlugin.updateStrategy", "tessera's agent DaemonSet always rolls with maxUnavailable 1"},
    {"mockDevicePlugin",
     "no tessera equivalent (tessera's simulated NVML is libtessera-nvml-sim.so, docs/agent.md)"},
    {"prometheus",
     "tessera's chart makes no ServiceMonitor; scrape /metrics (docs/operator-guide.md, "
     "Observe)"},
};

// HAMi's values for other vendors: top-level resource names and the devices sections.
constexpr const char* kOtherVendorPrefixes[] = {"mlu",
                                                "dcu",
                                                "metax",
                                                "enflame",
                                                "kunlun",
                                                "vastai",
                                                "biren",
                                                "devices.amd",
                                                "devices.awsneuron",
                                                "devices.kunlun",
                                                "devices.enflame",
                                                "devices.mthreads",
                                                "devices.vastai",
                                                "devices.biren",
                                                "devices.ascend",
                                                "devices.iluvatar"};

// HAMi's default kube-scheduler configuration arguments: tessera's chart writes kube-scheduler's
// configuration itself.
constexpr const char* kHamiKubeSchedulerConfigArgs[] = {"--config=/config/config.yaml",
                                                        "--policy-config-file=/config/config.json"};

// The keys of HAMi's device config (`device-config.content`, `nvidia` section) that tessera's
// agent reads besides its scheduler (the node side, docs/agent.md "Configuration").
constexpr const char* kNodeSideDeviceKeys[] = {
    "resourceCountName",         "deviceSplitCount", "deviceMemoryScaling", "deviceCoreScaling",
    "preConfiguredDeviceMemory", "libCudaLogLevel",  "enableNumaTopology",  "disableCoreLimit"};

// The `nvidia` keys tessera's device config reads (core/config/config_codec.cc).
constexpr const char* kTesseraDeviceKeys[] = {
    "resourceCountName",   "resourceMemoryName",   "resourceMemoryPercentageName",
    "resourceCoreName",    "resourcePriorityName", "overwriteEnv",
    "defaultMemory",       "defaultCores",         "defaultGPUNum",
    "memoryFactor",        "disableCoreLimit",     "gpuCorePolicy",
    "runtimeClassName",    "migProfileAllowlist",  "deviceSplitCount",
    "deviceMemoryScaling", "deviceCoreScaling",    "preConfiguredDeviceMemory",
    "libCudaLogLevel",     "enableNumaTopology",   "migFallback"};

// The top-level order of tessera's values.yaml.
constexpr const char* kTesseraTopLevelOrder[] = {
    "image",        "imagePullSecrets", "nameOverride", "fullnameOverride", "scheduler", "webhook",
    "certificates", "devices",          "agent"};

bool IsEmpty(const Json& v) {
  return v.is_null() || (v.is_string() && v.get_ref<const std::string&>().empty()) ||
         ((v.is_object() || v.is_array()) && v.empty());
}

// Whether a value sets anything: some non-empty leaf under it.
bool SetsSomething(const Json& v) {
  if (v.is_object() || v.is_array()) {
    return std::any_of(v.begin(), v.end(), [](const Json& child) { return SetsSomething(child); });
  }
  return !IsEmpty(v);
}

bool StartsWith(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// `parent` is `path` or one of its parents (a dotted prefix, or the key of a list).
bool IsUnder(std::string_view path, std::string_view parent) {
  return path == parent || (StartsWith(path, parent) && path.size() > parent.size() &&
                            (path[parent.size()] == '.' || path[parent.size()] == '['));
}

std::string Quote(const Json& v) { return v.dump(); }

OrderedJson ToOrdered(const Json& v) { return OrderedJson::parse(v.dump()); }

// klog's verbosity in `-v=N`, `--v=N`; nullopt for any other argument.
std::optional<int> KlogVerbosity(const std::string& arg) {
  for (const char* prefix : {"-v=", "--v="}) {
    if (!StartsWith(arg, prefix)) continue;
    const std::string digits = arg.substr(std::string_view(prefix).size());
    if (digits.empty() || digits.size() > 2 ||
        !std::all_of(digits.begin(), digits.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
      return std::nullopt;
    }
    return std::stoi(digits);
  }
  return std::nullopt;
}

class Converter {
 public:
  explicit Converter(const Json& hami) : hami_(hami) {}

  HamiValuesMigration Run() {
    Names();
    Images();
    Scheduler();
    Webhook();
    Certificates();
    Agent();
    CollectUnmapped(hami_, "");
    HamiValuesMigration result;
    for (const char* key : kTesseraTopLevelOrder) {
      if (out_.contains(key)) result.values[key] = std::move(out_[key]);
    }
    std::sort(unmapped_.begin(), unmapped_.end(),
              [](const UnmappedHamiKey& a, const UnmappedHamiKey& b) { return a.path < b.path; });
    result.unmapped = std::move(unmapped_);
    return result;
  }

 private:
  // ---- reading HAMi's values

  const Json* Peek(std::string_view path) const {
    const Json* node = &hami_;
    size_t start = 0;
    while (start <= path.size()) {
      const size_t dot = std::min(path.find('.', start), path.size());
      if (!node->is_object()) return nullptr;
      auto it = node->find(std::string(path.substr(start, dot - start)));
      if (it == node->end()) return nullptr;
      node = &*it;
      start = dot + 1;
    }
    return node;
  }

  // The value at `path` when it sets something, else nullptr; either way the key is taken care
  // of (carried over, judged or reported) and not listed again.
  const Json* Take(const std::string& path) {
    consumed_.insert(path);
    const Json* v = Peek(path);
    return v != nullptr && SetsSomething(*v) ? v : nullptr;
  }

  void Report(const std::string& path, std::string reason) {
    consumed_.insert(path);
    unmapped_.push_back({path, std::move(reason)});
  }

  // Takes `keys` of `path` and reports `path` once when any of them sets something.
  void ReportKeys(const std::string& path, std::initializer_list<const char*> keys,
                  const std::string& reason) {
    bool sets = false;
    for (const char* key : keys) sets = Take(path + "." + key) != nullptr || sets;
    if (sets) unmapped_.push_back({path, reason});
  }

  // Takes a key whose only value tessera shares; any other value is reported.
  void TakeExpecting(const std::string& path, const Json& expected, const std::string& reason) {
    const Json* v = Take(path);
    if (v != nullptr && *v != expected) Report(path, Quote(*v) + ": " + reason);
  }

  std::optional<bool> TakeBool(const std::string& path) {
    const Json* v = Take(path);
    if (v == nullptr) return std::nullopt;
    if (v->is_boolean()) return v->get<bool>();
    // HAMi's chart quotes some booleans ("false").
    if (v->is_string() && (*v == "true" || *v == "false")) return *v == "true";
    Report(path, "expected true or false, got " + Quote(*v));
    return std::nullopt;
  }

  std::optional<std::string> TakeString(const std::string& path) {
    const Json* v = Take(path);
    if (v == nullptr) return std::nullopt;
    if (v->is_string()) return v->get<std::string>();
    Report(path, "expected a string, got " + Quote(*v));
    return std::nullopt;
  }

  // ---- writing tessera's values

  OrderedJson& Out(std::initializer_list<const char*> path) {
    OrderedJson* node = &out_;
    for (const char* key : path) {
      if (!node->is_object()) *node = OrderedJson::object();
      node = &(*node)[key];
    }
    return *node;
  }

  void Carry(const std::string& from, std::initializer_list<const char*> to) {
    if (const Json* v = Take(from)) Out(to) = ToOrdered(*v);
  }

  void CarryTyped(const std::string& from, std::initializer_list<const char*> to,
                  bool (Json::*is_type)() const noexcept, const char* type_name) {
    const Json* v = Take(from);
    if (v == nullptr) return;
    if (!(v->*is_type)()) {
      Report(from, std::string("expected ") + type_name + ", got " + Quote(*v));
      return;
    }
    Out(to) = ToOrdered(*v);
  }

  void AppendArg(std::initializer_list<const char*> to, const std::string& arg) {
    OrderedJson& list = Out(to);
    if (!list.is_array()) list = OrderedJson::array();
    list.push_back(arg);
  }

  void AddPullSecrets(const std::string& from) {
    const Json* v = Take(from);
    if (v == nullptr) return;
    if (!v->is_array()) {
      Report(from, "expected a list of Secret names, got " + Quote(*v));
      return;
    }
    OrderedJson& secrets = Out({"imagePullSecrets"});
    if (!secrets.is_array()) secrets = OrderedJson::array();
    for (const auto& item : *v) {
      // HAMi lists names; tessera's chart takes LocalObjectReferences.
      OrderedJson ref =
          item.is_string() ? OrderedJson{{"name", item.get<std::string>()}} : ToOrdered(item);
      if (std::find(secrets.begin(), secrets.end(), ref) == secrets.end()) secrets.push_back(ref);
    }
  }

  // ---- the mapping, section by section (docs/migrating-from-hami.md has it as a table)

  void Names() {
    Carry("nameOverride", {"nameOverride"});
    Carry("fullnameOverride", {"fullnameOverride"});
    if (const Json* name = Take("schedulerName")) {
      Report("schedulerName",
             Quote(*name) +
                 " not carried over: tessera's scheduler keeps its own name (scheduler.name, "
                 "tessera-scheduler) so that both schedulers can run side by side; use this "
                 "name only once HAMi's scheduler is gone");
    }
  }

  void Images() {
    for (const char* image : {"scheduler.extender.image", "devicePlugin.image"}) {
      const std::string path = image;
      AddPullSecrets(path + ".pullSecrets");
      ReportKeys(path, {"registry", "repository", "tag"}, kHamiImage);
    }
    AddPullSecrets("global.imagePullSecrets");
    AddPullSecrets("scheduler.kubeScheduler.image.pullSecrets");
    // One pull policy for tessera's image, the scheduler's and the agent's.
    const auto scheduler_policy = TakeString("scheduler.extender.image.pullPolicy");
    if (scheduler_policy) Out({"image", "pullPolicy"}) = *scheduler_policy;
    const Json* agent_policy = Take("devicePlugin.image.pullPolicy");
    if (agent_policy != nullptr && (!scheduler_policy || *agent_policy != *scheduler_policy)) {
      Report("devicePlugin.image.pullPolicy",
             "tessera's scheduler and agent share image.pullPolicy (carried from "
             "scheduler.extender.image.pullPolicy)");
    }
  }

  void Scheduler() {
    if (const auto managed = TakeBool("global.managedNodeSelectorEnable"); managed && !*managed) {
      Take("global.managedNodeSelector");  // not in force
    }
    Carry("scheduler.replicas", {"scheduler", "replicas"});
    TakeExpecting("scheduler.leaderElect", true,
                  "tessera's chart always elects one active scheduler replica");
    if (const auto policy = TakeString("scheduler.defaultSchedulerPolicy.nodeSchedulerPolicy")) {
      Out({"scheduler", "nodeSchedulerPolicy"}) = *policy;
    }
    if (const auto policy = TakeString("scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy")) {
      Out({"scheduler", "gpuSchedulerPolicy"}) = *policy;
    }
    if (const auto address = TakeString("scheduler.metricsBindAddress")) {
      // HAMi's `:9395` form; tessera's chart takes the port of its plain-HTTP metrics listener.
      const std::string port = address->substr(address->rfind(':') + 1);
      const bool numeric =
          !port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c)) != 0;
          });
      if (numeric && std::stoi(port) > 0 && std::stoi(port) < 65536) {
        Out({"scheduler", "metricsPort"}) = std::stoi(port);
      } else {
        Report("scheduler.metricsBindAddress",
               Quote(*address) +
                   ": want HOST:PORT; tessera's chart takes the port "
                   "(scheduler.metricsPort)");
      }
    }
    TakeExpecting("scheduler.livenessProbe", true,
                  "tessera's chart always probes the scheduler's health");
    if (const Json* expiry = Take("scheduler.nodeLockExpire"); expiry != nullptr) {
      if (*expiry != "5m") {
        Report("scheduler.nodeLockExpire",
               Quote(*expiry) +
                   ": HAMi's scheduler ignores it (its --node-lock-timeout, 5m, overrides "
                   "HAMI_NODELOCK_EXPIRE); to change the expiry pass --node-lock-timeout in "
                   "scheduler.extraArgs");
      }
    }
    if (const Json* selector = Take("scheduler.nodeLabelSelector")) {
      if (selector->is_object()) {
        // As HAMi's chart renders it: key=value pairs in key order.
        std::string arg = "--node-label-selector=";
        bool first = true;
        for (auto it = selector->begin(); it != selector->end(); ++it) {
          const std::string value = it->is_string() ? it->get<std::string>() : it->dump();
          arg += (first ? "" : ",") + it.key() + "=" + value;
          first = false;
        }
        AppendArg({"scheduler", "extraArgs"}, arg);
      } else {
        Report("scheduler.nodeLabelSelector", "expected a mapping, got " + Quote(*selector));
      }
    }
    if (const Json* node = Take("scheduler.nodeName")) {
      Report("scheduler.nodeName", Quote(*node) +
                                       ": pin the scheduler with scheduler.nodeSelector "
                                       "(kubernetes.io/hostname) instead");
    }
    Carry("scheduler.nodeSelector", {"scheduler", "nodeSelector"});
    CarryTyped("scheduler.tolerations", {"scheduler", "tolerations"}, &Json::is_array, "a list");
    Carry("scheduler.podAnnotations", {"scheduler", "podAnnotations"});
    Carry("scheduler.extender.resources", {"scheduler", "resources"});
    ExtenderArgs();
    if (const auto legacy = TakeBool("legacyMetrics"); legacy && *legacy) {
      AppendArg({"scheduler", "extraArgs"}, "--legacy-metrics=true");
    }
    KubeScheduler();
  }

  // tessera serve takes HAMi's scheduler flags (docs/compatibility.md, "Scheduler flags"), so
  // they are carried as they are, but for the log level, which is a value of tessera's chart.
  void ExtenderArgs() {
    const std::string path = "scheduler.extender.extraArgs";
    const Json* args = Take(path);
    if (args == nullptr) return;
    if (!args->is_array()) {
      Report(path, "expected a list, got " + Quote(*args));
      return;
    }
    bool debug = false;
    for (const auto& arg : *args) {
      const std::string text = arg.is_string() ? arg.get<std::string>() : arg.dump();
      const auto verbosity = KlogVerbosity(text);
      if (text == "--debug" || text == "--debug=true" || (verbosity && *verbosity >= 4)) {
        debug = true;
      } else if (!verbosity) {
        AppendArg({"scheduler", "extraArgs"}, text);
      }
    }
    Out({"scheduler", "logLevel"}) = debug ? "debug" : "info";
  }

  void KubeScheduler() {
    const std::string k = "scheduler.kubeScheduler";
    TakeExpecting(k + ".enabled", true,
                  "tessera's chart always runs kube-scheduler beside tessera in one pod");
    const Json* registry = Take(k + ".image.registry");
    const Json* repository = Take(k + ".image.repository");
    const Json* tag = Take(k + ".image.tag");
    if (repository != nullptr && tag != nullptr && repository->is_string() && tag->is_string()) {
      const std::string prefix =
          registry != nullptr && registry->is_string() ? registry->get<std::string>() + "/" : "";
      Out({"scheduler", "kubeScheduler", "image"}) =
          prefix + repository->get<std::string>() + ":" + tag->get<std::string>();
    } else if (registry != nullptr || repository != nullptr || tag != nullptr) {
      Report(k + ".image",
             "no tag: HAMi takes the cluster's version; set scheduler.kubeScheduler.image to "
             "REGISTRY/REPOSITORY:vX.Y.Z of your cluster (tessera's default: "
             "registry.k8s.io/kube-scheduler:v1.36.3)");
    }
    Carry(k + ".image.pullPolicy", {"scheduler", "kubeScheduler", "pullPolicy"});
    Carry(k + ".resources", {"scheduler", "kubeScheduler", "resources"});
    for (const char* list : {"extraNewArgs", "extraArgs"}) {
      const std::string path = k + "." + list;
      const Json* args = Take(path);
      if (args == nullptr) continue;
      if (!args->is_array()) {
        Report(path, "expected a list, got " + Quote(*args));
        continue;
      }
      for (size_t i = 0; i < args->size(); ++i) {
        const Json& arg = (*args)[i];
        const std::string text = arg.is_string() ? arg.get<std::string>() : arg.dump();
        const bool hami_config = std::any_of(std::begin(kHamiKubeSchedulerConfigArgs),
                                             std::end(kHamiKubeSchedulerConfigArgs),
                                             [&](const char* known) { return text == known; });
        if (const auto verbosity = KlogVerbosity(text)) {
          Out({"scheduler", "kubeScheduler", "verbosity"}) = *verbosity;
        } else if (!hami_config) {
          Report(path + "[" + std::to_string(i) + "]",
                 Quote(arg) +
                     ": tessera's chart writes kube-scheduler's arguments and "
                     "configuration itself");
        }
      }
    }
  }

  void Webhook() {
    const std::string w = "scheduler.admissionWebhook";
    CarryTyped(w + ".enabled", {"webhook", "enabled"}, &Json::is_boolean, "true or false");
    if (const auto policy = TakeString(w + ".failurePolicy")) {
      if (*policy == "Ignore" || *policy == "Fail") {
        Out({"webhook", "failurePolicy"}) = *policy;
      } else {
        Report(w + ".failurePolicy", "\"" + *policy + "\": want Ignore or Fail");
      }
    }
    if (const auto force = TakeBool("scheduler.forceOverwriteDefaultScheduler")) {
      Out({"webhook", "forceOverwriteDefaultScheduler"}) = *force;
    }
    if (const Json* names = Take(w + ".whitelistNamespaces")) {
      if (names->is_array()) {
        // tessera's default keeps kube-system out as well.
        OrderedJson excluded = OrderedJson::array({"kube-system"});
        for (const auto& name : *names) {
          if (std::find(excluded.begin(), excluded.end(), ToOrdered(name)) == excluded.end()) {
            excluded.push_back(ToOrdered(name));
          }
        }
        Out({"webhook", "excludeNamespaces"}) = excluded;
      } else {
        Report(w + ".whitelistNamespaces", "expected a list, got " + Quote(*names));
      }
    }
    TakeExpecting(w + ".manageNamespaceSelector", true,
                  "tessera's chart always renders its webhook's namespaceSelector");
    TakeExpecting(w + ".reinvocationPolicy", "Never",
                  "tessera's webhook is never invoked again (reinvocationPolicy Never)");
  }

  void Certificates() {
    const auto cert_manager = TakeBool("scheduler.certManager.enabled");
    if (cert_manager && *cert_manager) {
      Out({"certificates", "mode"}) = "cert-manager";
      Take("scheduler.patch");  // HAMi's certificate job does not run with cert-manager
      return;
    }
    const auto patch = TakeBool("scheduler.patch.enabled");
    if (patch && !*patch) {
      // Neither cert-manager nor HAMi's job: the operator provides the Secret.
      Out({"certificates", "mode"}) = "external";
      Take("scheduler.patch");
      return;
    }
    ReportKeys("scheduler.patch",
               {"image", "imageNew", "priorityClassName", "podAnnotations", "nodeSelector",
                "tolerations", "runAsUser"},
               "HAMi's certificate job; tessera's chart makes the certificate itself "
               "(certificates.mode: helm)");
  }

  // HAMi has one device config for its scheduler and device plugin; tessera's chart has the
  // scheduler's (devices.nvidia) and the agent's node side (agent.devices.nvidia).
  void DeviceConfig() {
    const std::pair<const char*, const char*> names[] = {
        {"resourceName", "resourceCountName"},
        {"resourceMem", "resourceMemoryName"},
        {"resourceMemPercentage", "resourceMemoryPercentageName"},
        {"resourceCores", "resourceCoreName"},
        {"resourcePriority", "resourcePriorityName"}};
    for (const auto& [hami, tessera] : names) {
      if (const auto name = TakeString(hami)) Out({"devices", "nvidia", tessera}) = *name;
    }
    if (const auto name = Peek("resourceName"); name != nullptr && name->is_string()) {
      Out({"agent", "devices", "nvidia", "resourceCountName"}) = name->get<std::string>();
    }
    if (const auto overwrite = TakeBool("scheduler.overwriteEnv")) {
      Out({"devices", "nvidia", "overwriteEnv"}) = *overwrite;
    }
    for (const char* key : {"deviceSplitCount", "deviceMemoryScaling", "deviceCoreScaling"}) {
      const std::string path = std::string("devicePlugin.") + key;
      const Json* v = Take(path);
      if (v == nullptr) continue;
      if (!v->is_number()) {
        Report(path, "expected a number, got " + Quote(*v));
        continue;
      }
      Out({"devices", "nvidia", key}) = ToOrdered(*v);
      Out({"agent", "devices", "nvidia", key}) = ToOrdered(*v);
    }
    Carry("devicePlugin.preConfiguredDeviceMemory",
          {"agent", "devices", "nvidia", "preConfiguredDeviceMemory"});
    Carry("devicePlugin.enableNumaTopology", {"agent", "devices", "nvidia", "enableNumaTopology"});
    if (const auto disable = TakeBool("devicePlugin.disablecorelimit")) {
      Out({"agent", "devices", "nvidia", "disableCoreLimit"}) = *disable;
    }
    Carry("devices.nvidia.gpuCorePolicy", {"devices", "nvidia", "gpuCorePolicy"});
    Carry("devices.nvidia.libCudaLogLevel", {"agent", "devices", "nvidia", "libCudaLogLevel"});
    DeviceConfigContent();
  }

  // `device-config.content` replaces the device config HAMi's chart would write, so its keys
  // win over the values above.
  void DeviceConfigContent() {
    const std::string path = "device-config.content";
    const auto content = TakeString(path);
    if (!content) return;
    auto parsed = ParseYaml(*content, path);
    if (!parsed.ok() || !parsed->is_object()) {
      Report(path, parsed.ok() ? "expected a device config mapping" : parsed.error().message);
      return;
    }
    for (auto section = parsed->begin(); section != parsed->end(); ++section) {
      if (section.key() != "nvidia") {
        Report(path + ": " + section.key(), kNvidiaOnly);
        continue;
      }
      if (!section->is_object()) {
        Report(path + ": nvidia", "expected a mapping, got " + Quote(*section));
        continue;
      }
      for (auto it = section->begin(); it != section->end(); ++it) {
        const auto known = [&](const auto& keys) {
          return std::any_of(std::begin(keys), std::end(keys),
                             [&](const char* k) { return it.key() == k; });
        };
        if (!known(kTesseraDeviceKeys)) {
          Report(path + ": nvidia." + it.key(), "not a key of tessera's device config");
          continue;
        }
        Out({"devices", "nvidia", it.key().c_str()}) = ToOrdered(*it);
        if (known(kNodeSideDeviceKeys)) {
          Out({"agent", "devices", "nvidia", it.key().c_str()}) = ToOrdered(*it);
        }
      }
    }
  }

  void Agent() {
    const std::string d = "devicePlugin";
    CarryTyped(d + ".enabled", {"agent", "enabled"}, &Json::is_boolean, "true or false");
    if (const auto runtime_class = TakeString(d + ".runtimeClassName")) {
      Out({"agent", "runtimeClassName"}) = *runtime_class;
      Report(d + ".runtimeClassName",
             "carried to agent.runtimeClassName only: tessera's webhook does not set a "
             "runtimeClassName on GPU pods as HAMi's does");
    }
    TakeExpecting(d + ".createRuntimeClass", false,
                  "tessera's chart makes no RuntimeClass; agent.runtimeClassName must exist");
    TakeExpecting(d + ".migStrategy", "none",
                  "tessera makes MIG instances on the nodes agent.nodeConfig marks "
                  "`operatingmode: mig` (docs/agent.md)");
    TakeExpecting(d + ".passDeviceSpecsEnabled", false,
                  "tessera's agent passes device ids only (agent.deviceListStrategy)");
    if (const auto strategy = TakeString(d + ".deviceListStrategy")) {
      Out({"agent", "deviceListStrategy"}) = *strategy;
    }
    Carry(d + ".pluginPath", {"agent", "kubeletDevicePluginDir"});
    HamiCoreFolder();
    DeviceConfig();
    NodeConfiguration();
    if (const Json* tolerations = Take(d + ".tolerations")) {
      if (tolerations->is_array()) {
        // tessera's default toleration stays: GPU nodes are often tainted nvidia.com/gpu.
        OrderedJson list = OrderedJson::array(
            {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
        for (const auto& t : *tolerations) {
          if (std::find(list.begin(), list.end(), ToOrdered(t)) == list.end()) {
            list.push_back(ToOrdered(t));
          }
        }
        Out({"agent", "tolerations"}) = list;
      } else {
        Report(d + ".tolerations", "expected a list, got " + Quote(*tolerations));
      }
    }
    Carry(d + ".resources", {"agent", "resources"});
    TakeExpecting(d + ".hostNetwork", false, kAgentPodSecurity);
    TakeExpecting(d + ".updateStrategy",
                  Json{{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", 1}}}},
                  "tessera's agent DaemonSet always rolls with maxUnavailable 1");
    AgentArgs();
  }

  // HAMi's device plugin copies HAMi-core (libvgpu.so) to the host folder devicePlugin.libPath,
  // mounted at global.gpuHookPath/vgpu; tessera's agent mounts agent.hamiCoreDir at the same
  // path as on the host, so the two must agree for the ld.so.preload HAMi wrote to work.
  void HamiCoreFolder() {
    const auto lib_path = TakeString("devicePlugin.libPath");
    const auto hook_path = TakeString("global.gpuHookPath");
    const std::string folder = lib_path ? *lib_path : hook_path ? *hook_path + "/vgpu" : "";
    if (folder.empty()) return;
    Out({"agent", "hamiCoreDir"}) = folder;
    if (hook_path && *hook_path + "/vgpu" != folder) {
      Report("global.gpuHookPath",
             "\"" + *hook_path +
                 "\": tessera mounts HAMi-core at its host path (agent.hamiCoreDir, " + folder +
                 "), while HAMi's containers see it at " + *hook_path +
                 "/vgpu; the ld.so.preload HAMi wrote names that path");
    }
  }

  void NodeConfiguration() {
    const std::string n = "devicePlugin.nodeConfiguration";
    if (const Json* external = Take(n + ".externalConfigName")) {
      Report(n + ".externalConfigName",
             Quote(*external) + ": copy that ConfigMap's nodeconfig entries to agent.nodeConfig");
    }
    const auto config = TakeString(n + ".config");
    if (!config) return;
    auto parsed = ParseYaml(*config, n + ".config");
    const Json* entries = parsed.ok() ? codec::FindKey(*parsed, "nodeconfig") : nullptr;
    if (entries == nullptr || !entries->is_array()) {
      Report(n + ".config",
             parsed.ok() ? "expected JSON with a nodeconfig list" : parsed.error().message);
      return;
    }
    OrderedJson list = OrderedJson::array();
    for (size_t i = 0; i < entries->size(); ++i) {
      const Json& entry = (*entries)[i];
      const Json* name = entry.is_object() ? codec::FindKey(entry, "name") : nullptr;
      // HAMi's values.yaml ships this entry as an example of the format.
      if (name != nullptr && *name == "your-node-name") {
        Report(n + ".config: nodeconfig[" + std::to_string(i) + "]",
               "HAMi's example entry (your-node-name), not carried over");
        continue;
      }
      list.push_back(ToOrdered(entry));
    }
    if (!list.empty()) Out({"agent", "nodeConfig"}) = list;
  }

  // tessera's agent takes none of HAMi's device plugin flags but klog's verbosity, which
  // becomes its log level.
  void AgentArgs() {
    const std::string path = "devicePlugin.extraArgs";
    const Json* args = Take(path);
    if (args == nullptr) return;
    if (!args->is_array()) {
      Report(path, "expected a list, got " + Quote(*args));
      return;
    }
    for (size_t i = 0; i < args->size(); ++i) {
      const Json& arg = (*args)[i];
      const auto verbosity = KlogVerbosity(arg.is_string() ? arg.get<std::string>() : "");
      if (verbosity) {
        AppendArg({"agent", "extraArgs"},
                  std::string("--log-level=") + (*verbosity >= 4 ? "debug" : "info"));
      } else {
        Report(path + "[" + std::to_string(i) + "]",
               Quote(arg) +
                   ": a flag of HAMi's device plugin; tessera's agent flags are in "
                   "docs/agent.md (agent.extraArgs)");
      }
    }
  }

  // ---- what is left

  std::string ReasonFor(const std::string& path) const {
    for (const char* prefix : kOtherVendorPrefixes) {
      if (StartsWith(path, prefix)) return kNvidiaOnly;
    }
    const KnownSubtree* best = nullptr;
    for (const auto& known : kKnownSubtrees) {
      if (IsUnder(path, known.path) &&
          (best == nullptr ||
           std::string_view(known.path).size() > std::string_view(best->path).size())) {
        best = &known;
      }
    }
    return best != nullptr ? best->reason : "no tessera equivalent";
  }

  bool ReportedWhole(const std::string& path) const {
    if (std::any_of(std::begin(kOtherVendorPrefixes), std::end(kOtherVendorPrefixes),
                    [&](const char* p) { return StartsWith(path, p); })) {
      return true;
    }
    return std::any_of(std::begin(kKnownSubtrees), std::end(kKnownSubtrees),
                       [&](const KnownSubtree& k) { return IsUnder(path, k.path); });
  }

  bool ConsumedUnder(const std::string& path) const {
    return std::any_of(consumed_.begin(), consumed_.end(),
                       [&](const std::string& c) { return IsUnder(c, path); });
  }

  // Lists every key that sets something and was not taken, as high up as the whole subtree is
  // left: a known subtree as one key, anything else down to its leaves.
  void CollectUnmapped(const Json& v, const std::string& path) {
    if (consumed_.count(path) != 0 || !SetsSomething(v)) return;
    const bool taken_below = path.empty() || ConsumedUnder(path);
    if (v.is_object()) {
      const auto enabled = v.find("enabled");
      if (enabled != v.end() && *enabled == false && !taken_below) return;  // switched off
      if (taken_below || !ReportedWhole(path)) {
        for (auto it = v.begin(); it != v.end(); ++it) {
          CollectUnmapped(*it, path.empty() ? it.key() : path + "." + it.key());
        }
        return;
      }
    }
    unmapped_.push_back({path, ReasonFor(path)});
  }

  const Json& hami_;
  OrderedJson out_ = OrderedJson::object();
  std::set<std::string> consumed_;
  std::vector<UnmappedHamiKey> unmapped_;
};

void EmitValue(YAML::Emitter& out, const OrderedJson& v) {
  if (v.is_object()) {
    if (v.empty()) {
      out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
      return;
    }
    out << YAML::BeginMap;
    for (auto it = v.begin(); it != v.end(); ++it) {
      out << YAML::Key << it.key() << YAML::Value;
      EmitValue(out, *it);
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    if (v.empty()) {
      out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
      return;
    }
    out << YAML::BeginSeq;
    for (const auto& item : v) EmitValue(out, item);
    out << YAML::EndSeq;
  } else if (v.is_string()) {
    out << YAML::DoubleQuoted << v.get<std::string>();
  } else if (v.is_null()) {
    out << YAML::Null;
  } else {
    out << v.dump();  // numbers and booleans: plain scalars read back as what they are
  }
}

}  // namespace

Result<HamiValuesMigration> MigrateHamiValues(std::string_view hami_values_yaml,
                                              const std::string& what) {
  auto parsed = ParseYaml(hami_values_yaml, what);
  if (!parsed.ok()) return parsed.error();
  if (parsed->is_null()) parsed = Json::object();  // an empty file sets nothing
  if (!parsed->is_object()) {
    return Error{what + ": expected a mapping of HAMi chart values, got " +
                 std::string(parsed->type_name())};
  }
  return Converter(*parsed).Run();
}

std::string ValuesYaml(const OrderedJson& values) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetSeqFormat(YAML::Block);
  EmitValue(out, values);
  return std::string(out.c_str()) + "\n";
}

}  // namespace tessera::adapters
