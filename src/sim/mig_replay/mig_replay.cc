#include "sim/mig_replay/mig_replay.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/defrag_replay.h"
#include "sim/mig_replay/geometry_free.h"
#include "sim/mig_replay/headline.h"
#include "sim/mig_replay/offline_guided.h"
#include "sim/mig_replay/optimum_study.h"
#include "sim/mig_replay/placement_bound.h"
#include "sim/mig_replay/report.h"
#include "sim/mig_replay/summary.h"
#include "sim/mig_replay/upper_bound.h"
#include "sim/replay/progress_bar.h"
#include "sim/replay/tessera_policy.h"
#include "sim/replay/trace.h"

namespace tessera::sim::mig_replay {
namespace {

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Validates the names given to a list option against the known ones; empty selects all.
Result<std::vector<std::string>> Select(const std::vector<std::string>& given,
                                        const std::vector<std::string>& known,
                                        const std::string& option) {
  if (given.empty()) return known;
  for (const auto& name : given) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return Error{option + ": unknown value \"" + name + "\" (known: " + Joined(known) + ")"};
    }
  }
  return given;
}

}  // namespace

std::string SeedsLabel(const std::vector<uint64_t>& seeds) {
  std::string out;
  for (size_t i = 0; i < seeds.size();) {
    size_t j = i;
    while (j + 1 < seeds.size() && seeds[j + 1] == seeds[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(seeds[i]);
    if (j > i) out += "-" + std::to_string(seeds[j]);
    i = j + 1;
  }
  return out;
}

Status ReplayMig(const MigReplayOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  auto catalog = mig::GpuModelCatalog::Builtin();
  if (!catalog.ok()) return Error{"built-in MIG table: " + catalog.error().message};
  if (o.seeds.empty()) return Error{"--seeds: no seeds"};
  if (o.nodes_per_fleet < 1 || o.nodes_per_fleet > 999) {
    return Error{"--nodes-per-fleet: " + std::to_string(o.nodes_per_fleet) +
                 " is not between 1 and 999"};
  }
  if (o.jobs < 0) return Error{"--jobs: must be 0 (one per CPU) or more"};
  if (o.placement_bound_max_gpus < 0) {
    return Error{"--placement-bound-max-gpus: must be 0 (never) or more"};
  }
  if (o.stop_after_rejections < 0) return Error{"--stop-after-rejections: must be 0 or more"};
  for (int budget : o.defrag_evictions_per_hour) {
    if (budget < 0) return Error{"--defrag-evictions-per-hour: must be 0 (off) or more"};
  }
  if (!(o.defrag_interval_minutes > 0)) return Error{"--defrag-interval-minutes: must be > 0"};
  if (!(o.mean_lifetime_minutes > 0)) return Error{"--mean-lifetime-minutes: must be > 0"};
  for (double load : o.loads) {
    if (!(load > 0 && load <= 10)) {
      return Error{"--loads: " + std::to_string(load) + " is not an offered load in (0, 10]"};
    }
  }
  std::vector<std::string> fleet_names;
  for (const auto& f : AllFleets()) fleet_names.push_back(f.name);
  auto fleets = Select(o.fleets, fleet_names, "--fleet");
  if (!fleets.ok()) return fleets.error();
  // An empty --policy runs the default set; the optional variants must be named.
  std::vector<std::string> known_policies = KnownPolicyNames();
  for (const sched::NodePolicy& p : o.node_policies) {
    known_policies.push_back(replay::TesseraPolicyName(p));
  }
  auto policies =
      Select(o.policies.empty() ? AllPolicyNames() : o.policies, known_policies, "--policy");
  if (!policies.ok()) return policies.error();

  const std::vector<std::string> workload_names = {
      std::string(kWorkloadUniform),     std::string(kWorkloadSmallHeavy),
      std::string(kWorkloadLargeHeavy),  std::string(kWorkloadMemoryMix),
      std::string(kWorkloadMultiSmall),  std::string(kWorkloadMultiMixed),
      std::string(kWorkloadMultiMemory), std::string(kWorkloadOpenb)};
  auto chosen = Select(o.workloads, workload_names, "--workload");
  if (!chosen.ok()) return chosen.error();
  std::vector<std::string> notes;
  BenchmarkOptions options;
  for (const auto& name : chosen.value()) {
    if (name == kWorkloadUniform)
      options.workloads.push_back(MakeSyntheticWorkload(SyntheticMix::kUniform));
    if (name == kWorkloadSmallHeavy) {
      options.workloads.push_back(MakeSyntheticWorkload(SyntheticMix::kSmallHeavy));
    }
    if (name == kWorkloadLargeHeavy) {
      options.workloads.push_back(MakeSyntheticWorkload(SyntheticMix::kLargeHeavy));
    }
    if (name == kWorkloadMemoryMix) options.workloads.push_back(MakeMemoryMixWorkload());
    if (name == kWorkloadMultiSmall) options.workloads.push_back(MakeMultiSmallWorkload());
    if (name == kWorkloadMultiMixed) options.workloads.push_back(MakeMultiMixedWorkload());
    if (name == kWorkloadMultiMemory) options.workloads.push_back(MakeMultiMemoryWorkload());
    if (name != kWorkloadOpenb) continue;
    if (o.trace_csv.empty()) {
      if (!o.workloads.empty())
        return Error{"--workload openb: needs --trace PATH (an openb pod CSV)"};
      notes.push_back("openb workload skipped: no --trace given (the synthetic mixes ran).");
      std::fprintf(stderr, "tessera: %s\n", notes.back().c_str());
      continue;
    }
    auto pods = sim::replay::LoadTracePods(o.trace_csv);
    if (!pods.ok()) return Error{"--trace: " + pods.error().message};
    auto openb = MakeOpenbWorkload(pods.value());
    if (!openb.ok()) return Error{"--trace: " + openb.error().message};
    options.workloads.push_back(std::move(openb.value()));
    notes.push_back("openb workload: " + o.trace_csv);
  }
  options.fleets = fleets.value();
  options.policies = policies.value();
  options.node_policies = o.node_policies;
  options.seeds = o.seeds;
  options.nodes_per_fleet = o.nodes_per_fleet;
  options.loads = o.loads;
  options.pending_queue = !o.skip_pending;
  options.placement_bound_max_gpus = o.placement_bound_max_gpus;
  options.offline_guide = o.offline_guide;
  options.stop_after_rejections = o.stop_after_rejections;
  options.jobs = o.jobs;
  options.defrag_interval_minutes = o.defrag_interval_minutes;
  options.mean_lifetime_minutes = o.mean_lifetime_minutes;
  for (int budget : o.defrag_evictions_per_hour) {
    if (budget == 0) continue;
    if (o.skip_pending)
      return Error{"--defrag-evictions-per-hour: needs the pending-queue protocol"};
    if (std::find(options.policies.begin(), options.policies.end(), kPolicyTessera) ==
        options.policies.end()) {
      return Error{"--defrag-evictions-per-hour: compares with tessera, which --policy leaves out"};
    }
    const std::string name = DefragPolicyName(budget);
    if (std::find(options.policies.begin(), options.policies.end(), name) ==
        options.policies.end()) {
      options.policies.push_back(name);
    }
  }

  replay::ProgressBar bar(isatty(STDERR_FILENO) != 0);
  auto records = RunBenchmark(options, catalog.value(),
                              [&](int done, int total) { bar.Draw("mig benchmark", done, total); });
  bar.Clear();
  if (!records.ok()) return records.error();
  const std::vector<SummaryRow> rows = Summarize(records.value());
  std::vector<std::string> columns = options.policies;
  columns.emplace_back(kReferencePooledSlices);
  columns.emplace_back(kUpperBound);
  if (std::any_of(records->begin(), records->end(),
                  [](const RunRecord& r) { return r.policy == kPlacementBound; })) {
    columns.emplace_back(kPlacementBound);
    columns.emplace_back(kOfflineLpGuided);
  }
  const std::vector<HeadlineRow> headline =
      BuildHeadline(records.value(), kPolicyTessera, FeaturedBaselines());
  std::fputs(HeadlineText(headline).c_str(), stdout);
  const std::string defrag_table = DefragTableMarkdown(records.value(), o.mean_lifetime_minutes);
  if (!defrag_table.empty()) {
    std::printf("\ndefragmentation against tessera without it (same seeds):\n%s",
                defrag_table.c_str());
  }

  std::vector<OptimumCase> optimum;
  if (!o.skip_optimum) {
    OptimumStudyOptions study;
    study.seeds = options.seeds;
    auto cases = RunOptimumStudy(options.policies, study, catalog.value(), o.node_policies);
    if (!cases.ok()) return cases.error();
    optimum = std::move(cases.value());
    std::printf("\nserved slices / offline optimum (tiny instances, mean %%):");
    for (const auto& p : options.policies) {
      double sum = 0;
      int n = 0;
      for (const auto& c : optimum) {
        if (c.optimum == 0) continue;
        sum += 100.0 * static_cast<double>(c.served.at(p)) / static_cast<double>(c.optimum);
        ++n;
      }
      std::printf(" %s %.1f", p.c_str(), n > 0 ? sum / n : 0.0);
    }
    std::printf("\n");
  }

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("%zu runs in %.1f s (--jobs %d)\n", records->size(), seconds, o.jobs);
  if (!o.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) return Error{"--out: " + o.out_dir + ": " + ec.message()};
    std::ofstream(o.out_dir + "/summary.csv") << SummaryCsv(rows);
    std::ofstream(o.out_dir + "/runs.csv") << RunsCsv(records.value());
    std::ofstream(o.out_dir + "/types.csv") << TypesCsv(records.value());
    std::ofstream(o.out_dir + "/headline.md") << HeadlineMarkdown(headline);
    if (!defrag_table.empty()) std::ofstream(o.out_dir + "/defrag.md") << defrag_table;
    if (!optimum.empty()) {
      std::ofstream(o.out_dir + "/optimum.csv") << OptimumCsv(optimum, options.policies);
    }
    MigReportInput report;
    report.title = "tessera MIG placement benchmark";
    char params[256];
    std::snprintf(
        params, sizeof(params),
        "%d nodes per fleet, seeds %s, offered loads %s (steady state%s), saturation stops after "
        "%d consecutive rejections.",
        o.nodes_per_fleet, SeedsLabel(o.seeds).c_str(),
        [&] {
          std::string s;
          for (double l : o.loads) s += (s.empty() ? "" : ", ") + std::to_string(l).substr(0, 4);
          return s;
        }()
            .c_str(),
        o.skip_pending ? "" : " and pending queue", o.stop_after_rejections);
    report.notes = notes;
    report.notes.emplace_back(params);
    report.policies = columns;
    report.rows = rows;
    report.headline = headline;
    report.optimum = optimum;
    std::ofstream(o.out_dir + "/report.html") << RenderMigHtmlReport(report);
    std::printf("wrote %s/summary.csv, runs.csv, types.csv, headline.md, %sreport.html\n",
                o.out_dir.c_str(), optimum.empty() ? "" : "optimum.csv, ");
  }
  return Status{};
}

}  // namespace tessera::sim::mig_replay
