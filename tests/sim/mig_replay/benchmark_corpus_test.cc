// The MIG benchmark's decisions, pinned: every policy and the reference on small fleets of one
// 7-slice model, of the 4-slice RTX PRO 6000, and of both kinds mixed, under every protocol; the
// summary CSV of each (fleet, workload) is hashed (its acceptance, demand served, occupancy and
// fragmentation depend on every placement); multi-memory pins pods of several instances. The
// bounds place nothing; their own tests check them (bounds_test.cc, placement_bound_test.cc).
// A reshaping of the replay framework must keep every hash
// (tests/sim/data/mig_benchmark_corpus.txt).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sim/golden_hashes.h"
#include "sim/mig_replay/benchmark.h"
#include "sim/mig_replay/summary.h"
#include "sim/mig_replay/upper_bound.h"
#include "test_fleet.h"

namespace tessera::sim::mig_replay {
namespace {

TEST(MigBenchmarkCorpusTest, EveryPolicyPlacesAsRecorded) {
  std::map<std::string, uint64_t> hashes;
  for (const std::string fleet : {"a100-40gb", "rtx-pro-6000", "mixed-rtx"}) {
    for (const Workload& workload : {MakeSyntheticWorkload(SyntheticMix::kSmallHeavy),
                                     MakeMemoryMixWorkload(), MakeMultiMemoryWorkload()}) {
      if (!RunsOn(*FindFleet(fleet), workload, testing::Catalog())) continue;
      BenchmarkOptions o;
      o.fleets = {fleet};
      o.workloads = {workload};
      o.policies = KnownPolicyNames();
      o.placement_bound_max_gpus = 0;  // a bound places nothing (placement_bound_test.cc)
      o.seeds = {1, 2};
      o.nodes_per_fleet = 2;
      o.loads = {0.9, 1.3};
      auto records = RunBenchmark(o, testing::Catalog());
      ASSERT_TRUE(records.ok()) << records.error().message;
      std::vector<SummaryRow> rows = Summarize(*records);
      std::erase_if(rows, [](const SummaryRow& r) { return r.policy == kUpperBound; });
      hashes[fleet + "/" + workload.name] = sim::testing::Fnv1a(SummaryCsv(rows));
    }
  }
  EXPECT_EQ(hashes.size(), 8u);  // the share-based mix does not run on mixed-rtx
  sim::testing::ExpectGoldenHashes("mig_benchmark_corpus.txt", hashes,
                                   "fleet/workload hash (tests/sim/mig_replay/"
                                   "benchmark_corpus_test.cc)");
}

}  // namespace
}  // namespace tessera::sim::mig_replay
