#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/codec/foreign_mig.h"
#include "core/codec/mig_allocations.h"
#include "core/codec/pod_devices.h"
#include "core/common/result.h"
#include "core/config/scheduler_config.h"
#include "core/mig/layout.h"
#include "core/model/device.h"
#include "core/model/pod.h"
#include "core/model/resource_quota.h"
#include "core/state/quota_book.h"

namespace tessera::state {

// What is in use on one GPU.
struct DeviceUsage {
  int32_t used = 0;              // tasks (slots)
  int64_t used_mem = 0;          // MiB
  int32_t used_cores = 0;        // percent
  mig::Layout layout;            // MIG instances' occupancy
  int32_t fail_closed = 0;       // pods whose annotations contradict this GPU: it is not used
  int32_t layout_conflicts = 0;  // MIG instances that break the GPU's placement rules
  // Memory slices held by MIG instances tessera did not create (tessera.io/foreign-mig-
  // instances); part of `layout` too. Kept apart so failure reasons can name them.
  uint32_t foreign_slices = 0;
  bool Trusted() const { return fail_closed == 0 && layout_conflicts == 0; }
  bool operator==(const DeviceUsage&) const = default;
};

// One MIG instance held on a GPU.
struct MigInstance {
  std::string pod_key;  // empty for a foreign instance
  int profile = -1;
  std::string profile_name;
  model::Placement placement;
  // Not tessera's: the agent reported it in tessera.io/foreign-mig-instances. It holds its
  // slices for as long as the node's annotation lists it; no pod owns it.
  bool foreign = false;
};

// A pod's hold on one node, as its allocation annotations describe it.
struct PodReservation {
  std::string key;  // namespace/name
  std::string uid;
  std::string node;
  int num_init = 0;
  codec::PodDevices devices;              // per allocation slot
  std::vector<codec::MigAllocation> mig;  // MIG instances
  int64_t cpu_milli = 0;                  // host CPU requested (for fragmentation scoring)
  // GPUs the pod names in an annotation that does not decode: it holds them, but not exactly
  // what, so nobody else may use them (CardNotHealth) until the pod goes away. Never freed
  // because part of an annotation is unreadable.
  std::vector<std::string> held_gpus{};
  std::string problem{};  // why held_gpus is not empty: the decode error, naming pod and annotation
  // What preemption ranks and protects victims by (core/sched/preemption.h): the pod's priority
  // and its labels (PodDisruptionBudgets select by them).
  int32_t priority = 0;
  std::map<std::string, std::string> labels{};
  // The kind of the pod's controlling owner ("" when none): who recreates it if it is evicted.
  std::string controller_kind{};
};

// One GPU as the filter reads it first (NodeState::gpu_summaries): for a MIG GPU what the MIG
// plan keys on, for a shared one what sched::RankBound asks of it.
struct GpuSummary {
  // The GPU's MIG rules, as caches key them (GpuMigModel::RulesIdentity: its layout table);
  // nullptr when it has no table or is not in MIG mode (then the plan reads the GPU's own
  // objects).
  const void* rules = nullptr;
  int32_t layout_id = -1;  // the layout's index in the table; -1: not a state of it
  // Not in MIG mode: what it has free (MiB and percent, not below 0).
  int32_t free_mem = 0;
  int32_t free_cores = 0;
  int32_t total_mem = 0;  // not in MIG mode: its memory (MiB)
  bool open = false;      // in MIG mode, healthy, trusted, not cordoned
};

// Sums over a node's GPUs, as HAMi's node score adds them up (NodeScoreAdding).
struct NodeTotals {
  int64_t slots = 0;  // device counts
  int64_t cores = 0;
  int64_t mem = 0;
  int64_t used = 0;
  int64_t used_cores = 0;
  int64_t used_mem = 0;
  bool idle = true;  // no GPU in use
  // The least memory of a GPU not in MIG mode (0: none has any), MiB: the most of one GPU a
  // request can take is its memory over this (sched::RankBound).
  int32_t smallest_shared_mem = 0;
};

// What one MIG GPU adds to ClusterState::mig_fill().
struct MigFillPart {
  const void* rules = nullptr;  // mig::GpuMigModel::RulesIdentity
  int32_t used_slices = 0;
  int32_t slices = 0;
  mig::ProfileRoom room{};  // of its layout (the layout table's lookup)
};

// One registered node and the usage of its GPUs.
struct NodeState {
  std::string name;
  model::Node node;
  // Empty when the node is usable; otherwise why it is not ("node unregistered", a decode error).
  std::string unusable_reason;
  std::vector<model::GpuDevice> devices;
  std::vector<mig::GpuMigModel> mig_models;  // one per device
  // The node-register annotation was decoded into devices and mig_models and has not
  // changed since: an update that leaves it as it was keeps them (no JSON parse per heartbeat).
  bool registration_decoded = false;
  std::string registration_error;  // why the registration did not decode; empty when it did
  // The node's tessera.io/foreign-mig-instances, decoded (MIG instances tessera did not create;
  // they are in `instances` on the GPUs in MIG mode), or why it did not decode: the node is
  // then unusable with that reason.
  std::vector<codec::ForeignMigInstance> foreign_mig;
  std::string foreign_mig_error;
  model::PairScores pair_scores;
  std::set<std::string> cordoned;
  std::vector<DeviceUsage> usage;
  std::vector<std::vector<MigInstance>> instances;  // per device
  std::set<std::string> pods;                       // keys of pods reserved here
  // Nodes whose GPUs are alike in everything but their UUIDs (type, memory, mode, health,
  // cordon, MIG profiles) share a spec id: with equal usage they answer every pod alike.
  int spec_id = -1;
  // Hash of spec_id, usage and free CPU, kept current by ClusterState: nodes with equal
  // signatures are (up to a 64-bit hash collision, checked by SameAs) in the same state.
  uint64_t signature = 0;
  // Nodes in the same state (SameAs, checked exactly) share a state class, kept current by
  // ClusterState: an index below ClusterState::state_class_bound(), reused once no node is in
  // that state. -1 only for a NodeState that no ClusterState holds.
  int state_class = -1;
  // model::UuidBits of every device, or'd, kept by ClusterState (0: not worked out): the filter's
  // first test of whether a pod names one of the node's GPUs (next to state_class: one
  // cache line for both).
  uint64_t gpu_uuid_bits = 0;
  // Position in ClusterState::node_list() (name order), kept current by ClusterState.
  int name_order = -1;
  // A fixed pseudo-random position of the node (StableHash of its name), set by ClusterState:
  // the order in which the scheduler fills nodes that are equally good for a pod.
  uint64_t tie_order = 0;
  // Changes whenever anything about the node or its usage does (a ClusterState-wide counter,
  // so a node removed and added again never repeats a stamp): readers that keep something
  // derived per node (the /ui state) redo only the nodes whose stamp moved.
  uint64_t change_stamp = 0;
  // What this node's MIG GPUs added to ClusterState::mig_fill() when last counted, so that a
  // change takes back exactly that.
  std::vector<MigFillPart> mig_fill_parts;
  std::vector<std::string> types_upper;  // per device, for type filters
  bool any_mig = false;                  // some device is in MIG mode
  bool all_mig = false;                  // it has devices, every one in MIG mode
  int64_t max_free_mem = 0;              // MiB, the most any one device has free
  // Derived from the devices and their usage by ClusterState whenever either changes, and kept
  // in two small blocks, so that ranking a node reads them instead of every GPU's device, model
  // and usage objects (a cluster's filter pass is bound by those reads). `summaries_current`
  // is false for a NodeState changed by hand (a copy whose usage was edited): readers then
  // walk the devices.
  std::vector<GpuSummary> gpu_summaries;  // per device
  NodeTotals totals;
  bool summaries_current = false;
  std::optional<int64_t> cpu_allocatable_milli;  // from the Node object, when it says
  int64_t cpu_used_milli = 0;                    // by the pods reserved here

