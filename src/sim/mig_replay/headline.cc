#include "sim/mig_replay/headline.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

#include "sim/mig_replay/geometry_free.h"
#include "sim/mig_replay/offline_guided.h"
#include "sim/mig_replay/placement_bound.h"
#include "sim/mig_replay/policy.h"
#include "sim/mig_replay/starvation.h"
#include "sim/mig_replay/upper_bound.h"

namespace tessera::sim::mig_replay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
bool Pending(const std::string& protocol) { return protocol.starts_with("pending-"); }

double PlacedPct(const RunRecord& r) {
  return 100 * (Pending(r.protocol) ? r.metrics.ever_placed_ratio() : r.metrics.acceptance());
}

// One cell's runs, by policy, in seed order.
struct Cell {
  std::string fleet, workload, protocol;
  std::map<std::string, std::map<uint64_t, const RunRecord*>> runs;
  std::vector<std::string> policy_order;
};

std::vector<Cell> Cells(const std::vector<RunRecord>& records) {
  std::vector<Cell> cells;
  std::map<std::tuple<std::string, std::string, std::string>, size_t> index;
  for (const RunRecord& r : records) {
    auto [it, added] = index.emplace(std::tuple(r.fleet, r.workload, r.protocol), cells.size());
    if (added) cells.push_back(Cell{r.fleet, r.workload, r.protocol, {}, {}});
    Cell& cell = cells[it->second];
    if (!cell.runs.contains(r.policy)) cell.policy_order.push_back(r.policy);
    cell.runs[r.policy][r.seed] = &r;
  }
  return cells;
}

double MeanServed(const std::map<uint64_t, const RunRecord*>& runs) {
  double sum = 0;
  for (const auto& [seed, r] : runs) sum += 100 * r->metrics.served_ratio;
  return runs.empty() ? kNaN : sum / static_cast<double>(runs.size());
}

// tessera - other, over the seeds both ran.
PairedDifference Paired(const std::map<uint64_t, const RunRecord*>& subject,
                        const std::map<uint64_t, const RunRecord*>& other) {
  std::vector<double> a, b;
  for (const auto& [seed, r] : subject) {
    auto it = other.find(seed);
    if (it == other.end()) continue;
    a.push_back(100 * it->second->metrics.served_ratio);
    b.push_back(100 * r->metrics.served_ratio);
  }
  return PairedMeanDifference(a, b);
}

// Per request type, pooled over the seeds (starvation.h).
std::vector<TypeStarvation> ByType(const std::map<uint64_t, const RunRecord*>& runs) {
  std::vector<const RunRecord*> list;
  list.reserve(runs.size());
  for (const auto& [seed, r] : runs) list.push_back(r);
  return PooledStarvation(list);
}

// Per request type, tessera's never-placed % minus `theirs`, seed by seed (seeds where the type
// arrived under both).
std::vector<PairedDifference> PairedStarvation(const std::map<uint64_t, const RunRecord*>& mine,
                                               const std::map<uint64_t, const RunRecord*>& theirs,
                                               std::vector<std::string>* labels) {
  std::vector<std::vector<double>> a;  // per type, per seed: theirs
  std::vector<std::vector<double>> b;  // mine
  for (const auto& [seed, r] : mine) {
    auto it = theirs.find(seed);
    if (it == theirs.end()) continue;
    const RunRecord* one_mine[] = {r};
    const RunRecord* one_theirs[] = {it->second};
    const std::vector<TypeStarvation> m = PooledStarvation(one_mine);
    const std::vector<TypeStarvation> t = PooledStarvation(one_theirs);
    if (a.size() < m.size()) {
      a.resize(m.size());
      b.resize(m.size());
      labels->resize(m.size());
    }
    for (size_t type = 0; type < m.size() && type < t.size(); ++type) {
      (*labels)[type] = m[type].label;
      if (m[type].arrived == 0 || t[type].arrived == 0) continue;
      a[type].push_back(t[type].never_placed_pct);
      b[type].push_back(m[type].never_placed_pct);
    }
  }
  std::vector<PairedDifference> out;
  out.reserve(a.size());
  for (size_t type = 0; type < a.size(); ++type)
    out.push_back(PairedMeanDifference(a[type], b[type]));
  return out;
}

