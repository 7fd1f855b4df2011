#include "agent/allocator.h"

#include <algorithm>

#include "core/codec/mig_allocations.h"
#include "core/codec/node_lock.h"
#include "core/codec/pod_devices.h"
#include "core/model/annotations.h"
#include "core/node/mig_claims.h"

namespace tessera::agent {

namespace ann = model::annotations;

namespace {

const std::string kToAllocate(ann::kDevicesToAllocate);
const std::string kMigAllocations(ann::kMigAllocations);
const std::string kBindPhase(ann::kBindPhase);
const std::string kBindTime(ann::kBindTime);
const std::string kAssignedNode(ann::kAssignedNode);
const std::string kNodeLock(ann::kNodeLock);

bool HasNvidia(const codec::PodDevices& devices) {
  return std::any_of(devices.begin(), devices.end(), [](const auto& c) { return !c.empty(); });
}

// The first container entry that still has devices, or -1.
int NextEntry(const codec::PodDevices& devices) {
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!devices[i].empty()) return static_cast<int>(i);
  }
  return -1;
}

int64_t BindTime(const model::Pod& pod) {
  const std::string* text = pod.Annotation(kBindTime);
  if (text == nullptr) return 0;
  int64_t v = 0;
  for (char c : *text) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (c - '0');
  }
  return v;
}

// The container of annotation entry `slot` (init containers first, as HAMi counts them).
const model::Container* ContainerAt(const model::Pod& pod, int slot) {
  if (slot < 0) return nullptr;
  const auto init = static_cast<int>(pod.init_containers.size());
  if (slot < init) return &pod.init_containers[slot];
  if (slot - init < static_cast<int>(pod.containers.size())) return &pod.containers[slot - init];
  return nullptr;
}

std::string ContainerName(const model::Pod& pod, int slot) {
  const model::Container* c = ContainerAt(pod, slot);
  return c == nullptr ? "" : c->name;
}

}  // namespace

Allocator::Allocator(NodeApi& api, MigManager& mig, AllocatorConfig config,
                     std::function<std::string()> new_uuid, HamiCoreFolders* folders,
                     MigDeviceExport* mig_export)
    : api_(api),
      mig_(mig),
      config_(std::move(config)),
      new_uuid_(std::move(new_uuid)),
      folders_(folders),
      mig_export_(mig_export) {}

void Allocator::SetMigGpus(std::set<std::string> gpu_uuids) {
  std::lock_guard lock(mu_);
  mig_gpus_ = std::move(gpu_uuids);
}

ApiResult<model::Pod> Allocator::ChoosePod(const std::vector<model::Pod>& pods, size_t count) {
  std::vector<const model::Pod*> candidates;
  std::vector<codec::ContainerDevices> wants;  // each candidate's next container entry
  for (const auto& pod : pods) {
    const std::string* phase = pod.Annotation(kBindPhase);
    const std::string* assigned = pod.Annotation(kAssignedNode);
    const std::string* text = pod.Annotation(kToAllocate);
    if (phase == nullptr || *phase != "allocating" || text == nullptr) continue;
    if (assigned == nullptr || *assigned != config_.node_name) continue;
    if (pod.IsTerminal() || pod.deleting) continue;
    auto devices = codec::DecodePodDevices(*text);
    if (!devices.ok()) continue;
    int next = NextEntry(devices.value());
    if (next < 0 || devices.value()[next].size() != count) continue;
    candidates.push_back(&pod);
    wants.push_back(devices.value()[next]);
  }
  if (candidates.empty()) {
    return agent::ApiFailure(404, "no pod on node " + config_.node_name + " is waiting for " +
                                      std::to_string(count) + " GPU(s) (bind-phase allocating)");
  }
  if (candidates.size() > 1) {
    // HAMi's node lock, when a scheduler holds it, names the pod; otherwise the oldest bind.
    auto node = api_.GetNode();
    if (node.ok()) {
      if (const std::string* value = node->Annotation(kNodeLock)) {
        if (const auto lock = codec::ParseNodeLock(*value)) {
          for (const auto* c : candidates) {
            if (lock->HeldBy(c->ns, c->name)) return *c;
          }
        }
      }
    }
    // The kubelet does not say which pod it admits. Without a lock naming one, a guess is
    // harmless only when every candidate would get the same: the same GPUs, memory and cores,
    // and no MIG instance (each pod's is its own). Otherwise one pod's devices would go to
    // another's container, and its instance destroyed under it when the first pod ends.
    bool interchangeable = true;
    for (size_t i = 0; i < candidates.size() && interchangeable; ++i) {
      interchangeable = wants[i] == wants.front();
      for (const auto& d : wants[i]) interchangeable = interchangeable && !mig_gpus_.count(d.uuid);
    }
    if (!interchangeable) {
      std::string names;
      for (const auto* c : candidates) names += (names.empty() ? "" : ", ") + c->Key();
      return Error{"cannot tell which pod the kubelet is admitting: pods " + names +
                       " wait for different devices on node " + config_.node_name +
                       " and no node lock (" + kNodeLock +
                       ") names one; run tessera serve with --node-lock hami (deploy/ does), "
                       "which binds one pod per node at a time",
                   ErrorCode::kConflict};
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const auto* a, const auto* b) { return BindTime(*a) < BindTime(*b); });
  }
  return *candidates.front();
}

