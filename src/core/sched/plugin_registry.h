#pragma once

#include <span>
#include <string>
#include <string_view>

namespace tessera::sched {

// The scheduling cycle's phases, in the order the runner (Scheduler, FilterPass) calls them.
enum class Phase { kPreFilter, kFilter, kScore, kPostFilter, kReserve, kBind };
std::string_view ToString(Phase phase);

// One part of a phase: what it decides and where it lives. The node score plugins are the ones
// a node policy names (NodePolicy); the others run in a fixed order, HAMi's where HAMi's reasons
// depend on it.
struct PluginEntry {
  std::string_view name;
  Phase phase;
  bool in_node_policy;    // a node policy lists it with a weight (node_policy.h)
  std::string_view code;  // the file and function, under src/core
  std::string_view does;  // one line
};

// Every plugin, by phase in calling order (`tessera plugins` prints this table).
std::span<const PluginEntry> Plugins();

// The table as text, by phase, then the built-in node policies as definitions.
std::string PluginTableText();

}  // namespace tessera::sched
