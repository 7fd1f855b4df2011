// The Grafana dashboard (deploy/grafana/tessera-dashboard.json) and the node agent's metrics:
// every tessera_agent_* name its queries use is on the agent's /metrics once the agent has read
// GPU usage, a name under rate() is a counter, and every label a panel groups or names its
// series by is one of those series' labels (or one Prometheus adds at scrape: instance, job);
// every GPU and MIG usage metric, and the usage read errors, have a panel. The panels keep
// unique ids and do not overlap. The scheduler's names: tests/scheduler/read_views_test.cc.

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agent_runtime/agent_metrics.h"
#include "support/usage_reading.h"

namespace tessera::agent_runtime {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

Json Dashboard() {
  const fs::path path = fs::path(TESSERA_SOURCE_DIR) / "deploy/grafana/tessera-dashboard.json";
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot read " << path;
    return Json::object({{"panels", Json::array()}});
  }
  return Json::parse(in);
}

bool NameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// The metric names with `prefix` an expression uses.
std::vector<std::string> Names(const std::string& expr, const std::string& prefix) {
  std::vector<std::string> names;
  for (size_t i = 0; i < expr.size();) {
    if (expr.compare(i, prefix.size(), prefix) != 0 || (i > 0 && NameChar(expr[i - 1]))) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < expr.size() && NameChar(expr[end])) ++end;
    names.push_back(expr.substr(i, end - i));
    i = end;
  }
  return names;
}

// The labels an expression groups by (`by (a, b)`) or selects on (`{a=~"..."}`), and those its
// legend names (`{{a}}`).
std::set<std::string> LabelsUsed(const std::string& expr, const std::string& legend) {
  static const std::regex kBy(R"(\bby\s*\(([^)]*)\))");
  static const std::regex kSelector(R"([{,]\s*([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*")");
  static const std::regex kLegend(R"(\{\{\s*([A-Za-z_]\w*)\s*\}\})");
  static const std::regex kWord(R"([A-Za-z_]\w*)");
  std::set<std::string> labels;
  auto each = [](const std::string& text, const std::regex& re, auto&& f) {
    for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) f(*it);
  };
  each(expr, kBy, [&](const std::smatch& m) {
    each(m[1].str(), kWord, [&](const std::smatch& w) { labels.insert(w.str()); });
  });
  each(expr, kSelector, [&](const std::smatch& m) { labels.insert(m[1].str()); });
  each(legend, kLegend, [&](const std::smatch& m) { labels.insert(m[1].str()); });
  return labels;
}

// The label names of each metric's samples in an exposition; a metric with no sample is absent.
std::map<std::string, std::set<std::string>> SampleLabels(const std::string& text) {
  std::map<std::string, std::set<std::string>> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    size_t end = 0;
    while (end < line.size() && NameChar(line[end])) ++end;
    auto& labels = out[line.substr(0, end)];
    if (end >= line.size() || line[end] != '{') continue;
    for (size_t i = end + 1; i < line.size() && line[i] != '}';) {
      const size_t eq = line.find('=', i);
      if (eq == std::string::npos) break;
      labels.insert(line.substr(i, eq - i));
      size_t v = eq + 2;  // past ="
      while (v < line.size() && line[v] != '"') v += line[v] == '\\' ? 2 : 1;
      i = v + 1;
      if (i < line.size() && line[i] == ',') ++i;
    }
  }
  return out;
}

// One usage read of a plain GPU and a GPU in MIG mode whose MIG device reports utilisation (so
// every usage family has a series), and a failed read.
std::string AgentExposition() {
  const node::UsageReading r = testing::SampleUsageReading(25U);
  AgentMetrics metrics;
  metrics.GpuUsage("node-a", r, 1767225600);
  metrics.UsageReadFailed(1);
  metrics.UsageAnnotationPatched();
  return prometheus::TextSerializer().Serialize(metrics.registry().Collect());
}

TEST(AgentDashboardTest, TheAgentPanelsQueryOnlyExportedMetricsAndLabels) {
  const std::string text = AgentExposition();
  const auto samples = SampleLabels(text);
  std::set<std::string> queried;
  const Json dashboard = Dashboard();
  for (const Json& panel : dashboard.at("panels")) {
    const std::string title = panel.at("title");
    for (const Json& target : panel.at("targets")) {
      const std::string expr = target.at("expr");
      const std::vector<std::string> names = Names(expr, "tessera_agent_");
      if (names.empty()) continue;
      std::set<std::string> labels = {"instance", "job"};  // added by Prometheus at scrape
      for (const std::string& name : names) {
        queried.insert(name);
        const auto it = samples.find(name);
        if (it == samples.end()) {
          ADD_FAILURE() << title << ": " << name << " is not exported by the agent";
          continue;
        }
        labels.insert(it->second.begin(), it->second.end());
        if (expr.find("rate(" + name) != std::string::npos) {
          EXPECT_NE(text.find("# TYPE " + name + " counter"), std::string::npos)
              << title << ": rate() of " << name << ", which is no counter";
        }
      }
      for (const std::string& label : LabelsUsed(expr, target.value("legendFormat", ""))) {
        EXPECT_TRUE(labels.count(label) != 0)
            << title << ": " << expr << " uses label " << label << ", which its series lack";
      }
    }
  }
  // Every GPU and MIG usage family, and the usage read errors, are on the dashboard.
  for (const auto& [name, labels] : samples) {
    if (name.starts_with("tessera_agent_gpu_") || name.starts_with("tessera_agent_mig_instance_") ||
        name == "tessera_agent_usage_read_errors_total") {
      EXPECT_TRUE(queried.count(name) != 0) << name << " has no panel";
    }
  }
  EXPECT_GE(queried.size(), 8U);
}

TEST(AgentDashboardTest, PanelsHaveUniqueIdsAndDoNotOverlap) {
  std::set<int> ids;
  std::map<std::pair<int, int>, std::string> cells;  // (x, y) grid cell -> panel title
  const Json dashboard = Dashboard();
  for (const Json& panel : dashboard.at("panels")) {
    const std::string title = panel.at("title");
    EXPECT_TRUE(ids.insert(panel.at("id").get<int>()).second) << title << ": id taken";
    EXPECT_EQ(panel.at("datasource").at("uid"), "${datasource}") << title;
    const Json& g = panel.at("gridPos");
    const int x = g.at("x"), y = g.at("y"), w = g.at("w"), h = g.at("h");
    EXPECT_LE(x + w, 24) << title << ": wider than the grid";
    for (int cx = x; cx < x + w; ++cx) {
      for (int cy = y; cy < y + h; ++cy) {
        const auto [it, fresh] = cells.emplace(std::pair{cx, cy}, title);
        EXPECT_TRUE(fresh) << title << " overlaps " << it->second;
        if (!fresh) return;
      }
    }
  }
  EXPECT_GE(ids.size(), 18U);
}

}  // namespace
}  // namespace tessera::agent_runtime
