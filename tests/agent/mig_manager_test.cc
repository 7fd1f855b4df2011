// The MIG manager on the simulated NVML: realize at the reserved placements, reuse on retry,
// refuse what another pod holds, reconcile (adopt, finish, destroy, leave alone), and the
// crash-point suite: the agent aborted right after every driver call of the create and destroy
// paths, restarted, leaves 0 leaked and 0 duplicated instances.

#include "agent/mig_manager.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "support/nvml_sim.h"

namespace tessera {
namespace {

using agent::LedgerFile;
using agent::MigManager;
using node::NodeClaims;
using node::PodMigClaim;
using testing::RtxPro6000;
using testing::SimulatedNvml;

codec::MigAllocation Alloc(int container, int device, const std::string& gpu, uint32_t start,
                           const std::string& profile = "1g.24gb", uint32_t size = 3) {
  codec::MigAllocation a;
  a.container_index = container;
  a.device_index = device;
  a.gpu_uuid = gpu;
  a.profile = profile;
  a.placement = {start, size};
  return a;
}

// The motivating case's first pod: two 1g.24gb of one container at 9 and 6.
PodMigClaim PodA() {
  return {"default/a", "uid-a", {Alloc(0, 0, "GPU-rtx-0", 9), Alloc(0, 1, "GPU-rtx-0", 6)}};
}
PodMigClaim PodB() {
  return {"default/b", "uid-b", {Alloc(0, 0, "GPU-rtx-0", 3), Alloc(0, 1, "GPU-rtx-0", 0)}};
}

NodeClaims Claims(std::vector<PodMigClaim> pods) {
  NodeClaims c;
  c.claims = std::move(pods);
  return c;
}

struct Agent {
  explicit Agent(SimulatedNvml& sim)
      : driver(sim.Driver()),
        manager(*driver, LedgerFile(sim.Path("ledger.json")), [this] { return ++clock; }) {
    EXPECT_TRUE(manager.Start().ok());
    manager.SetMigGpus({"GPU-rtx-0"});
  }
  std::vector<node::DriverMigInstance> Instances() {
    auto list = driver->ListInstances("GPU-rtx-0");
    EXPECT_TRUE(list.ok()) << list.error().message;
    return list.value();
  }
  int64_t clock = 1000;
  std::unique_ptr<nvml::NvmlGpuDriver> driver;
  MigManager manager;
};

std::set<uint32_t> Starts(const std::vector<node::DriverMigInstance>& list) {
  std::set<uint32_t> out;
  for (const auto& i : list) out.insert(i.placement.start);
  return out;
}

TEST(MigManagerTest, RealizesAtTheReservedPlacementsAndReusesOnRetry) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Agent agent(sim);
  auto first = agent.manager.Realize(PodA(), 0, Claims({PodA()}));
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_EQ(first->size(), 2U);
  EXPECT_EQ((*first)[0].allocation.placement.start, 9U);
  EXPECT_EQ((*first)[1].allocation.placement.start, 6U);
  EXPECT_TRUE((*first)[0].created);
  ASSERT_TRUE((*first)[0].allocation.runtime.has_value());
  EXPECT_NE((*first)[0].allocation.runtime->mig_uuid, (*first)[1].allocation.runtime->mig_uuid);
  EXPECT_EQ(Starts(agent.Instances()), (std::set<uint32_t>{6, 9}));

  auto retry = agent.manager.Realize(PodA(), 0, Claims({PodA()}));
  ASSERT_TRUE(retry.ok()) << retry.error().message;
  EXPECT_FALSE((*retry)[0].created);
  EXPECT_EQ((*retry)[0].allocation.runtime, (*first)[0].allocation.runtime);
  EXPECT_EQ(agent.Instances().size(), 2U);
  const auto ledger = agent.manager.LedgerSnapshot();
  ASSERT_EQ(ledger.size(), 2U);
  EXPECT_TRUE(ledger[0].created && ledger[1].created);
  EXPECT_EQ(ledger[0].pod_uid, "uid-a");
}

TEST(MigManagerTest, RefusesSlicesAnotherPodHoldsAndTouchesNothing) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Agent agent(sim);
  ASSERT_TRUE(agent.manager.Realize(PodA(), 0, Claims({PodA()})).ok());
  const auto before = agent.Instances();
  // A contradictory claim: pod c is given slot 6, which pod a holds, plus a free one.
  PodMigClaim c{"default/c", "uid-c", {Alloc(0, 0, "GPU-rtx-0", 0), Alloc(0, 1, "GPU-rtx-0", 6)}};
  auto refused = agent.manager.Realize(c, 0, Claims({PodA(), c}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("pod default/c container 0 device 1"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("held by pod default/a"), std::string::npos);
  EXPECT_EQ(agent.Instances(), before);  // not even the free slot was taken
  PodMigClaim overlap{"default/d", "uid-d", {Alloc(0, 0, "GPU-rtx-0", 6, "2g.48gb", 6)}};
  auto blocked = agent.manager.Realize(overlap, 0, Claims({PodA(), overlap}));
  ASSERT_FALSE(blocked.ok());
  EXPECT_NE(blocked.error().message.find("slices are taken by 1g.24gb at 6:3 of pod default/a"),
            std::string::npos)
      << blocked.error().message;
  auto unknown = agent.manager.Realize({"default/e", "uid-e", {Alloc(0, 0, "GPU-nope", 0)}}, 0, {});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("GPU-nope"), std::string::npos);
}

TEST(MigManagerTest, AFailedCreateRollsBackTheWholeContainer) {
  SimulatedNvml sim("[" + RtxPro6000() + "]",
                    "fail:nvmlDeviceCreateGpuInstanceWithPlacement:2:INSUFFICIENT_RESOURCES");
  Agent agent(sim);
  auto failed = agent.manager.Realize(PodA(), 0, Claims({PodA()}));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("Insufficient Resources"), std::string::npos);
  EXPECT_TRUE(agent.Instances().empty());
  EXPECT_TRUE(agent.manager.LedgerSnapshot().empty());
  auto again = agent.manager.Realize(PodA(), 0, Claims({PodA()}));  // the 3rd call succeeds
  ASSERT_TRUE(again.ok()) << again.error().message;
}