  bool usable() const { return unusable_reason.empty(); }
  // Free host CPU as SameAs compares it (0 minus the used CPU when allocatable is unknown).
  int64_t CpuFreeKey() const { return cpu_allocatable_milli.value_or(0) - cpu_used_milli; }
  // Same devices (but for UUIDs), same usage, same free CPU.
  bool SameAs(const NodeState& other) const;
  int DeviceIndex(const std::string& uuid) const;
};

// The cluster as the scheduler sees it, kept incrementally: adding or removing a pod touches
// only the GPUs it holds; changing a node re-applies only that node's pods.
class ClusterState {
 public:
  explicit ClusterState(config::SchedulerConfig config)
      : config_(std::move(config)), quotas_(config_.nvidia) {}
  // A copy is independent of the original (what-if questions: explain); node_list() points into
  // the copy's own nodes.
  ClusterState(const ClusterState& other);
  ClusterState& operator=(const ClusterState& other);
  ClusterState(ClusterState&&) noexcept = default;
  ClusterState& operator=(ClusterState&&) noexcept = default;
  // A copy holding only `names` (unknown ones skipped) and their pods, with the same quotas and
  // rules: what-if questions about a few nodes, without copying the cluster.
  ClusterState Subset(const std::vector<std::string>& names) const;