double WorstWait(const std::vector<TypeStarvation>& types) {
  double worst = kNaN;
  for (const auto& t : types) {
    if (t.has_wait && (std::isnan(worst) || t.wait_p95 > worst)) worst = t.wait_p95;
  }
  return worst;
}

std::string Signed(const PairedDifference& d) {
  if (std::isnan(d.mean)) return "-";
  char buf[48];
  if (std::isnan(d.half_width_95)) {
    std::snprintf(buf, sizeof(buf), "%+.1f", d.mean);
  } else {
    std::snprintf(buf, sizeof(buf), "%+.1f±%.1f", d.mean, d.half_width_95);
  }
  return buf;
}

std::string Fixed1(double v) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

// A comparison as a table cell: the paired difference, marked when tessera is behind.
std::string VersusCell(const HeadlineVersus& v) {
  return Signed(v.served_diff) + (v.behind() ? " BEHIND" : "");
}

std::vector<std::string> Protocols(const std::vector<HeadlineRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) {
    if (std::find(out.begin(), out.end(), r.protocol) == out.end()) out.push_back(r.protocol);
  }
  return out;
}

// The baselines named in every row's `versus`, in first-seen order.
std::vector<std::string> VersusColumns(const std::vector<HeadlineRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) {
    for (const auto& v : r.versus) {
      if (std::find(out.begin(), out.end(), v.policy) == out.end()) out.push_back(v.policy);
    }
  }
  return out;
}

const HeadlineVersus* FindVersus(const HeadlineRow& row, const std::string& policy) {
  for (const auto& v : row.versus) {
    if (v.policy == policy) return &v;
  }
  return nullptr;
}

std::string ProtocolCaption(const std::string& protocol) {
  if (protocol == "saturation") return "saturation (arrivals until the cluster is full)";
  if (Pending(protocol)) return protocol + " (steady state, refused pods wait)";
  return protocol + " (steady state, refused pods dropped)";
}

}  // namespace

bool IsBoundColumn(std::string_view policy) {
  return policy == kUpperBound || policy == kPlacementBound;
}

bool IsReferenceColumn(std::string_view policy) {
  return IsBoundColumn(policy) || policy == kReferencePooledSlices || policy == kOfflineLpGuided;
}

bool HeadlineVersus::behind() const {
  return !std::isnan(served_diff.half_width_95) && served_diff.mean + served_diff.half_width_95 < 0;
}

const std::vector<std::string>& FeaturedBaselines() {
  static const std::vector<std::string> names = {
      std::string(kPolicyHami210), std::string("hami-master"), std::string(kPolicyFirstFit)};
  return names;
}