TEST(MigManagerTest, ReconcileDestroysOnlyTesserasInstancesOfGonePods) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Agent agent(sim);
  ASSERT_TRUE(agent.manager.Realize(PodA(), 0, Claims({PodA()})).ok());
  ASSERT_TRUE(agent.manager.Realize(PodB(), 0, Claims({PodA(), PodB()})).ok());
  const auto b_before = agent.Instances();

  // Not synced: nothing is destroyed although pod a is missing from the view.
  auto partial = agent.manager.Reconcile(Claims({PodB()}), {/*complete=*/false, agent.clock + 1});
  EXPECT_EQ(partial.destroyed, 0);
  EXPECT_EQ(partial.protected_count, 2);
  // A view older than pod a's instances: an Allocate raced the pod list; still protected.
  auto stale = agent.manager.Reconcile(Claims({PodB()}), {true, /*fresh_ms=*/1000});
  EXPECT_EQ(stale.destroyed, 0);
  // Synced and fresh: pod a is gone, its two instances go, pod b's stay exactly as they were.
  auto done = agent.manager.Reconcile(Claims({PodB()}), {true, agent.clock + 1});
  EXPECT_EQ(done.destroyed, 2);
  EXPECT_EQ(done.kept, 2);
  EXPECT_TRUE(done.errors.empty());
  EXPECT_EQ(Starts(agent.Instances()), (std::set<uint32_t>{0, 3}));
  for (const auto& inst : agent.Instances()) {
    EXPECT_NE(std::find(b_before.begin(), b_before.end(), inst), b_before.end());
  }
  EXPECT_EQ(agent.manager.LedgerSnapshot().size(), 2U);
}

// Issue 38 A: an instance tessera did not create that sits at a pod's reserved placement is
// not taken over (no ledger entry, no UUID on the pod, no destroy when the pod ends); it is
// reported as blocking the pod, and listed as foreign.
TEST(MigManagerTest, ForeignInstancesAreNeverTakenOverEvenAtAPodsPlacement) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  {  // Instances made by someone else (nvidia-mig-parted, an operator, a lost ledger).
    auto driver = sim.Driver();
    auto gi = driver->CreateGpuInstance("GPU-rtx-0", "1g.24gb", {9, 3});
    ASSERT_TRUE(gi.ok() && driver->CreateComputeInstance(gi.value()).ok());
    ASSERT_TRUE(driver->CreateGpuInstance("GPU-rtx-0", "1g.24gb", {0, 3}).ok());  // no CI
  }
  Agent agent(sim);
  const auto before = agent.Instances();
  PodMigClaim a{"default/a", "uid-a", {Alloc(0, 0, "GPU-rtx-0", 9)}};
  auto report = agent.manager.Reconcile(Claims({a}), {true, agent.clock + 1});
  EXPECT_EQ(report.adopted, 0);
  EXPECT_EQ(report.kept, 0);
  EXPECT_EQ(report.finished, 0);
  EXPECT_EQ(report.left_alone, 2);
  EXPECT_EQ(report.destroyed, 0);
  EXPECT_TRUE(report.identities.empty());  // no UUID written into the pod
  EXPECT_TRUE(agent.manager.LedgerSnapshot().empty());
  ASSERT_EQ(report.foreign_at_claims.size(), 1U);
  EXPECT_EQ(report.foreign_at_claims[0].pod, "default/a");
  EXPECT_NE(report.foreign_at_claims[0].message.find("not created by tessera"), std::string::npos);
  EXPECT_EQ(report.foreign.size(), 2U);
  EXPECT_EQ(agent.manager.ForeignInstances().size(), 2U);
  // The pod's Allocate is refused rather than handed the foreign instance.
  auto refused = agent.manager.Realize(a, 0, Claims({a}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("tessera did not create"), std::string::npos);
  // The pod ends: what it never owned stays.
  auto ended = agent.manager.Reconcile(Claims({}), {true, agent.clock + 1});
  EXPECT_EQ(ended.destroyed, 0);
  EXPECT_EQ(agent.Instances(), before);
  // Reclaiming is opt-in, and spares a live pod's placement (the pod may run on it).
  auto reclaim =
      agent.manager.Reconcile(Claims({a}), {true, agent.clock + 1}, {0, /*reclaim_foreign=*/true});
  EXPECT_EQ(reclaim.destroyed, 1);
  EXPECT_EQ(Starts(agent.Instances()), (std::set<uint32_t>{9}));
  EXPECT_EQ(agent.manager.ForeignInstances().size(), 1U);
}

