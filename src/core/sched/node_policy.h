#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/result.h"

namespace tessera::sched {

// The score phase's plugins for nodes. Each gives a node that fits a score, higher better; a
// node policy adds them up with weights, as kube-scheduler adds its score plugins.
enum class NodeScorePlugin : uint8_t {
  // Minus the expected fragmentation the pod adds for the demand mix, in steps of 0.04 GPU
  // (for a node placed by the MIG plan: minus its placeability drop, in steps). Comes with
  // tessera's ties: a node in use before an idle one, then a fixed node order (FGD's), and for
  // MIG plans the fullest node.
  kFragmentation,
  // HAMi's node score before the pod (hami-protocol.md 7.1): how full the node's GPUs are.
  kHamiNodeScore,
  // tessera's fullness after the pod: HAMi's node score with the pod's devices added.
  kFullness,
};
inline constexpr int kNodeScorePluginCount = 3;

struct NodeScorePluginInfo {
  NodeScorePlugin plugin;
  std::string_view name;  // as written in a policy
  std::string_view what;  // one line, for `tessera plugins`
};
// The node score plugins, in the order above.
std::span<const NodeScorePluginInfo> NodeScorePlugins();
std::string_view NameOf(NodeScorePlugin plugin);

struct NodeScoreTerm {
  NodeScorePlugin plugin = NodeScorePlugin::kFragmentation;
  double weight = 1;
  bool operator==(const NodeScoreTerm&) const = default;
};

// How nodes that fit are ranked: the highest weighted sum of its plugins' scores first; equal
// sums go, where the policy counts fragmentation, to tessera's ties, then to the first node by
// name. Named `tessera` (the default), HAMi's `binpack` and `spread`, or defined by an operator.
// A fixed array, so that copying it into each pod's preferences allocates nothing.
class NodePolicy {
 public:
  NodePolicy() : NodePolicy(Tessera()) {}
  static NodePolicy Tessera();  // fragmentation:1
  static NodePolicy Binpack();  // hami-node-score:1 (HAMi's binpack: the fullest node first)
  static NodePolicy Spread();   // hami-node-score:-1 (HAMi's spread: the emptiest first)

  const std::string& name() const { return name_; }
  std::span<const NodeScoreTerm> terms() const { return {terms_.data(), count_}; }
  // The policy counts fragmentation: tessera's node ranking, with its ties.
  bool counts_fragmentation() const { return counts_fragmentation_; }
  // Fragmentation is the only plugin and counts positively: nodes rank by its steps alone, so
  // the rank bounds (RankBound, MigRankBound) apply.
  bool fragmentation_only() const {
    return count_ == 1 && terms_[0].plugin == NodeScorePlugin::kFragmentation &&
           terms_[0].weight > 0;
  }
  // "name=plugin:weight,..." as accepted by ParseNodePolicyDefinition.
  std::string Definition() const;

  bool operator==(const NodePolicy& other) const {
    return name_ == other.name_ && count_ == other.count_ && terms_ == other.terms_;
  }

 private:
  NodePolicy(std::string name, std::span<const NodeScoreTerm> terms);
  friend Result<NodePolicy> ParseNodePolicyDefinition(std::string_view text);

  std::string name_;
  std::array<NodeScoreTerm, kNodeScorePluginCount> terms_{};
  size_t count_ = 0;
  bool counts_fragmentation_ = false;
};

// An operator's policy: "NAME=PLUGIN:WEIGHT[,PLUGIN:WEIGHT...]", e.g.
// "pack-frag=fragmentation:1,hami-node-score:0.5". Each plugin at most once, a non-zero finite
// weight, a name that is not a built-in one (tessera, binpack, spread). Errors say which part is
// wrong and list the plugins.
Result<NodePolicy> ParseNodePolicyDefinition(std::string_view text);

// Several definitions; a name defined twice is an error.
Result<std::vector<NodePolicy>> ParseNodePolicyDefinitions(
    std::span<const std::string> definitions);

// Adds `definitions` to `policies`; each replaces an earlier policy of its name (a flag's over
// a scenario file's). Errors as ParseNodePolicyDefinitions; `policies` is unchanged then.
Status AddNodePolicyDefinitions(std::span<const std::string> definitions,
                                std::vector<NodePolicy>* policies);

// A policy by name: the built-ins, then `defined` (operators' policies).
Result<NodePolicy> ParseNodePolicy(const std::string& text,
                                   std::span<const NodePolicy> defined = {});

}  // namespace tessera::sched