std::vector<HeadlineRow> BuildHeadline(const std::vector<RunRecord>& records,
                                       std::string_view subject,
                                       const std::vector<std::string>& featured) {
  std::vector<HeadlineRow> rows;
  for (const Cell& cell : Cells(records)) {
    auto mine = cell.runs.find(std::string(subject));
    if (mine == cell.runs.end()) continue;
    HeadlineRow row;
    row.fleet = cell.fleet;
    row.workload = cell.workload;
    row.protocol = cell.protocol;
    row.served = MeanServed(mine->second);
    double placed = 0;
    for (const auto& [seed, r] : mine->second) placed += PlacedPct(*r);
    row.placed = placed / static_cast<double>(mine->second.size());
    for (const std::string& policy : featured) {
      auto it = cell.runs.find(policy);
      if (it == cell.runs.end()) continue;
      row.versus.push_back(
          HeadlineVersus{policy, MeanServed(it->second), Paired(mine->second, it->second)});
    }
    // The best baseline: any placing policy but tessera's own variants.
    double best = -1;
    for (const std::string& policy : cell.policy_order) {
      if (IsReferenceColumn(policy) || policy.starts_with(kPolicyTessera)) continue;
      const double served = MeanServed(cell.runs.at(policy));
      if (served > best) {
        best = served;
        row.best_baseline = policy;
      }
    }
    const std::vector<TypeStarvation> never_mine = ByType(mine->second);
    row.worst_never_placed = 0;
    for (const auto& t : never_mine) {
      if (t.arrived > 0)
        row.worst_never_placed = std::max(row.worst_never_placed, t.never_placed_pct);
    }
    row.worst_wait_p95 = WorstWait(never_mine);
    row.versus_best = PairedDifference{};
    row.starvation_excess = kNaN;
    if (!row.best_baseline.empty()) {
      const auto& theirs = cell.runs.at(row.best_baseline);
      row.versus_best = Paired(mine->second, theirs);
      const std::vector<TypeStarvation> never_theirs = ByType(theirs);
      row.best_worst_wait_p95 = WorstWait(never_theirs);
      for (size_t t = 0; t < never_mine.size() && t < never_theirs.size(); ++t) {
        if (never_mine[t].arrived == 0 || never_theirs[t].arrived == 0) continue;
        const double excess = never_mine[t].never_placed_pct - never_theirs[t].never_placed_pct;
        if (std::isnan(row.starvation_excess) || excess > row.starvation_excess) {
          row.starvation_excess = excess;
        }
      }
      std::vector<std::string> labels;
      const std::vector<PairedDifference> paired = PairedStarvation(mine->second, theirs, &labels);
      double highest = kNaN;
      for (size_t t = 0; t < paired.size(); ++t) {
        const PairedDifference& d = paired[t];
        if (std::isnan(d.mean)) continue;
        const double hw = std::isnan(d.half_width_95) ? 0 : d.half_width_95;
        if (std::isnan(highest) || d.mean - hw > highest) {
          highest = d.mean - hw;
          row.starved_type = labels[t];
          row.starved_diff = d;
        }
        if (!std::isnan(d.half_width_95) && d.mean - d.half_width_95 > 0) {
          row.starved_beyond_noise = true;
        }
      }
    }
    row.bound = kNaN;
    for (const std::string& policy : cell.policy_order) {
      if (!IsBoundColumn(policy)) continue;
      const double served = MeanServed(cell.runs.at(policy));
      if (std::isnan(row.bound) || served < row.bound) row.bound = served;
    }
    row.headroom = std::isnan(row.bound) ? kNaN : row.bound - row.served;
    if (auto offline = cell.runs.find(std::string(kOfflineLpGuided)); offline != cell.runs.end()) {
      row.offline = MeanServed(offline->second);
      row.headroom_floor = std::max(0.0, row.offline - row.served);
    }
    const double gap = row.bound - best;
    row.gap_closed = std::isnan(row.bound) || row.best_baseline.empty() || gap <= 1e-9
                         ? kNaN
                         : 100 * (row.served - best) / gap;
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

// The columns after the per-baseline ones, as text: vs best baseline, placed, starved, p95
// wait (tessera / best baseline), headroom, closed.
constexpr int kTailColumns = 6;
constexpr std::array<const char*, kTailColumns> kTailHeaders = {
    "vs best baseline", "placed", "starved", "p95 wait", "headroom", "closed"};
constexpr std::array<int, kTailColumns> kTailWidths = {-30, 6, -32, 9, 10, 7};

std::array<std::string, kTailColumns> TailCells(const HeadlineRow& r) {
  const HeadlineVersus best{r.best_baseline, 0, r.versus_best};
  return {
      r.best_baseline.empty() ? "-" : VersusCell(best) + " (" + r.best_baseline + ")",
      Fixed1(r.placed),
      Fixed1(r.worst_never_placed) + " (" +
          (r.starved_type.empty() ? std::string("-")
                                  : r.starved_type + " " + Signed(r.starved_diff) +
                                        (r.starved_beyond_noise ? " MORE" : "")) +
          ")",
      std::isnan(r.worst_wait_p95) ? "-"
                                   : Fixed1(r.worst_wait_p95) + "/" + Fixed1(r.best_worst_wait_p95),
      std::isnan(r.headroom_floor) ? Fixed1(r.headroom)
                                   : Fixed1(r.headroom_floor) + ".." + Fixed1(r.headroom),
      std::isnan(r.gap_closed) ? "-" : Fixed1(r.gap_closed) + "%",
  };
}

std::string Padded(const std::string& text, int width) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), " %*s", width, text.c_str());
  return buf;
}

}  // namespace