// Issue 38 B: one failed listing of a GPU never empties the ledger, so the instances of a pod
// that ended are still destroyed once the GPU can be listed again.
TEST(MigManagerTest, AFailedListingForgetsNothing) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  {
    Agent setup(sim);
    ASSERT_TRUE(setup.manager.Realize(PodA(), 0, Claims({PodA()})).ok());
  }
  SimulatedNvml::SetFaults("fail:nvmlDeviceGetGpuInstances:1:UNKNOWN");
  Agent agent(sim);
  agent.clock += 1000;  // the pod views below are newer than the ledger entries
  auto failed = agent.manager.Reconcile(Claims({PodA()}), {true, agent.clock + 1});
  EXPECT_FALSE(failed.errors.empty());
  EXPECT_EQ(failed.forgotten, 0);
  EXPECT_EQ(agent.manager.LedgerSnapshot().size(), 2U);
  // Pod a ends; the GPU lists again.
  auto done = agent.manager.Reconcile(Claims({}), {true, agent.clock + 1});
  EXPECT_TRUE(done.errors.empty()) << done.errors.front();
  EXPECT_EQ(done.destroyed, 2);
  EXPECT_TRUE(agent.Instances().empty());
  EXPECT_TRUE(agent.manager.LedgerSnapshot().empty());
}

// Issue 38 B: a GPU that is not among the MIG GPUs (discovery lost it) is still listed for the
// ledger's sake, and while it cannot be listed its entries stay.
TEST(MigManagerTest, AGpuMissingFromDiscoveryKeepsItsEntries) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  {
    Agent setup(sim);
    ASSERT_TRUE(setup.manager.Realize(PodA(), 0, Claims({PodA()})).ok());
  }
  SimulatedNvml::SetFaults("fail:nvmlDeviceGetHandleByUUID:*:GPU_IS_LOST");
  {
    auto driver = sim.Driver();
    MigManager lost(*driver, LedgerFile(sim.Path("ledger.json")), [] { return int64_t{5000}; });
    ASSERT_TRUE(lost.Start().ok());
    lost.SetMigGpus({});
    auto report = lost.Reconcile(Claims({}), {true, 5000});
    EXPECT_EQ(report.destroyed, 0);
    EXPECT_EQ(lost.LedgerSnapshot().size(), 2U);
  }
  SimulatedNvml::SetFaults("");
  Agent agent(sim);
  agent.clock += 5000;
  agent.manager.SetMigGpus({});  // still not discovered: the ledger names it
  auto done = agent.manager.Reconcile(Claims({}), {true, agent.clock + 1});
  EXPECT_EQ(done.destroyed, 2);
  EXPECT_TRUE(agent.Instances().empty());
}

// Issue 38 C (the decision): a pod view whose freshness is older than a ledger entry does not
// show that entry's pod gone, however late the clock.
TEST(MigManagerTest, AViewNotNewerThanTheEntryDestroysNothing) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Agent agent(sim);
  const int64_t watch_died = agent.clock;
  ASSERT_TRUE(agent.manager.Realize(PodA(), 0, Claims({PodA()})).ok());
  agent.clock += 600000;  // ten minutes later, the cache still does not know pod a
  auto stale = agent.manager.Reconcile(Claims({}), {true, watch_died}, {10000, false});
  EXPECT_EQ(stale.destroyed, 0);
  EXPECT_EQ(stale.protected_count, 2);
  EXPECT_EQ(stale.awaiting_fresher_view.size(), 2U);
  EXPECT_EQ(agent.Instances().size(), 2U);
  // A relist that shows pod a gone, newer than the entries by the grace period.
  auto relisted = agent.manager.Reconcile(Claims({}), {true, agent.clock}, {10000, false});
  EXPECT_EQ(relisted.destroyed, 2);
}