Result<std::vector<node::ContainerResponse>> Allocator::Allocate(
    const std::vector<std::vector<std::string>>& container_requests) {
  std::lock_guard lock(mu_);
  if (container_requests.empty()) return std::vector<node::ContainerResponse>{};
  const size_t count = container_requests.front().size();
  // One read of the node's pods per Allocate: the informer's cache, and one list from the API
  // server only when the cache does not show the pod (it may lag the scheduler's bind).
  auto pods = api_.PodsOnNode(false);
  ApiResult<model::Pod> pod = pods.ok() ? ChoosePod(pods.value(), count) : pods.error();
  if (!pod.ok()) {
    pods = api_.PodsOnNode(true);
    pod = pods.ok() ? ChoosePod(pods.value(), count) : pods.error();
  }
  if (!pod.ok()) return Error{"Allocate on node " + config_.node_name + ": " + pod.error().message};
  return AllocateFor(pod.value(), pods.value(), container_requests);
}

Result<std::vector<node::ContainerResponse>> Allocator::AllocateFor(
    const model::Pod& pod, const std::vector<model::Pod>& pods_on_node,
    const std::vector<std::vector<std::string>>& requests) {
  const std::string who = "pod " + pod.Key();
  auto devices = codec::DecodePodDevices(*pod.Annotation(kToAllocate));
  if (!devices.ok()) {
    const std::string m = who + ": annotation " + kToAllocate + ": " + devices.error().message;
    Fail(pod, m);
    return Error{m};
  }
  codec::PodDevices remaining = devices.value();
  std::vector<codec::MigAllocation> mig_allocations;
  bool mig_changed = false;
  if (const std::string* text = pod.Annotation(kMigAllocations); text != nullptr) {
    auto decoded = codec::DecodeMigAllocations(*text);
    if (!decoded.ok()) {
      const std::string m =
          who + ": annotation " + kMigAllocations + ": " + decoded.error().message;
      Fail(pod, m);
      return Error{m};
    }
    mig_allocations = std::move(decoded.value());
  }

  std::vector<node::ContainerResponse> responses;
  for (const auto& request : requests) {
    const int slot = NextEntry(remaining);
    const std::string container = ContainerName(pod, slot);
    if (slot < 0 || container.empty()) {
      const std::string m = who + ": no container is left to allocate devices to";
      Fail(pod, m);
      return Error{m};
    }
    const std::string where = who + " container " + container;
    const codec::ContainerDevices entry = remaining[slot];
    if (entry.size() != request.size()) {
      const std::string m = where + ": device number not matched (annotation " +
                            std::to_string(entry.size()) + ", kubelet " +
                            std::to_string(request.size()) + ")";
      Fail(pod, m);
      return Error{m};
    }
    remaining[slot].clear();
    const size_t on_mig = static_cast<size_t>(std::count_if(
        entry.begin(), entry.end(), [&](const auto& d) { return mig_gpus_.count(d.uuid) > 0; }));
    if (on_mig > 0 && on_mig != entry.size()) {
      const std::string m = where + ": mixes MIG and shared GPUs, which one container cannot use";
      Fail(pod, m);
      return Error{m};
    }
    if (on_mig == 0) {
      const bool disable_control = ContainerAt(pod, slot)->cuda_disable_control;
      // HAMi-core's cache and lock folders are mounted from the host: made before the answer,
      // so the runtime never creates them root-only, nor fails on a missing one.
      if (!disable_control && folders_ != nullptr) {
        if (auto made = folders_->Prepare(pod.uid, container); !made) {
          const std::string m = where + ": HAMi-core's folders: " + made.message();
          Fail(pod, m);
          return Error{m};
        }
      }
      responses.push_back(node::SharedGpuResponse(entry, config_.hami_core, config_.strategy,
                                                  pod.uid, container, disable_control,
                                                  new_uuid_()));
      continue;
    }
    // MIG: realize this slot's instances at the placements the scheduler reserved.
    node::PodMigClaim claim{pod.Key(), pod.uid, mig_allocations};
    const node::NodeClaims others = node::ClaimsOnNode(pods_on_node, config_.node_name);
    auto realized = mig_.Realize(claim, slot, others);
    if (!realized.ok()) {
      Fail(pod, realized.error().message);
      return realized.error();
    }
    std::vector<std::string> ids;
    for (size_t k = 0; k < realized->size(); ++k) {
      const auto& got = (*realized)[k].allocation;
      if (got.gpu_uuid != entry[k].uuid) {
        const std::string m = where + ": hami.io/vgpu-mig-allocations device " +
                              std::to_string(got.device_index) + " is on " + got.gpu_uuid +
                              " but the devices annotation says " + entry[k].uuid;
        Fail(pod, m);
        return Error{m};
      }
      ids.push_back(got.runtime->mig_uuid);
      for (auto& a : mig_allocations) {
        if (a.container_index == got.container_index && a.device_index == got.device_index) {
          mig_changed = mig_changed || a.runtime != got.runtime;
          a.runtime = got.runtime;
        }
      }
    }
    // With CDI names, the runtime must find each instance in a spec: a clear error now rather
    // than a container that cannot start.
    if (mig_export_ != nullptr) {
      if (auto exported = mig_export_->Export(ids); !exported) {
        const std::string m = where + ": " + exported.message();
        Fail(pod, m);
        return Error{m};
      }
    }
    node::ContainerResponse r;
    node::AddDeviceIds(ids, config_.strategy, new_uuid_(), &r);
    responses.push_back(std::move(r));
  }

  // Record the outcome: the popped entries, the MIG identities, and success once no container
  // is left; a compare-and-swap, retried on a fresh read when the pod changed meanwhile.
  AnnotationPatch patch;
  patch[kToAllocate] = codec::EncodePodDevices(remaining);
  if (mig_changed) patch[kMigAllocations] = codec::EncodeMigAllocations(mig_allocations);
  if (!HasNvidia(remaining)) patch[kBindPhase] = "success";
  std::string rv = pod.resource_version;
  for (int attempt = 0;; ++attempt) {
    auto patched = api_.PatchPod(pod, patch, rv);
    if (patched.ok()) break;
    if (patched.error().code != ErrorCode::kConflict || attempt + 1 >= config_.patch_attempts) {
      const std::string m = who + ": recording the allocation failed: " + patched.error().message;
      Fail(pod, m);
      return Error{m};
    }
    // Only this pod is read again (from the API server), not the node's pods.
    auto now = api_.ReadPod(pod.ns, pod.name);
    if (now.ok() && !now->has_value()) {
      return Error{who + ": the pod disappeared while it was being allocated"};
    }
    if (now.ok() && now.value()->uid != pod.uid) {
      return Error{who +
                   ": the pod was replaced by another of the same name while it was being "
                   "allocated"};
    }
    if (!now.ok()) {
      return Error{who + ": re-reading the pod after a conflict failed: " + now.error().message};
    }
    rv = now.value()->resource_version;
  }
  if (!HasNvidia(remaining)) ReleaseNodeLock(pod);
  return responses;
}

