#include "core/state/node_lookup.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/builders.h"
#include "support/reservations.h"

namespace tessera::state {
namespace {

using testing::NodeWith;
using testing::SharedGpuPod;
using testing::SharingGpu;

ClusterState StateWith(const std::vector<std::string>& names) {
  ClusterState s{config::SchedulerConfig{}};
  for (const auto& name : names) s.UpsertNode(NodeWith(name, {SharingGpu("GPU-" + name)}));
  return s;
}

// What NodeLookup gives, as names ("?name" for an unregistered one), with each node checked
// against the state's own lookup.
std::vector<std::string> Resolved(NodeLookup& lookup, const ClusterState& s,
                                  const std::vector<std::string>& names) {
  std::vector<const NodeState*> nodes;
  std::vector<const std::string*> unregistered;
  lookup.Resolve(s, names, &nodes, &unregistered);
  std::vector<std::string> out;
  for (const NodeState* n : nodes) {
    EXPECT_EQ(s.node(n->name), n) << n->name;
    out.push_back(n->name);
  }
  for (const std::string* name : unregistered) {
    EXPECT_EQ(s.node(*name), nullptr) << *name;
    out.push_back("?" + *name);
  }
  return out;
}

using Names = std::vector<std::string>;

TEST(NodeLookupTest, ResolvesInOrderWithTheUnregisteredApart) {
  const ClusterState s = StateWith({"a", "b", "c"});
  NodeLookup lookup;
  EXPECT_EQ(Resolved(lookup, s, {"c", "x", "a"}), (Names{"c", "a", "?x"}));
  // The same list again, then lists that differ in places, in length and in order.
  EXPECT_EQ(Resolved(lookup, s, {"c", "x", "a"}), (Names{"c", "a", "?x"}));
  EXPECT_EQ(Resolved(lookup, s, {"c", "b", "a"}), (Names{"c", "b", "a"}));
  EXPECT_EQ(Resolved(lookup, s, {"c"}), (Names{"c"}));
  EXPECT_EQ(Resolved(lookup, s, {"c", "b", "a", "y"}), (Names{"c", "b", "a", "?y"}));
  EXPECT_EQ(Resolved(lookup, s, {"a", "b", "c"}), (Names{"a", "b", "c"}));
  EXPECT_EQ(Resolved(lookup, s, {}), (Names{}));
  // Remembering nothing gives the same.
  const Names names = {"c", "x", "a"};
  std::vector<const NodeState*> nodes;
  std::vector<const std::string*> unregistered;
  NodeLookup::ResolveOnce(s, names, &nodes, &unregistered);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0], s.node("c"));
  EXPECT_EQ(nodes[1], s.node("a"));
  ASSERT_EQ(unregistered.size(), 1u);
  EXPECT_EQ(unregistered[0], &names[1]);
}

TEST(NodeLookupTest, ForgetsWhatItRememberedWhenNodesComeAndGo) {
  ClusterState s = StateWith({"a", "b"});
  NodeLookup lookup;
  EXPECT_EQ(Resolved(lookup, s, {"a", "b", "c"}), (Names{"a", "b", "?c"}));
  s.RemoveNode("b");
  EXPECT_EQ(Resolved(lookup, s, {"a", "b", "c"}), (Names{"a", "?b", "?c"}));
  s.UpsertNode(NodeWith("c", {SharingGpu("GPU-c")}));
  EXPECT_EQ(Resolved(lookup, s, {"a", "b", "c"}), (Names{"a", "c", "?b"}));
  // Another state assigned over this one: its nodes, at its addresses.
  s = StateWith({"b"});
  EXPECT_EQ(Resolved(lookup, s, {"a", "b", "c"}), (Names{"b", "?a", "?c"}));
  ClusterState other = StateWith({"a", "b", "c"});
  EXPECT_EQ(Resolved(lookup, other, {"a", "b", "c"}), (Names{"a", "b", "c"}));
}

// The node set's version changes only with the set, so a lookup stays remembered while pods
// come and go and nodes are updated. It only grows, also when another state is assigned, so a
// state never shows a version it had before.
TEST(NodeLookupTest, TheNodeSetVersionChangesOnlyWithTheSet) {
  ClusterState s = StateWith({"a", "b"});
  const uint64_t v = s.node_set_version();
  s.UpsertNode(NodeWith("a", {SharingGpu("GPU-a", 16384)}));
  s.AddPod(SharedGpuPod("ns/p", "a", "GPU-a", 1000, 10));
  (void)s.RemovePod("ns/p");
  s.SetNodeBlocked("b", "cordoned");
  EXPECT_EQ(s.node_set_version(), v);
  s.UpsertNode(NodeWith("c", {SharingGpu("GPU-c")}));
  EXPECT_GT(s.node_set_version(), v);
  const uint64_t with_c = s.node_set_version();
  s.RemoveNode("c");
  EXPECT_GT(s.node_set_version(), with_c);
  const ClusterState big = StateWith({"a", "b", "c", "d", "e"});
  const uint64_t before = s.node_set_version();
  s = big;
  EXPECT_GT(s.node_set_version(), before);
  const uint64_t copied = s.node_set_version();
  s = StateWith({"a"});
  EXPECT_GT(s.node_set_version(), copied);
}

}  // namespace
}  // namespace tessera::state