// Entries that wait only on the view's freshness are released by a read proving their pod
// gone: each pod is asked for once per pass, whatever the number of its instances; a read
// that proves nothing, or fails, releases nothing.
TEST(MigManagerTest, AHeldBackDestroyIsReleasedOnlyByAProofThePodIsGone) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Agent agent(sim);
  ASSERT_TRUE(agent.manager.Realize(PodA(), 0, Claims({PodA()})).ok());
  // Pod a was deleted at once: the view's last event is not newer than its entries by 10 s.
  const node::PodViewFreshness view{true, agent.clock + 1};
  std::vector<std::vector<node::PodRef>> asked;
  agent::GoneProofs answer;
  agent::ReconcileOptions options;
  options.grace_ms = 10000;
  options.prove_gone = [&](const std::vector<node::PodRef>& pods) {
    asked.push_back(pods);
    return answer;
  };
  answer.errors = {"read pod default/a: no answer"};
  auto failed = agent.manager.Reconcile(Claims({}), view, options);
  EXPECT_EQ(failed.destroyed, 0);
  EXPECT_EQ(failed.awaiting_fresher_view.size(), 2U);
  EXPECT_EQ(failed.errors, answer.errors);
  EXPECT_TRUE(failed.proven_gone.empty());
  ASSERT_EQ(asked.size(), 1U);
  EXPECT_EQ(asked[0], (std::vector<node::PodRef>{{"default/a", "uid-a"}}));

  answer = {{"uid-other"}, {}};  // a read that shows pod a still there proves nothing
  EXPECT_EQ(agent.manager.Reconcile(Claims({}), view, options).destroyed, 0);
  EXPECT_EQ(agent.Instances().size(), 2U);

  answer = {{"uid-a"}, {}};
  auto proven = agent.manager.Reconcile(Claims({}), view, options);
  EXPECT_EQ(proven.destroyed, 2);
  EXPECT_TRUE(proven.awaiting_fresher_view.empty());
  EXPECT_EQ(proven.proven_gone, (std::vector<std::string>{"default/a"}));
  EXPECT_TRUE(agent.Instances().empty());
  EXPECT_TRUE(agent.manager.LedgerSnapshot().empty());
  EXPECT_EQ(asked.size(), 3U);
  // Nothing waits any more: no read.
  EXPECT_EQ(agent.manager.Reconcile(Claims({}), view, options).destroyed, 0);
  EXPECT_EQ(asked.size(), 3U);
}

// The reads run without the manager's lock (an Allocate does not wait on the network), and the
// pass plans again on what the GPUs and the ledger hold after them.
TEST(MigManagerTest, ProofsAreReadWithoutTheLockAndThePassPlansAgain) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Agent agent(sim);
  ASSERT_TRUE(agent.manager.Realize(PodA(), 0, Claims({PodA()})).ok());
  agent::ReconcileOptions options;
  options.grace_ms = 10000;
  options.prove_gone = [&](const std::vector<node::PodRef>&) {
    // Pod b's Allocate, while pod a is being read.
    EXPECT_TRUE(agent.manager.Realize(PodB(), 0, Claims({PodB()})).ok());
    return agent::GoneProofs{{"uid-a"}, {}};
  };
  auto report = agent.manager.Reconcile(Claims({}), {true, agent.clock + 1}, options);
  EXPECT_EQ(report.destroyed, 2);
  EXPECT_EQ(Starts(agent.Instances()), (std::set<uint32_t>{0, 3}));  // pod b's, too young
  EXPECT_EQ(report.awaiting_fresher_view.size(), 2U);
  const auto ledger = agent.manager.LedgerSnapshot();
  ASSERT_EQ(ledger.size(), 2U);
  EXPECT_EQ(ledger[0].pod_uid, "uid-b");
  EXPECT_EQ(ledger[1].pod_uid, "uid-b");
}

TEST(MigManagerTest, DestroyErrorsAreRetriedAndNeverBlockAllocate) {
  SimulatedNvml sim("[" + RtxPro6000() + "]", "fail:nvmlComputeInstanceDestroy:*:IN_USE");
  Agent agent(sim);
  ASSERT_TRUE(agent.manager.Realize(PodA(), 0, Claims({PodA()})).ok());
  auto report = agent.manager.Reconcile(Claims({}), {true, agent.clock + 1});
  EXPECT_EQ(report.destroyed, 0);
  ASSERT_EQ(report.errors.size(), 2U);
  EXPECT_NE(report.errors[0].find("In use by another client"), std::string::npos);
  EXPECT_TRUE(agent.manager.Realize(PodB(), 0, Claims({PodB()})).ok());  // W3 does not apply
  EXPECT_EQ(agent.manager.LedgerSnapshot().size(), 4U);  // a's stay recorded for the next pass
}

TEST(MigManagerTest, AnUnreadableClaimHoldsItsGpu) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  Agent agent(sim);
  ASSERT_TRUE(agent.manager.Realize(PodA(), 0, Claims({PodA()})).ok());
  NodeClaims claims;
  claims.unreadable_gpus = {"GPU-rtx-0"};
  auto report = agent.manager.Reconcile(claims, {true, agent.clock + 1});
  EXPECT_EQ(report.destroyed, 0);
  EXPECT_EQ(report.protected_count, 2);
}

