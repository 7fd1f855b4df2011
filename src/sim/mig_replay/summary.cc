#include "sim/mig_replay/summary.h"
#include "sim/mig_replay/starvation.h"
#include "sim/replay/report_kit.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

namespace tessera::sim::mig_replay {
namespace {

// Four decimals in both CSV files.
std::string Fixed(double v) { return FormatFixed(v, 4); }

}  // namespace

std::vector<SummaryRow> Summarize(const std::vector<RunRecord>& records) {
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<Key, size_t> index;
  std::vector<std::vector<const RunRecord*>> groups;
  std::vector<SummaryRow> rows;
  for (const RunRecord& r : records) {
    Key key{r.fleet, r.workload, r.protocol, r.policy};
    auto [it, added] = index.emplace(key, rows.size());
    if (added) {
      SummaryRow row;
      row.fleet = r.fleet;
      row.workload = r.workload;
      row.protocol = r.protocol;
      row.policy = r.policy;
      rows.push_back(std::move(row));
      groups.emplace_back();
    }
    groups[it->second].push_back(&r);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<double> acc, served, mem, comp, gpus, stranded, frag, ever, wait;
    double wall = 0;
    for (const RunRecord* r : groups[i]) {
      const Snapshot& s = r->metrics.snapshot;
      acc.push_back(100 * r->metrics.acceptance());
      served.push_back(100 * r->metrics.served_ratio);
      mem.push_back(100 * s.memory_slice_ratio);
      comp.push_back(100 * s.compute_slice_ratio);
      gpus.push_back(100 * s.gpus_in_use_ratio);
      stranded.push_back(100 * s.stranded_ratio);
      frag.push_back(100 * s.fragmentation_ratio);
      ever.push_back(100 * r->metrics.ever_placed_ratio());
      wait.push_back(r->metrics.mean_wait());
      wall += r->wall_seconds;
    }
    SummaryRow& row = rows[i];
    row.n_seeds = static_cast<int>(groups[i].size());
    row.acceptance = SampleMeanStd(acc);
    row.served_slices = SampleMeanStd(served);
    row.memory_slices = SampleMeanStd(mem);
    row.compute_slices = SampleMeanStd(comp);
    row.gpus_in_use = SampleMeanStd(gpus);
    row.stranded = SampleMeanStd(stranded);
    row.fragmentation = SampleMeanStd(frag);
    row.ever_placed = SampleMeanStd(ever);
    row.wait = SampleMeanStd(wait);
    row.wall_seconds = wall / static_cast<double>(groups[i].size());
  }
  return rows;
}

std::string SummaryCsv(const std::vector<SummaryRow>& rows) {
  std::vector<std::string> header = {"fleet", "workload", "protocol", "policy", "n_seeds"};
  for (const char* m : {"acceptance_pct", "served_slices_pct", "memory_slices_pct",
                        "compute_slices_pct", "gpus_in_use_pct", "stranded_slices_pct",
                        "fragmentation_pct", "ever_placed_pct", "wait_lifetimes"}) {
    header.push_back(std::string(m) + "_mean");
    header.push_back(std::string(m) + "_std");
  }
  replay::CsvWriter csv(header);
  for (const SummaryRow& r : rows) {
    std::vector<std::string> fields = {r.fleet, r.workload, r.protocol, r.policy,
                                       std::to_string(r.n_seeds)};
    for (const MeanStd* m :
         {&r.acceptance, &r.served_slices, &r.memory_slices, &r.compute_slices, &r.gpus_in_use,
          &r.stranded, &r.fragmentation, &r.ever_placed, &r.wait}) {
      fields.push_back(Fixed(m->mean));
      fields.push_back(Fixed(m->std));
    }
    csv.Row(fields);
  }
  return csv.text();
}

std::string RunsCsv(const std::vector<RunRecord>& records) {
  replay::CsvWriter csv({"fleet", "workload", "protocol", "policy", "seed", "arrived", "accepted",
                         "served_slices", "acceptance_pct", "served_slices_pct",
                         "memory_slices_pct", "compute_slices_pct", "gpus_in_use_pct",
                         "stranded_slices_pct", "fragmentation_pct", "ever_placed",
                         "ever_placed_pct", "wait_lifetimes", "wall_seconds"});
  for (const RunRecord& r : records) {
    const Snapshot& s = r.metrics.snapshot;
    csv.Row({r.fleet, r.workload, r.protocol, r.policy, std::to_string(r.seed),
             std::to_string(r.metrics.arrived), std::to_string(r.metrics.accepted),
             std::to_string(r.metrics.served_slices), Fixed(100 * r.metrics.acceptance()),
             Fixed(100 * r.metrics.served_ratio), Fixed(100 * s.memory_slice_ratio),
             Fixed(100 * s.compute_slice_ratio), Fixed(100 * s.gpus_in_use_ratio),
             Fixed(100 * s.stranded_ratio), Fixed(100 * s.fragmentation_ratio),
             std::to_string(r.metrics.ever_placed), Fixed(100 * r.metrics.ever_placed_ratio()),
             Fixed(r.metrics.mean_wait()), Fixed(r.wall_seconds)});
  }
  return csv.text();
}

std::string TypesCsv(const std::vector<RunRecord>& records) {
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  struct Group {
    const RunRecord* first;
    int n_seeds = 0;
    std::vector<TypeOutcome> sums;
    std::vector<const RunRecord*> runs;
  };
  std::map<Key, size_t> index;
  std::vector<Group> groups;  // in the records' order
  for (const RunRecord& r : records) {
    if (r.metrics.by_type.empty()) continue;
    const Key key{r.fleet, r.workload, r.protocol, r.policy};
    auto [it, inserted] = index.emplace(key, groups.size());
    if (inserted) {
      groups.push_back(Group{&r, 0, std::vector<TypeOutcome>(r.type_labels.size()), {}});
    }
    Group& g = groups[it->second];
    ++g.n_seeds;
    g.runs.push_back(&r);
    for (size_t t = 0; t < r.metrics.by_type.size() && t < g.sums.size(); ++t) {
      g.sums[t] += r.metrics.by_type[t];
    }
  }
  const auto pct = [](int64_t part, int64_t whole) {
    return Fixed(whole == 0 ? 0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  };
  replay::CsvWriter csv({"fleet", "workload", "protocol", "policy", "n_seeds", "type", "arrived",
                         "accepted", "accepted_pct", "ever_placed", "ever_placed_pct",
                         "never_placed_pct", "wait_p95"});
  for (const Group& g : groups) {
    const RunRecord& r = *g.first;
    const std::vector<TypeStarvation> starved = PooledStarvation(g.runs);
    for (size_t t = 0; t < g.sums.size(); ++t) {
      const TypeOutcome& o = g.sums[t];
      const TypeStarvation& s = starved[t];
      csv.Row({r.fleet, r.workload, r.protocol, r.policy, std::to_string(g.n_seeds),
               r.type_labels[t], std::to_string(o.arrived), std::to_string(o.accepted),
               pct(o.accepted, o.arrived), std::to_string(o.ever_placed),
               pct(o.ever_placed, o.arrived), Fixed(s.never_placed_pct),
               s.has_wait ? Fixed(s.wait_p95) : std::string()});
    }
  }
  return csv.text();
}

const SummaryRow* FindRow(const std::vector<SummaryRow>& rows, const std::string& fleet,
                          const std::string& workload, const std::string& protocol,
                          const std::string& policy) {
  for (const SummaryRow& r : rows) {
    if (r.fleet == fleet && r.workload == workload && r.protocol == protocol &&
        r.policy == policy) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace tessera::sim::mig_replay
