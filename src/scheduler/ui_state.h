#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/state/cluster_state.h"

namespace tessera::scheduler {

// The /ui page's view of the cluster, as compact JSON (docs/ui.md). Strings that repeat
// (namespaces, GPU types, modes, MIG profile names) are one table, GPUs of one shape one entry
// of "kinds", and each node lists its own pods once, grouped by namespace:
//   {"strings":[...], "kinds":[[type$, mode$, count, totalMiB, totalCores, slices], ...],
//    "nodes":[{"name":..., "reason":..., "pods":[[ns$, name, name, ...], ...],
//              "gpus":[[index, uuid, kind#, used, usedMiB, usedCores,
//                       [[pod#, profile$, start, size], ...], [pod#, ...], [share$, ...]],
//              ...]}, ...],
//    "waiting":[[pod, message], ...]}
// $ indexes "strings"; pod# indexes the node's pods in order (the groups flattened). The
// [pod#...] array holds the pods sharing a shared GPU (or holding it whole, when their annotation
// is unreadable); the last array is each of those pods' share, in the same order, as a string
// "MiB/cores", or "whole" for a pod holding it whole (left out when the holders' array is
// empty). `waiting`: pods the last filter placed nowhere, with its message.
//
// The encoder keeps each node's JSON and re-encodes only nodes whose NodeState::change_stamp
// moved, so a poll costs about the nodes that changed, not the cluster. One encoder follows one
// ClusterState; its caller serialises Collect (the service's lock); Join needs no lock.
class UiStateEncoder {
 public:
  struct Snapshot {
    uint64_t version = 0;  // moves whenever the body would change
    std::string tables;    // `"strings":[...],"kinds":[...]`
    std::vector<std::shared_ptr<const std::string>> nodes;
    std::string waiting;  // the "waiting" array
    std::string Join() const;
  };

  Snapshot Collect(const state::ClusterState& state,
                   const std::map<std::string, std::string>& waiting);
  // Nodes whose JSON the last Collect encoded (the others were reused).
  size_t last_encoded() const { return last_encoded_; }
  // Entries of the string table. Being append-only, it keeps the namespace of every pod that
  // held a GPU since it was built, so it is built afresh once it holds more than twice the
  // strings the nodes' JSON uses (and more than kMinStringsBeforeRebuild): pods that come and go
  // (or that a client made up) cannot grow it without bound.
  size_t strings_size() const { return strings_.size(); }
  static constexpr size_t kMinStringsBeforeRebuild = 256;

 private:
  struct Fragment {
    uint64_t stamp = 0;
    uint64_t seen = 0;  // the last Collect that listed the node
    std::shared_ptr<const std::string> json;
    std::vector<size_t> strings;  // the string indices `json` uses, each once
  };
  using Kind = std::array<int64_t, 6>;

  // The node's JSON; the string indices it uses into `strings`.
  std::shared_ptr<const std::string> EncodeNode(const state::ClusterState& state,
                                                const state::NodeState& node,
                                                std::vector<size_t>* strings);
  size_t StringIndex(const std::string& s, std::vector<size_t>* used);
  size_t KindIndex(const Kind& kind);
  // Counts the strings a fragment uses in (+1) or out (-1) of strings_in_use_.
  void CountUses(const std::vector<size_t>& strings, int delta);
  // Forgets the tables and every node's JSON: the next Collect encodes all nodes afresh.
  void Reset();

  // Append-only, so a kept fragment's indices stay right.
  std::vector<std::string> strings_;
  std::unordered_map<std::string, size_t> string_index_;
  std::vector<Kind> kinds_;
  std::map<Kind, size_t> kind_index_;
  std::string tables_;
  size_t tables_strings_ = 0;
  size_t tables_kinds_ = 0;
  std::vector<uint32_t> string_uses_;  // per string: the fragments using it
  size_t strings_in_use_ = 0;          // strings some fragment uses

  std::unordered_map<std::string, Fragment> fragments_;
  uint64_t collects_ = 0;
  std::string last_waiting_;
  uint64_t version_ = 0;
  size_t last_encoded_ = 0;
};

// The state in one call, from scratch (tests and one-off callers).
std::string EncodeUiState(const state::ClusterState& state,
                          const std::map<std::string, std::string>& waiting);

}  // namespace tessera::scheduler