// Issue 38 E: a reboot (GPU reset, driver reload) wipes every instance while pod a still
// runs. The restarted agent makes them again at the same placements, writing an intent first,
// and reports the new identities for the pod.
TEST(MigManagerTest, ALivePodsInstancesLostInARebootAreRecreatedAtTheirPlacements) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  std::set<std::string> old_uuids;
  {
    Agent before(sim);
    auto realized = before.manager.Realize(PodA(), 0, Claims({PodA()}));
    ASSERT_TRUE(realized.ok()) << realized.error().message;
    for (const auto& r : *realized) old_uuids.insert(r.allocation.runtime->mig_uuid);
  }
  sim.Reboot();
  Agent agent(sim);
  ASSERT_TRUE(agent.Instances().empty());
  auto report = agent.manager.Reconcile(Claims({PodA()}), {true, agent.clock});
  EXPECT_TRUE(report.errors.empty()) << report.errors.front();
  EXPECT_EQ(report.forgotten, 0);
  ASSERT_EQ(report.recreated.size(), 2U);
  EXPECT_TRUE(report.lost.empty());
  const auto actual = agent.Instances();
  EXPECT_EQ(Starts(actual), (std::set<uint32_t>{6, 9}));
  const auto ledger = agent.manager.LedgerSnapshot();
  ASSERT_EQ(ledger.size(), 2U);
  for (const auto& inst : actual) {
    EXPECT_TRUE(inst.has_compute_instance);
    EXPECT_EQ(old_uuids.count(inst.mig_uuid), 0U) << inst.mig_uuid;  // a new MIG UUID
    const auto* entry = node::OwningEntry(ledger, inst);
    ASSERT_NE(entry, nullptr);
    EXPECT_TRUE(entry->created);
    EXPECT_FALSE(entry->lost);
    EXPECT_EQ(entry->pod_uid, "uid-a");
    EXPECT_EQ(entry->mig_uuid, inst.mig_uuid);
  }
  // The pod is told its new identities.
  ASSERT_EQ(report.identities["default/a"].size(), 2U);
  for (const auto& a : report.identities["default/a"]) {
    auto inst = std::find_if(actual.begin(), actual.end(),
                             [&](const auto& i) { return node::Matches(i, a); });
    ASSERT_NE(inst, actual.end());
    EXPECT_EQ(a.runtime->mig_uuid, inst->mig_uuid);
  }
  // The next pass, with the identities recorded on the pod, keeps them.
  PodMigClaim recorded = PodA();
  recorded.allocations = report.identities["default/a"];
  auto again = agent.manager.Reconcile(Claims({recorded}), {true, agent.clock});
  EXPECT_EQ(again.kept, 2);
  EXPECT_TRUE(again.recreated.empty());
  EXPECT_TRUE(again.identities.empty());
  EXPECT_EQ(agent.Instances(), actual);
}

// Issue 38 E: after the reboot an operator made an instance at one of pod a's placements. It is
// not taken over nor destroyed; that instance is reported lost, the other recreated, and once
// the slices are free again the lost one is recreated too. A pod that ended gets nothing.
TEST(MigManagerTest, ALostInstanceIsNotRecreatedWhereAForeignInstanceSits) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  {
    Agent before(sim);
    ASSERT_TRUE(before.manager.Realize(PodA(), 0, Claims({PodA()})).ok());
    ASSERT_TRUE(before.manager.Realize(PodB(), 0, Claims({PodA(), PodB()})).ok());
  }
  sim.Reboot();
  node::DriverMigInstance foreign;
  {
    auto driver = sim.Driver();
    auto gi = driver->CreateGpuInstance("GPU-rtx-0", "1g.24gb", {9, 3});
    ASSERT_TRUE(gi.ok());
    auto ci = driver->CreateComputeInstance(gi.value());
    ASSERT_TRUE(ci.ok());
    foreign = ci.value();
  }
  Agent agent(sim);
  agent.clock += 1000;  // the view below is newer than pod b's entries: pod b ended
  auto report = agent.manager.Reconcile(Claims({PodA()}), {true, agent.clock});
  ASSERT_EQ(report.recreated.size(), 1U);
  EXPECT_EQ(report.recreated[0].allocation.placement.start, 6U);
  ASSERT_EQ(report.lost.size(), 1U);
  EXPECT_EQ(report.lost[0].pod, "default/a");
  EXPECT_EQ(report.lost[0].allocation.placement.start, 9U);
  EXPECT_NE(report.lost[0].message.find("cannot be recreated"), std::string::npos)
      << report.lost[0].message;
  EXPECT_EQ(report.foreign_at_claims.size(), 1U);
  EXPECT_EQ(report.kept, 0);
  EXPECT_EQ(report.forgotten, 2);  // pod b's
  auto actual = agent.Instances();
  EXPECT_EQ(Starts(actual), (std::set<uint32_t>{6, 9}));
  EXPECT_NE(std::find(actual.begin(), actual.end(), foreign), actual.end());  // untouched
  auto ledger = agent.manager.LedgerSnapshot();
  ASSERT_EQ(ledger.size(), 2U);
  EXPECT_EQ(node::OwningEntry(ledger, foreign), nullptr);  // never proven tessera's
  // The operator removes it: pod a's instance is made there.
  {
    auto driver = sim.Driver();
    ASSERT_TRUE(driver->DestroyInstance(foreign).ok());
  }
  auto freed = agent.manager.Reconcile(Claims({PodA()}), {true, agent.clock});
  ASSERT_EQ(freed.recreated.size(), 1U);
  EXPECT_EQ(freed.recreated[0].allocation.placement.start, 9U);
  EXPECT_TRUE(freed.lost.empty());
  EXPECT_EQ(agent.Instances().size(), 2U);
}