std::string HeadlineText(const std::vector<HeadlineRow>& rows) {
  std::string out =
      "Demand served (% of memory slices held by the intended profiles); tessera minus each "
      "baseline, seed by seed, with the 95% interval (BEHIND: the whole interval below 0).\n"
      "placed: pods placed, % of arrivals. starved: most pods of one request type never placed "
      "(%), and (in brackets) the type whose share never placed exceeds the best baseline's the "
      "most, seed by seed with the 95% interval (MORE: the whole interval above 0). p95 wait "
      "(pending queue): the longest 95th-percentile wait of a type, tessera/best baseline, in "
      "mean lifetimes. headroom: to the tightest bound (a..b: at least a, what a schedule that "
      "knows the future gains); closed: share of the best baseline's gap to it that tessera "
      "closes.\n";
  const std::vector<std::string> columns = VersusColumns(rows);
  for (const std::string& protocol : Protocols(rows)) {
    out += "\n" + ProtocolCaption(protocol) + "\n";
    out += Padded("fleet", -13).substr(1) + Padded("workload", -12) + Padded("tessera", 7);
    for (const auto& c : columns) out += Padded("vs " + c, 18);
    for (int i = 0; i < kTailColumns; ++i) out += Padded(kTailHeaders[i], kTailWidths[i]);
    out += "\n";
    for (const HeadlineRow& r : rows) {
      if (r.protocol != protocol) continue;
      out += Padded(r.fleet, -13).substr(1) + Padded(r.workload, -12) + Padded(Fixed1(r.served), 7);
      for (const auto& c : columns) {
        const HeadlineVersus* v = FindVersus(r, c);
        out += Padded(v == nullptr ? "-" : VersusCell(*v), 18);
      }
      const auto tail = TailCells(r);
      for (int i = 0; i < kTailColumns; ++i) out += Padded(tail[i], kTailWidths[i]);
      out += "\n";
    }
  }
  return out;
}

std::string HeadlineMarkdown(const std::vector<HeadlineRow>& rows) {
  const std::vector<std::string> columns = VersusColumns(rows);
  std::string out;
  for (const std::string& protocol : Protocols(rows)) {
    out += "\n**" + ProtocolCaption(protocol) + "**\n\n| fleet | workload | tessera |";
    for (const auto& c : columns) out += " vs " + c + " |";
    for (const char* h : kTailHeaders) out += std::string(" ") + h + " |";
    out += "\n|---|---|---:|";
    for (size_t i = 0; i < columns.size(); ++i) out += "---:|";
    out += "---|---:|---:|---:|---:|---:|\n";
    for (const HeadlineRow& r : rows) {
      if (r.protocol != protocol) continue;
      out += "| " + r.fleet + " | " + r.workload + " | " + Fixed1(r.served) + " |";
      for (const auto& c : columns) {
        const HeadlineVersus* v = FindVersus(r, c);
        out += " " + (v == nullptr ? std::string("-") : VersusCell(*v)) + " |";
      }
      for (const std::string& cell : TailCells(r)) out += " " + cell + " |";
      out += "\n";
    }
  }
  return out;
}

}  // namespace tessera::sim::mig_replay