  // Adds or replaces a node; its register annotation is decoded here. A malformed annotation
  // makes only this node unusable, with the decode error as the reason.
  void UpsertNode(const model::Node& node);
  void RemoveNode(const std::string& name);
  // Keeps a node unusable with `reason` whatever its annotations say (not live, not selected),
  // until cleared with an empty reason. Its pods stay counted.
  void SetNodeBlocked(const std::string& name, const std::string& reason);

  // GPU quotas per namespace; pods' use is counted as they are added and removed. Returns the
  // quota's unusable limits, named (the others apply).
  std::vector<std::string> UpsertQuota(const model::ResourceQuota& quota) {
    return quotas_.Upsert(quota);
  }
  void RemoveQuota(const std::string& ns, const std::string& name) { quotas_.Remove(ns, name); }
  const QuotaBook& quotas() const { return quotas_; }

  // Adds a pod's reservation, replacing the pod's previous one.
  void AddPod(PodReservation reservation);
  // Removes a pod's reservation and returns it (nullopt if the pod held nothing).
  std::optional<PodReservation> RemovePod(const std::string& key);

  // The reservation written in a pod's annotations, when it has one (hami.io/vgpu-node, or
  // the pod's node when that annotation is missing, plus hami.io/vgpu-devices-allocated or
  // hami.io/vgpu-mig-allocations). What decodes is counted exactly; the GPUs named by what does
  // not decode are held_gpus, with the decode error as `problem`. Never an error.
  static Result<std::optional<PodReservation>> ReservationFromAnnotations(const model::Pod& pod);

  // A MIG GPU's layout and conflicts from its instances: tessera's first, checked against the
  // GPU's rules; then the foreign ones, which only add their slices (the hardware holds them,
  // whatever the registration lists).
  static void RebuildLayout(NodeState& node, int device);
  // The layout of a MIG GPU with only tessera's instances: what it would be without the
  // foreign ones (failure reasons say when those are what a pod does not fit for).
  static mig::Layout LayoutWithoutForeign(const NodeState& node, int device);

  const std::map<std::string, NodeState>& nodes() const { return nodes_; }
  // The nodes by name, as a flat list (cheaper to walk than the map).
  const std::vector<const NodeState*>& node_list() const { return node_list_; }
  const NodeState* node(const std::string& name) const;
  const PodReservation* pod(const std::string& key) const;
  const std::map<std::string, PodReservation>& pods() const { return pods_; }
  const config::SchedulerConfig& config() const { return config_; }
  // One more than the largest NodeState::state_class (for arrays indexed by it); at most the
  // largest number of distinct node states the cluster has held at once.
  size_t state_class_bound() const { return classes_.size(); }
  // Changes whenever a node is added or removed, or the state is assigned another's: what
  // lookups remembered by name (NodeLookup) check before trusting a node's address.
  uint64_t node_set_version() const { return node_set_version_.value(); }

  // The MIG GPU models registered, by GPU type: how many GPUs of the type are in MIG mode, and
  // the rules of the first of them seen. Kept as nodes come, change and go, so that readers
  // asking per pod (the webhook's near-miss warnings) walk the types, not the nodes.
  struct MigKind {
    int gpus = 0;
    mig::GpuMigModel model;
  };
  const std::map<std::string, MigKind>& mig_kinds() const { return mig_kinds_; }

  // Per MIG rules (GpuMigModel::RulesIdentity; GPUs in MIG mode whose rules have a layout
  // table): the memory slices and how many of them are taken, by any instance (foreign ones
  // too), and per profile the room its GPUs keep (instances of that profile alone that could
  // still be placed, summed). Kept as nodes and pods change: what the MIG plan reads for how
  // full each model is and how much room it keeps for each profile.
  struct MigFill {
    int64_t used_slices = 0;
    int64_t slices = 0;
    std::array<int64_t, mig::kMaxProfiles> room{};
  };
  const std::map<const void*, MigFill>& mig_fill() const { return mig_fill_; }
  // Pods that hold MIG instances.
  int64_t mig_pods() const { return mig_pods_; }