// A recreation the driver refuses is reported and retried; a stale pod view recreates nothing.
TEST(MigManagerTest, ARefusedRecreationIsRetriedAndAStaleViewRecreatesNothing) {
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  {
    Agent before(sim);
    ASSERT_TRUE(before.manager.Realize(PodA(), 0, Claims({PodA()})).ok());
  }
  sim.Reboot();
  SimulatedNvml::SetFaults("fail:nvmlDeviceCreateGpuInstanceWithPlacement:1:UNKNOWN");
  Agent agent(sim);
  const int64_t watch_died = agent.clock;
  agent.clock += node::kRecreateMaxViewAgeMs + 1;
  auto stale = agent.manager.Reconcile(Claims({PodA()}), {true, watch_died});
  EXPECT_TRUE(stale.recreated.empty());
  EXPECT_TRUE(agent.Instances().empty());
  EXPECT_EQ(stale.forgotten, 0);
  auto first = agent.manager.Reconcile(Claims({PodA()}), {true, agent.clock});
  EXPECT_EQ(first.recreated.size(), 1U);
  ASSERT_EQ(first.lost.size(), 1U);
  EXPECT_NE(first.lost[0].message.find("recreating its lost MIG instance"), std::string::npos)
      << first.lost[0].message;
  EXPECT_EQ(agent.manager.LedgerSnapshot().size(), 2U);
  auto retried = agent.manager.Reconcile(Claims({PodA()}), {true, agent.clock});
  EXPECT_EQ(retried.recreated.size(), 1U);
  EXPECT_TRUE(retried.lost.empty());
  EXPECT_EQ(Starts(agent.Instances()), (std::set<uint32_t>{6, 9}));
}

// --- Crash points -------------------------------------------------------------------------

// The agent dies right after a recreation's driver call: the intent written before it proves
// what the driver made, and the restarted agent finishes it for the pod, leaking nothing.
TEST(MigManagerTest, ARecreationInterruptedByACrashIsFinishedAfterTheRestart) {
  GTEST_FLAG_SET(death_test_style, "fast");
  for (const std::string function :
       {"nvmlDeviceCreateGpuInstanceWithPlacement", "nvmlGpuInstanceCreateComputeInstance"}) {
    SCOPED_TRACE(function);
    SimulatedNvml sim("[" + RtxPro6000() + "]");
    {
      Agent before(sim);
      ASSERT_TRUE(before.manager.Realize(PodA(), 0, Claims({PodA()})).ok());
    }
    sim.Reboot();
    EXPECT_DEATH(
        {
          SimulatedNvml::SetFaults("abort-after:" + function + ":1");
          Agent agent(sim);
          (void)agent.manager.Reconcile(Claims({PodA()}), {true, agent.clock});
        },
        "abort after " + function);
    SimulatedNvml::SetFaults("");
    Agent restarted(sim);
    auto report = restarted.manager.Reconcile(Claims({PodA()}), {true, restarted.clock});
    EXPECT_TRUE(report.errors.empty()) << report.errors.front();
    const auto actual = restarted.Instances();
    EXPECT_EQ(Starts(actual), (std::set<uint32_t>{6, 9}));
    const auto ledger = restarted.manager.LedgerSnapshot();  // OwningEntry points into it
    for (const auto& inst : actual) {
      EXPECT_TRUE(inst.has_compute_instance);
      const auto* entry = node::OwningEntry(ledger, inst);
      ASSERT_NE(entry, nullptr);
      EXPECT_EQ(entry->pod_uid, "uid-a");
    }
    EXPECT_EQ(report.identities["default/a"].size(), 2U);
  }
}

struct CrashPoint {
  std::string function;
  int call;
};

// Every driver mutation of realizing pod a (two instances) and of destroying it.
const std::vector<CrashPoint> kCreatePoints = {
    {"nvmlDeviceCreateGpuInstanceWithPlacement", 1},
    {"nvmlDeviceCreateGpuInstanceWithPlacement", 2},
    {"nvmlGpuInstanceCreateComputeInstance", 1},
    {"nvmlGpuInstanceCreateComputeInstance", 2},
};
const std::vector<CrashPoint> kDestroyPoints = {
    {"nvmlComputeInstanceDestroy", 1},
    {"nvmlGpuInstanceDestroy", 1},
    {"nvmlComputeInstanceDestroy", 2},
    {"nvmlGpuInstanceDestroy", 2},
};

struct Census {
  int leaked = 0;      // instances no live pod claims
  int duplicated = 0;  // claimed placements with more than one instance
  bool b_untouched = true;
};