std::vector<std::vector<std::string>> Allocator::Preferred(
    const std::vector<node::PreferredRequest>& requests) {
  std::lock_guard lock(mu_);
  std::vector<std::vector<std::string>> out(requests.size());
  if (requests.empty()) return out;
  auto pods = api_.PodsOnNode(false);
  if (!pods.ok()) return out;  // the kubelet then chooses itself
  auto pod = ChoosePod(pods.value(), static_cast<size_t>(std::max(0, requests.front().size)));
  if (!pod.ok()) return out;
  auto devices = codec::DecodePodDevices(*pod->Annotation(kToAllocate));
  if (!devices.ok()) return out;
  std::vector<const codec::ContainerDevices*> entries;
  for (const auto& c : devices.value()) {
    if (!c.empty()) entries.push_back(&c);
  }
  for (size_t i = 0; i < requests.size() && i < entries.size(); ++i) {
    out[i] = node::PreferredReplicas(*entries[i], requests[i]);
  }
  return out;
}

void Allocator::Fail(const model::Pod& pod, const std::string& message) {
  (void)api_.PatchPod(pod, {{kBindPhase, "failed"}}, "");
  ReleaseNodeLock(pod);
  api_.PodEvent(pod, "FailedAllocateGPU", message, true);
}

void Allocator::ReleaseNodeLock(const model::Pod& pod) {
  auto node = api_.GetNode();
  if (!node.ok()) return;
  const std::string* value = node->Annotation(kNodeLock);
  if (value == nullptr) return;
  // A lock owned by another pod (or unreadable) stays; a legacy lock (time only) is ours.
  const auto lock = codec::ParseNodeLock(*value);
  const bool owned = lock && (lock->legacy() || lock->HeldBy(pod.ns, pod.name));
  if (owned) (void)api_.PatchNode({{kNodeLock, std::nullopt}}, node->resource_version);
}

}  // namespace tessera::agent