 private:
  // Bumped on every change of the node set; an assignment also bumps it past both sides, so
  // that no assigned state reads as unchanged.
  class NodeSetVersion {
   public:
    NodeSetVersion() = default;
    NodeSetVersion(const NodeSetVersion&) = default;
    NodeSetVersion(NodeSetVersion&&) noexcept = default;
    NodeSetVersion& operator=(const NodeSetVersion& other) {
      value_ = std::max(value_, other.value_) + 1;
      return *this;
    }
    NodeSetVersion& operator=(NodeSetVersion&& other) noexcept {
      value_ = std::max(value_, other.value_) + 1;
      return *this;
    }
    ~NodeSetVersion() = default;
    uint64_t value() const { return value_; }
    void Bump() { ++value_; }

   private:
    uint64_t value_ = 0;
  };

  struct Applied {
    int device = -1;
    int32_t used = 0;
    int64_t mem = 0;
    int32_t cores = 0;
    int32_t fail_closed = 0;
  };
  void Apply(NodeState& node, const PodReservation& pod);
  void Unapply(NodeState& node, const std::string& key);
  // The foreign MIG instances of node.foreign_mig into its GPUs' instances and layouts.
  static void ApplyForeign(NodeState& node);
  // Decodes tessera.io/foreign-mig-instances (nullptr: none) into foreign_mig or its error.
  static void DecodeForeignMig(const std::string* text, NodeState& node);
  void ResetUsage(NodeState& node);

  // One node state, as SameAs compares it.
  struct StateClass {
    uint64_t signature = 0;
    int spec_id = -1;
    std::vector<DeviceUsage> usage;
    bool cpu_known = false;
    int64_t cpu_free = 0;  // NodeState::CpuFreeKey
    int members = 0;       // nodes in this state; 0 = free for reuse
    bool Matches(const NodeState& node) const;
  };

  int SpecId(const NodeState& node);
  // Decodes the node-register annotation (nullptr: none) into the node's devices, MIG models
  // and type keys, or its registration_error.
  void DecodeRegistration(const std::string* reg, NodeState& node);
  // The layout table of a MIG model, built on first use and shared by every GPU with the same
  // rules (a handful of models per cluster).
  std::shared_ptr<const mig::LayoutTable> LayoutTableFor(const mig::GpuMigModel& model);
  // Recomputes the node's signature and moves it to the class of its state.
  void RefreshSignature(NodeState& node);
  // max_free_mem, gpu_summaries and totals, from the devices and their usage.
  static void RefreshSummaries(NodeState& node);
  void ReleaseClass(int id);
  void RebuildNodeList();
  // The node just added to nodes_ takes its place in node_list_ (no walk of the map, no hashing
  // of the other names: registering n nodes one by one stays cheap).
  void AddToNodeList(NodeState& node);
  void RemoveFromNodeList(const NodeState& node);
  // Counts `node`'s MIG GPUs into mig_kinds_ (`delta` +1) or out of it (-1).
  void CountMigKinds(const NodeState& node, int delta);
  // Takes `node`'s last counted part out of mig_fill_ and, unless `removed`, counts it again as
  // its GPUs are now.
  void CountMigFill(NodeState& node, bool removed);

  config::SchedulerConfig config_;
  QuotaBook quotas_;
  std::map<std::string, std::string> blocked_;  // node -> reason (SetNodeBlocked)
  std::map<std::string, int> spec_ids_;         // canonical device description -> id
  std::map<std::string, std::shared_ptr<const mig::LayoutTable>> layout_tables_;  // by RulesKey
  std::map<std::string, NodeState> nodes_;
  std::vector<const NodeState*> node_list_;
  // nodes_ by hash, for node(): a filter looks up every candidate name (thousands per request).
  std::unordered_map<std::string, const NodeState*> by_name_;
  std::map<std::string, PodReservation> pods_;
  std::map<std::string, std::vector<Applied>> applied_;  // by pod key
  std::vector<StateClass> classes_;                      // by NodeState::state_class
  std::vector<int> free_classes_;                        // ids with no member
  std::unordered_multimap<uint64_t, int> classes_by_signature_;
  uint64_t last_change_stamp_ = 0;  // NodeState::change_stamp's source
  NodeSetVersion node_set_version_;
  std::map<std::string, MigKind> mig_kinds_;  // by GPU type
  std::map<const void*, MigFill> mig_fill_;
  int64_t mig_pods_ = 0;
};

}  // namespace tessera::state