Census Count(const std::vector<node::DriverMigInstance>& actual, const NodeClaims& live,
             const std::vector<node::DriverMigInstance>& b_before) {
  Census c;
  std::map<std::string, int> per_key;
  for (const auto& inst : actual) {
    bool claimed = false;
    for (const auto& pod : live.claims) {
      for (const auto& a : pod.allocations) claimed = claimed || node::Matches(inst, a);
    }
    if (!claimed) ++c.leaked;
    ++per_key[inst.gpu_uuid + "/" + std::to_string(inst.placement.start)];
  }
  for (const auto& [key, n] : per_key) c.duplicated += n > 1 ? n - 1 : 0;
  for (const auto& b : b_before) {
    c.b_untouched = c.b_untouched && std::find(actual.begin(), actual.end(), b) != actual.end();
  }
  return c;
}

void PrintTo(const CrashPoint& p, std::ostream* os) { *os << p.function << "#" << p.call; }

class MigCreateCrashTest : public ::testing::TestWithParam<std::tuple<CrashPoint, bool>> {};
class MigDestroyCrashTest : public ::testing::TestWithParam<CrashPoint> {};

// Crash while realizing pod a (pod b already running). After the restart either pod a is still
// live (kubelet retries Allocate: it must end with exactly its two placements) or it failed
// (its instances must be gone).
TEST_P(MigCreateCrashTest, AbortedAllocate) {
  GTEST_FLAG_SET(death_test_style, "fast");
  const auto& [point, a_survives] = GetParam();
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  std::vector<node::DriverMigInstance> b_before;
  {
    Agent agent(sim);
    ASSERT_TRUE(agent.manager.Realize(PodB(), 0, Claims({PodB()})).ok());
    b_before = agent.Instances();
  }
  const std::string rule = "abort-after:" + point.function + ":" + std::to_string(point.call);
  EXPECT_DEATH(
      {
        SimulatedNvml::SetFaults(rule);
        Agent agent(sim);
        (void)agent.manager.Realize(PodA(), 0, Claims({PodA(), PodB()}));
      },
      "abort after " + point.function);
  SimulatedNvml::SetFaults("");

  Agent restarted(sim);
  const NodeClaims live = a_survives ? Claims({PodA(), PodB()}) : Claims({PodB()});
  restarted.clock += 1000;  // the restarted agent's pod view is newer than the crashed ledger
  auto report = restarted.manager.Reconcile(live, {true, restarted.clock});
  EXPECT_TRUE(report.errors.empty()) << report.errors.front();
  if (a_survives) {
    auto retried = restarted.manager.Realize(PodA(), 0, live);
    ASSERT_TRUE(retried.ok()) << retried.error().message;
  }
  const auto actual = restarted.Instances();
  const Census census = Count(actual, live, b_before);
  EXPECT_EQ(census.leaked, 0);
  EXPECT_EQ(census.duplicated, 0);
  EXPECT_TRUE(census.b_untouched);
  EXPECT_EQ(Starts(actual),
            a_survives ? (std::set<uint32_t>{0, 3, 6, 9}) : (std::set<uint32_t>{0, 3}));
  for (const auto& inst : actual) EXPECT_TRUE(inst.has_compute_instance);
}

// Crash while destroying the instances of pod a, which ended; the restart finishes the job.
TEST_P(MigDestroyCrashTest, AbortedReclaim) {
  GTEST_FLAG_SET(death_test_style, "fast");
  const CrashPoint& point = GetParam();
  SimulatedNvml sim("[" + RtxPro6000() + "]");
  std::vector<node::DriverMigInstance> b_before;
  {
    Agent agent(sim);
    ASSERT_TRUE(agent.manager.Realize(PodB(), 0, Claims({PodB()})).ok());
    b_before = agent.Instances();
    ASSERT_TRUE(agent.manager.Realize(PodA(), 0, Claims({PodA(), PodB()})).ok());
  }
  const std::string rule = "abort-after:" + point.function + ":" + std::to_string(point.call);
  EXPECT_DEATH(
      {
        SimulatedNvml::SetFaults(rule);
        Agent agent(sim);
        agent.clock += 1000;
        (void)agent.manager.Reconcile(Claims({PodB()}), {true, agent.clock});
      },
      "abort after " + point.function);
  SimulatedNvml::SetFaults("");
  Agent restarted(sim);
  restarted.clock += 2000;
  auto report = restarted.manager.Reconcile(Claims({PodB()}), {true, restarted.clock});
  EXPECT_TRUE(report.errors.empty()) << report.errors.front();
  const auto actual = restarted.Instances();
  const Census census = Count(actual, Claims({PodB()}), b_before);
  EXPECT_EQ(census.leaked, 0);
  EXPECT_EQ(census.duplicated, 0);
  EXPECT_TRUE(census.b_untouched);
  EXPECT_EQ(restarted.manager.LedgerSnapshot().size(), 2U);
}

std::string Name(const CrashPoint& p) { return p.function + "_" + std::to_string(p.call); }

