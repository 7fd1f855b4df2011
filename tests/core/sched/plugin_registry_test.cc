#include "core/sched/plugin_registry.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "core/common/strings.h"
#include "core/sched/node_policy.h"

namespace tessera::sched {
namespace {

std::string Source(const std::string& path) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/src/core/" + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PluginRegistryTest, NamesAreUniqueAndPhasesComeInCallingOrder) {
  std::set<std::string_view> names;
  Phase previous = Phase::kPreFilter;
  for (const PluginEntry& p : Plugins()) {
    SCOPED_TRACE(p.name);
    EXPECT_TRUE(names.insert(p.name).second);
    EXPECT_GE(static_cast<int>(p.phase), static_cast<int>(previous));
    previous = p.phase;
    EXPECT_FALSE(p.does.empty());
    EXPECT_NE(ToString(p.phase), "?");
  }
}

// Each entry points at code that exists: every file it names, and the function after it there.
TEST(PluginRegistryTest, EveryEntryPointsAtItsCode) {
  for (const PluginEntry& p : Plugins()) {
    SCOPED_TRACE(p.name);
    for (const std::string& where : SplitTrimmed(p.code, ',')) {
      const size_t space = where.find(' ');
      const std::string file = where.substr(0, space);
      const std::string text = Source(file);
      ASSERT_FALSE(text.empty()) << "no file src/core/" << file;
      if (space == std::string::npos) continue;
      std::string symbol = where.substr(space + 1);
      if (const size_t scope = symbol.rfind("::"); scope != std::string::npos) {
        symbol = symbol.substr(scope + 2);
      }
      EXPECT_NE(text.find(symbol), std::string::npos) << symbol << " not in " << file;
    }
  }
}

// The score plugins a node policy may name are exactly the registry's node-policy entries.
TEST(PluginRegistryTest, TheNodePolicyPluginsAreTheRegistrysScorePlugins) {
  std::set<std::string_view> in_registry;
  for (const PluginEntry& p : Plugins()) {
    if (!p.in_node_policy) continue;
    EXPECT_EQ(p.phase, Phase::kScore) << p.name;
    in_registry.insert(p.name);
  }
  std::set<std::string_view> in_policy;
  for (const NodeScorePluginInfo& p : NodeScorePlugins()) in_policy.insert(p.name);
  EXPECT_EQ(in_registry, in_policy);
}

TEST(PluginRegistryTest, TheTableListsEveryPluginUnderItsPhaseAndTheBuiltInPolicies) {
  const std::string text = PluginTableText();
  for (const PluginEntry& p : Plugins()) {
    const size_t phase = text.find(std::string(ToString(p.phase)) + ":\n");
    const size_t entry = text.find("  " + std::string(p.name) + (p.in_node_policy ? " (" : ":"));
    ASSERT_NE(phase, std::string::npos) << p.name;
    ASSERT_NE(entry, std::string::npos) << p.name;
    EXPECT_LT(phase, entry) << p.name;
  }
  EXPECT_NE(text.find("  tessera=fragmentation:1\n"), std::string::npos);
  EXPECT_NE(text.find("  spread=hami-node-score:-1\n"), std::string::npos);
}

}  // namespace
}  // namespace tessera::sched
