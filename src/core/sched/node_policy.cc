#include "core/sched/node_policy.h"

#include <charconv>
#include <cmath>

#include "core/common/strings.h"

namespace tessera::sched {
namespace {

constexpr std::array<NodeScorePluginInfo, kNodeScorePluginCount> kPlugins = {{
    {NodeScorePlugin::kFragmentation, "fragmentation",
     "minus the expected fragmentation the pod adds for the demand mix (MIG: minus the "
     "placeability drop), in steps; ties: in use before idle, then a fixed node order"},
    {NodeScorePlugin::kHamiNodeScore, "hami-node-score",
     "HAMi's node score before the pod: used slots, cores and memory of the node's GPUs"},
    {NodeScorePlugin::kFullness, "fullness",
     "HAMi's node score after the pod: the node's GPUs with the pod's devices added"},
}};

std::string PluginList() {
  std::string out;
  for (const auto& p : kPlugins) {
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out;
}

bool BuiltinName(std::string_view name) {
  return name == "tessera" || name == "binpack" || name == "spread";
}

std::string WeightText(double weight) {
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, weight);
  return ec == std::errc() ? std::string(buffer, end) : std::string("?");
}

}  // namespace

std::span<const NodeScorePluginInfo> NodeScorePlugins() { return kPlugins; }

std::string_view NameOf(NodeScorePlugin plugin) {
  return kPlugins[static_cast<size_t>(plugin)].name;
}

NodePolicy::NodePolicy(std::string name, std::span<const NodeScoreTerm> terms)
    : name_(std::move(name)), count_(terms.size()) {
  for (size_t i = 0; i < terms.size(); ++i) {
    terms_[i] = terms[i];
    counts_fragmentation_ |= terms[i].plugin == NodeScorePlugin::kFragmentation;
  }
}

NodePolicy NodePolicy::Tessera() {
  const NodeScoreTerm term{NodeScorePlugin::kFragmentation, 1};
  return NodePolicy("tessera", {&term, 1});
}

NodePolicy NodePolicy::Binpack() {
  const NodeScoreTerm term{NodeScorePlugin::kHamiNodeScore, 1};
  return NodePolicy("binpack", {&term, 1});
}

NodePolicy NodePolicy::Spread() {
  const NodeScoreTerm term{NodeScorePlugin::kHamiNodeScore, -1};
  return NodePolicy("spread", {&term, 1});
}

std::string NodePolicy::Definition() const {
  std::string out = name_ + "=";
  for (size_t i = 0; i < count_; ++i) {
    if (i > 0) out += ",";
    out += std::string(NameOf(terms_[i].plugin)) + ":" + WeightText(terms_[i].weight);
  }
  return out;
}

Result<NodePolicy> ParseNodePolicyDefinition(std::string_view text) {
  auto fail = [&](const std::string& why) {
    return Error{"node policy definition \"" + std::string(text) + "\": " + why};
  };
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) return fail("expected NAME=PLUGIN:WEIGHT[,PLUGIN:WEIGHT...]");
  const std::string name = Trim(text.substr(0, eq));
  if (name.empty()) return fail("the name is empty");
  if (name.find_first_of(" \t,:") != std::string::npos) {
    return fail("the name \"" + name + "\" has a space, comma or colon");
  }
  if (BuiltinName(name)) return fail("\"" + name + "\" is a built-in policy's name");
  std::array<NodeScoreTerm, kNodeScorePluginCount> terms{};
  size_t count = 0;
  for (const std::string& part : SplitKeepEmpty(text.substr(eq + 1), ',')) {
    const std::string item = Trim(part);
    const size_t colon = item.find(':');
    if (colon == std::string::npos) {
      return fail("\"" + item + "\" is not PLUGIN:WEIGHT (plugins: " + PluginList() + ")");
    }
    const std::string plugin_name = Trim(item.substr(0, colon));
    const std::string weight_text = Trim(item.substr(colon + 1));
    const NodeScorePluginInfo* info = nullptr;
    for (const auto& p : kPlugins) info = p.name == plugin_name ? &p : info;
    if (info == nullptr) {
      return fail("unknown plugin \"" + plugin_name + "\" (plugins: " + PluginList() + ")");
    }
    double weight = 0;
    const char* first = weight_text.data();
    const char* last = first + weight_text.size();
    auto [end, ec] = std::from_chars(first, last, weight);
    if (weight_text.empty() || ec != std::errc() || end != last || !std::isfinite(weight) ||
        weight == 0) {
      return fail("plugin " + plugin_name + ": weight \"" + weight_text +
                  "\" is not a non-zero number");
    }
    for (size_t i = 0; i < count; ++i) {
      if (terms[i].plugin == info->plugin) return fail("plugin " + plugin_name + " twice");
    }
    terms[count++] = NodeScoreTerm{info->plugin, weight};
  }
  return NodePolicy(name, {terms.data(), count});
}

Result<std::vector<NodePolicy>> ParseNodePolicyDefinitions(
    std::span<const std::string> definitions) {
  std::vector<NodePolicy> policies;
  for (const std::string& text : definitions) {
    auto policy = ParseNodePolicyDefinition(text);
    if (!policy.ok()) return policy.error();
    for (const NodePolicy& earlier : policies) {
      if (earlier.name() == policy->name()) {
        return Error{"node policy \"" + policy->name() + "\" is defined twice"};
      }
    }
    policies.push_back(std::move(policy.value()));
  }
  return policies;
}

Status AddNodePolicyDefinitions(std::span<const std::string> definitions,
                                std::vector<NodePolicy>* policies) {
  auto parsed = ParseNodePolicyDefinitions(definitions);
  if (!parsed.ok()) return parsed.error();
  for (NodePolicy& policy : parsed.value()) {
    std::erase_if(*policies, [&](const NodePolicy& p) { return p.name() == policy.name(); });
    policies->push_back(std::move(policy));
  }
  return Status::Ok();
}

Result<NodePolicy> ParseNodePolicy(const std::string& text, std::span<const NodePolicy> defined) {
  const std::string name = Trim(text);
  if (name == "tessera") return NodePolicy::Tessera();
  if (name == "binpack") return NodePolicy::Binpack();
  if (name == "spread") return NodePolicy::Spread();
  for (const NodePolicy& policy : defined) {
    if (policy.name() == name) return policy;
  }
  std::string known = "tessera, binpack or spread";
  if (!defined.empty()) {
    known = "tessera, binpack, spread";
    for (const NodePolicy& policy : defined) known += ", " + policy.name();
  }
  return Error{"unknown node scheduler policy \"" + text + "\" (expected " + known + ")"};
}

}  // namespace tessera::sched