INSTANTIATE_TEST_SUITE_P(EveryCall, MigCreateCrashTest,
                         ::testing::Combine(::testing::ValuesIn(kCreatePoints), ::testing::Bool()),
                         [](const auto& p) {
                           return Name(std::get<0>(p.param)) +
                                  (std::get<1>(p.param) ? "_PodLives" : "_PodFailed");
                         });
INSTANTIATE_TEST_SUITE_P(EveryCall, MigDestroyCrashTest, ::testing::ValuesIn(kDestroyPoints),
                         [](const auto& p) { return Name(p.param); });

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

TEST(MigManagerTest, ANewPodNeverGetsTheInstanceAnEndedPodLeft) {
  testing::SimulatedNvml sim("[" + testing::RtxPro6000() + "]");
  Agent agent(sim);
  auto a = agent.manager.Realize(PodA(), 0, Claims({PodA()}));
  ASSERT_TRUE(a.ok());
  // Pod a is gone but not yet reclaimed; pod c is given a's placement at 9.
  PodMigClaim c{"default/c", "uid-c", {Alloc(0, 0, "GPU-rtx-0", 9)}};
  auto got = agent.manager.Realize(c, 0, Claims({c}));
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_TRUE((*got)[0].created);
  EXPECT_NE((*got)[0].allocation.runtime->mig_uuid, (*a)[0].allocation.runtime->mig_uuid);
  EXPECT_EQ(agent.Instances().size(), 2U);  // a's other instance at 6 waits for the reconciler
  // An instance tessera did not make is never taken over.
  {
    auto gi = agent.driver->CreateGpuInstance("GPU-rtx-0", "1g.24gb", {0, 3});
    ASSERT_TRUE(gi.ok());
  }
  PodMigClaim d{"default/d", "uid-d", {Alloc(0, 0, "GPU-rtx-0", 0)}};
  auto refused = agent.manager.Realize(d, 0, Claims({c, d}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("tessera did not create"), std::string::npos);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// Every NVML function on the realize and reconcile paths fails once (its first call, and in a
// second case every call): Realize either succeeds or fails cleanly, and once the driver works
// again the node ends with exactly pod a's instances, none leaked, none twice.
class MigNvmlErrorTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(MigNvmlErrorTest, FailsCleanlyAndRecovers) {
  const auto& [function, every_call] = GetParam();
  testing::SimulatedNvml sim("[" + testing::RtxPro6000() + "]");
  std::vector<node::DriverMigInstance> b_instances;
  {
    Agent setup(sim);
    ASSERT_TRUE(setup.manager.Realize(PodB(), 0, Claims({PodB()})).ok());
    b_instances = setup.Instances();
  }
  testing::SimulatedNvml::SetFaults("fail:" + function + ":" + (every_call ? "*" : "1") +
                                    ":UNKNOWN");
  {
    Agent agent(sim);  // the driver's own discovery may already meet the fault
    auto r = agent.manager.Realize(PodA(), 0, Claims({PodA(), PodB()}));
    if (!r.ok()) {
      EXPECT_FALSE(r.error().message.empty());
    }
    (void)agent.manager.Reconcile(Claims({PodA(), PodB()}), {true, agent.clock + 100});
  }
  testing::SimulatedNvml::SetFaults("");
  Agent healed(sim);
  ASSERT_TRUE(healed.manager.Realize(PodA(), 0, Claims({PodA(), PodB()})).ok());
  healed.clock += 1000;
  auto report = healed.manager.Reconcile(Claims({PodA(), PodB()}), {true, healed.clock});
  EXPECT_TRUE(report.errors.empty());
  const Census census = Count(healed.Instances(), Claims({PodA(), PodB()}), b_instances);
  EXPECT_EQ(census.leaked, 0);
  EXPECT_EQ(census.duplicated, 0);
  EXPECT_TRUE(census.b_untouched);
  EXPECT_EQ(Starts(healed.Instances()), (std::set<uint32_t>{0, 3, 6, 9}));
}

INSTANTIATE_TEST_SUITE_P(
    EveryFunction, MigNvmlErrorTest,
    ::testing::Combine(
        ::testing::Values("nvmlDeviceGetHandleByUUID", "nvmlDeviceGetIndex",
                          "nvmlDeviceGetGpuInstances", "nvmlGpuInstanceGetInfo",
                          "nvmlGpuInstanceGetComputeInstanceProfileInfo",
                          "nvmlGpuInstanceGetComputeInstances", "nvmlComputeInstanceGetInfo_v2",
                          "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMigDeviceHandleByIndex",
                          "nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetUUID",
                          "nvmlDeviceCreateGpuInstanceWithPlacement",
                          "nvmlDeviceGetGpuInstanceById", "nvmlGpuInstanceCreateComputeInstance",
                          "nvmlComputeInstanceDestroy", "nvmlGpuInstanceDestroy"),
        ::testing::Bool()),
    [](const auto& p) {
      return std::get<0>(p.param) + (std::get<1>(p.param) ? "_EveryCall" : "_FirstCall");
    });

}  // namespace
}  // namespace tessera
