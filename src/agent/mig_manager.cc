#include "agent/mig_manager.h"

#include <algorithm>

#include "core/node/mig_realize.h"

namespace tessera::agent {

using node::DriverMigInstance;
using node::LedgerEntry;

namespace {

bool SameKey(const LedgerEntry& e, const std::string& gpu, const std::string& profile,
             const model::Placement& placement) {
  return e.gpu_uuid == gpu && e.profile == profile && e.placement == placement;
}

}  // namespace

MigManager::MigManager(node::GpuDriver& driver, LedgerFile ledger, Clock now_ms)
    : driver_(driver), ledger_file_(std::move(ledger)), now_ms_(std::move(now_ms)) {}

Status MigManager::Start() {
  std::lock_guard lock(mu_);
  auto loaded = ledger_file_.Load();
  if (!loaded.ok()) return loaded.error();
  ledger_ = std::move(loaded.value());
  started_ = true;
  return Status::Ok();
}

void MigManager::SetMigGpus(std::vector<std::string> gpu_uuids) {
  std::lock_guard lock(mu_);
  mig_gpus_ = std::move(gpu_uuids);
}

std::vector<LedgerEntry> MigManager::LedgerSnapshot() const {
  std::lock_guard lock(mu_);
  return ledger_;
}

std::vector<DriverMigInstance> MigManager::ForeignInstances() const {
  std::lock_guard lock(mu_);
  return foreign_;
}

Status MigManager::SaveLedger() { return ledger_file_.Save(ledger_); }

node::DriverResult<std::vector<DriverMigInstance>> MigManager::Instances(const std::string& gpu) {
  return driver_.ListInstances(gpu);
}

void MigManager::Rollback(const std::vector<DriverMigInstance>& created, std::string* why) {
  for (auto it = created.rbegin(); it != created.rend(); ++it) {
    auto destroyed = driver_.DestroyInstance(*it);
    if (!destroyed.ok()) {
      *why += "; rollback failed, the reconciler will retry: " + destroyed.error().message;
      continue;  // the ledger keeps it, so the reconciler destroys it later
    }
    std::erase_if(ledger_, [&](const auto& e) {
      return SameKey(e, it->gpu_uuid, it->profile, it->placement);
    });
  }
  if (auto s = SaveLedger(); !s) *why += "; " + s.message();
}

Result<std::vector<RealizedInstance>> MigManager::Realize(const node::PodMigClaim& claim,
                                                          int container_index,
                                                          const node::NodeClaims& node) {
  std::lock_guard lock(mu_);
  if (!started_) return Error{"MIG manager: the ledger is not loaded"};
  auto container = node::ContainerAllocations(claim, container_index);
  if (!container.ok()) return container.error();
  const std::vector<codec::MigAllocation>& allocs = container.value();

  // Decide (node::PlanRealize) on a listing of every GPU the container names; nothing is
  // touched until every allocation checks out.
  node::RealizeInput input;
  input.claim = &claim;
  input.allocations = allocs;
  input.ledger = &ledger_;
  input.node = &node;
  for (const auto& a : allocs) {
    if (input.instances_by_gpu.count(a.gpu_uuid) > 0) continue;
    auto list = Instances(a.gpu_uuid);
    if (!list.ok())
      return Error{node::DescribeAllocation(claim, allocs.front()) + ": " + list.error().message};
    input.instances_by_gpu[a.gpu_uuid] = std::move(list.value());
  }
  auto planned = node::PlanRealize(input);
  if (!planned.ok()) return planned.error();
  const node::RealizePlan& plan = planned.value();
  std::vector<RealizedInstance> out(allocs.size());
  std::vector<DriverMigInstance> instances = plan.reused;
  std::vector<size_t> to_finish = plan.finish;
  const std::vector<size_t>& to_create = plan.create;
  for (size_t i = 0; i < allocs.size(); ++i) out[i].allocation = allocs[i];

  // Instances ended pods left at these placements go first; their ledger entries stay until
  // they are gone, so a failure here leaves them to the reconciler.
  for (const auto& stale : plan.replace) {
    auto gone = driver_.DestroyInstance(stale);
    if (!gone.ok()) {
      return Error{node::DescribeAllocation(claim, allocs.front()) +
                   ": the instance an ended pod left at " + std::to_string(stale.placement.start) +
                   " cannot be destroyed: " + gone.error().message};
    }
    ++destroyed_;
    std::erase_if(ledger_, [&](const auto& e) {
      return SameKey(e, stale.gpu_uuid, stale.profile, stale.placement);
    });
  }

  // Write-ahead: the ledger names every instance this call may create before the driver is
  // asked, and owns the reused ones from now on.
  const int64_t now = now_ms_();
  for (size_t i = 0; i < allocs.size(); ++i) {
    const auto& a = allocs[i];
    std::erase_if(ledger_,
                  [&](const auto& e) { return SameKey(e, a.gpu_uuid, a.profile, a.placement); });
    const bool created = std::find(to_create.begin(), to_create.end(), i) == to_create.end() &&
                         std::find(to_finish.begin(), to_finish.end(), i) == to_finish.end();
    LedgerEntry e = node::EntryFor(claim, a, instances[i], created);
    e.written_ms = now;
    ledger_.push_back(e);
  }
  if (auto s = SaveLedger(); !s)
    return Error{node::DescribeAllocation(claim, allocs.front()) + ": " + s.message()};

  // On failure: destroy what this call created; instances it only reused (e.g. half-made ones
  // from before a crash) stay in the ledger. A create that failed may still have made its
  // instance (an error after the driver acted), so the intent of one the driver did not hand
  // back goes only when a listing shows nothing at its placement, or after destroying what is
  // there; when the GPU cannot be listed it stays, for the reconciler.
  std::vector<DriverMigInstance> created;
  auto fail = [&](std::string why) -> Result<std::vector<RealizedInstance>> {
    Rollback(created, &why);
    std::map<std::string, node::DriverResult<std::vector<DriverMigInstance>>> listed;
    for (size_t i : to_create) {
      if (out[i].created) continue;
      const auto& a = allocs[i];
      auto list = listed.find(a.gpu_uuid);
      if (list == listed.end()) list = listed.emplace(a.gpu_uuid, Instances(a.gpu_uuid)).first;
      if (!list->second.ok()) continue;
      const auto& now_there = list->second.value();
      auto made = std::find_if(now_there.begin(), now_there.end(),
                               [&](const auto& inst) { return node::Matches(inst, a); });
      if (made != now_there.end()) {
        auto gone = driver_.DestroyInstance(*made);
        if (!gone.ok()) {
          why += "; rollback failed, the reconciler will retry: " + gone.error().message;
          continue;
        }
      }
      std::erase_if(ledger_,
                    [&](const auto& e) { return SameKey(e, a.gpu_uuid, a.profile, a.placement); });
    }
    if (auto saved = SaveLedger(); !saved) why += "; " + saved.message();
    return Error{why};
  };
  for (size_t i : to_create) {
    auto gi = driver_.CreateGpuInstance(allocs[i].gpu_uuid, allocs[i].profile, allocs[i].placement);
    if (!gi.ok())
      return fail(node::DescribeAllocation(claim, allocs[i]) + ": " + gi.error().message);
    instances[i] = gi.value();
    created.push_back(gi.value());
    ++created_;
    out[i].created = true;
    to_finish.push_back(i);
  }
  for (size_t i : to_finish) {
    auto ci = driver_.CreateComputeInstance(instances[i]);
    if (!ci.ok())
      return fail(node::DescribeAllocation(claim, allocs[i]) + ": " + ci.error().message);
    instances[i] = ci.value();
  }

  for (size_t i = 0; i < allocs.size(); ++i) {
    const auto& inst = instances[i];
    out[i].allocation.runtime =
        codec::MigRuntimeIdentity{inst.mig_uuid, inst.gpu_instance_id, inst.compute_instance_id};
    for (auto& e : ledger_) {
      if (SameKey(e, inst.gpu_uuid, inst.profile, inst.placement)) {
        e.created = true;
        e.gpu_instance_id = inst.gpu_instance_id;
        e.mig_uuid = inst.mig_uuid;
        e.written_ms = now_ms_();
      }
    }
  }
  if (auto s = SaveLedger(); !s) {
    // The instances exist and the pod may use them; the next reconcile re-adopts them.
    return Error{node::DescribeAllocation(claim, allocs.front()) + ": instances created but " +
                 s.message()};
  }
  return out;
}

void MigManager::Recreate(const node::LostInstance& lost, ReconcileReport* report) {
  auto entry = std::find(ledger_.begin(), ledger_.end(), lost.entry);
  if (entry == ledger_.end()) return;  // not reached: the plan was made from this ledger
  const LedgerEntry before = *entry;
  const std::string what = "pod " + lost.pod + ": recreating its lost MIG instance " +
                           before.profile + " at " + std::to_string(before.placement.start) + ":" +
                           std::to_string(before.placement.size) + " on " + before.gpu_uuid;
  // Whatever goes wrong, the pod keeps a lost record of its placement (retried next pass), or
  // an intent when the driver may have made something there.
  auto keep_lost_record = [&](const std::string& why) {
    auto it = std::find_if(ledger_.begin(), ledger_.end(), [&](const auto& e) {
      return SameKey(e, before.gpu_uuid, before.profile, before.placement);
    });
    if (it != ledger_.end()) {
      *it = before;
      it->lost = true;
    }
    if (auto s = SaveLedger(); !s) report->errors.push_back(s.message());
    node::LostInstance failed = lost;
    failed.message = what + ": " + why;
    report->lost.push_back(std::move(failed));
  };

  // Intent before the driver is asked, as for any create: a crash between the two leaves a
  // record that proves what the driver made.
  entry->created = false;
  entry->lost = false;
  entry->gpu_instance_id = 0;
  entry->mig_uuid.clear();
  entry->written_ms = now_ms_();
  if (auto s = SaveLedger(); !s) {
    report->errors.push_back(s.message());
    keep_lost_record(s.message());
    return;
  }
  auto gi = driver_.CreateGpuInstance(before.gpu_uuid, before.profile, before.placement);
  node::DriverResult<DriverMigInstance> made = gi;
  if (gi.ok()) {
    ++created_;
    made = driver_.CreateComputeInstance(gi.value());
  }
  if (!made.ok()) {
    // A driver error may come after the driver acted: clear the placement, or, when that is not
    // provably done, leave the intent, which proves what is there, to the next pass.
    auto list = Instances(before.gpu_uuid);
    bool cleared = list.ok();
    if (list.ok()) {
      for (const auto& inst : list.value()) {
        if (!node::Matches(inst, lost.allocation)) continue;
        auto gone = driver_.DestroyInstance(inst);
        if (gone.ok()) ++destroyed_;
        cleared = cleared && gone.ok();
      }
    }
    if (cleared) {
      keep_lost_record(made.error().message);
    } else {
      node::LostInstance failed = lost;
      failed.message = what + ": " + made.error().message;
      report->errors.push_back(failed.message + "; the intent stays for the next pass");
      report->lost.push_back(std::move(failed));
    }
    return;
  }
  entry = std::find_if(ledger_.begin(), ledger_.end(), [&](const auto& e) {
    return SameKey(e, before.gpu_uuid, before.profile, before.placement);
  });
  entry->created = true;
  entry->gpu_instance_id = made.value().gpu_instance_id;
  entry->mig_uuid = made.value().mig_uuid;
  entry->written_ms = now_ms_();
  // The instance exists and the entry in memory proves it; a failed save is retried with the
  // next change, and until then the intent on disk proves it too.
  if (auto s = SaveLedger(); !s) report->errors.push_back(s.message());
  RecreatedInstance done{lost.pod, lost.pod_uid, lost.allocation,
                         lost.allocation.runtime ? lost.allocation.runtime->mig_uuid : "", ""};
  done.allocation.runtime = codec::MigRuntimeIdentity{
      made.value().mig_uuid, made.value().gpu_instance_id, made.value().compute_instance_id};
  done.message = "pod " + lost.pod + ": its MIG instance " + before.profile + " at " +
                 std::to_string(before.placement.start) + ":" +
                 std::to_string(before.placement.size) + " on " + before.gpu_uuid +
                 " was gone (reboot, GPU reset or driver reload) and is recreated there as " +
                 made.value().mig_uuid;
  if (!done.previous_mig_uuid.empty()) {
    // The kubelet keeps the Allocate answer it cached and restarts containers with it.
    done.message += " (was " + done.previous_mig_uuid + "); containers the kubelet started with " +
                    done.previous_mig_uuid +
                    " keep that UUID and cannot use the new instance until the pod is recreated";
  }
  report->recreated.push_back(std::move(done));
}

ReconcileReport MigManager::Reconcile(const node::NodeClaims& claims,
                                      const node::PodViewFreshness& view,
                                      const ReconcileOptions& options) {
  std::unique_lock lock(mu_);
  ReconcileReport report;
  if (!started_) {
    report.errors.push_back("MIG manager: the ledger is not loaded");
    return report;
  }
  node::ReconcileInput input;
  input.claims = &claims;
  input.pods = view;
  input.grace_ms = options.grace_ms;
  input.recreate_max_view_age_ms = options.recreate_max_view_age_ms;
  input.reclaim_foreign = options.reclaim_foreign;
  std::vector<std::string> list_errors;
  // The plan for the ledger and the GPUs as they are now (under the lock).
  auto plan_now = [&] {
    input.ledger = ledger_;
    input.now_ms = now_ms_();
    input.actual.clear();
    input.listed_gpus.clear();
    list_errors.clear();
    // The GPUs the ledger names are listed too: one that discovery lost or left out still
    // holds what tessera made on it. A GPU that cannot be listed is left out of the plan, so
    // its entries stay until a complete listing shows their instances gone.
    std::vector<std::string> gpus = mig_gpus_;
    for (const auto& e : ledger_) {
      if (std::find(gpus.begin(), gpus.end(), e.gpu_uuid) == gpus.end()) gpus.push_back(e.gpu_uuid);
    }
    for (const auto& gpu : gpus) {
      auto list = Instances(gpu);
      if (!list.ok()) {
        list_errors.push_back(list.error().message);
        continue;
      }
      input.listed_gpus.insert(gpu);
      input.actual.insert(input.actual.end(), list.value().begin(), list.value().end());
    }
    return node::PlanReconcile(input);
  };
  node::ReconcilePlan plan = plan_now();
  if (!plan.awaiting_proof.empty() && options.prove_gone) {
    // Entries wait only on the view's freshness: their pods are read from the API server, each
    // once, without the lock (an Allocate must not wait on the network). A uid proven gone
    // stays gone, so the proofs hold for the new plan, made on what the GPUs and the ledger
    // hold by then (an Allocate may have changed both).
    const std::vector<node::PodRef> asked = plan.awaiting_proof;
    lock.unlock();
    GoneProofs proofs = options.prove_gone(asked);
    lock.lock();
    report.errors.insert(report.errors.end(), proofs.errors.begin(), proofs.errors.end());
    for (const auto& pod : asked) {
      if (proofs.gone_uids.count(pod.uid) > 0) report.proven_gone.push_back(pod.pod);
    }
    input.pods_proven_gone = std::move(proofs.gone_uids);
    plan = plan_now();
  }
  report.errors.insert(report.errors.end(), list_errors.begin(), list_errors.end());
  report.conflicts = plan.conflicts;
  report.foreign_at_claims = plan.foreign_at_claims;
  report.awaiting_fresher_view = plan.awaiting_fresher_view;
  report.left_alone = static_cast<int>(plan.left_alone.size());
  report.protected_count = static_cast<int>(plan.protected_.size());
  bool changed = false;

  for (const auto& keep : plan.keep) {
    ++report.kept;
    auto it = std::find_if(ledger_.begin(), ledger_.end(), [&](const auto& e) {
      return SameKey(e, keep.instance.gpu_uuid, keep.instance.profile, keep.instance.placement);
    });
    LedgerEntry entry = keep.entry;
    entry.written_ms = now_ms_();
    if (it == ledger_.end()) {  // not reached: the plan keeps only instances the ledger proves
      ledger_.push_back(entry);
      changed = true;
    } else if (it->pod_uid != entry.pod_uid || it->mig_uuid != entry.mig_uuid ||
               it->gpu_instance_id != entry.gpu_instance_id || !it->created) {
      if (!it->created) ++report.adopted;  // made before a crash, after its intent
      *it = entry;
      changed = true;
    }
  }
  std::map<std::string, DriverMigInstance> finished;  // "gpu/profile/start" -> with its CI
  for (const auto& inst : plan.finish) {
    auto ci = driver_.CreateComputeInstance(inst);
    if (!ci.ok()) {
      report.errors.push_back(ci.error().message);
      continue;
    }
    ++report.finished;
    finished[inst.gpu_uuid + "/" + inst.profile + "/" + std::to_string(inst.placement.start)] =
        ci.value();
    for (auto& e : ledger_) {
      if (SameKey(e, inst.gpu_uuid, inst.profile, inst.placement)) {
        e.mig_uuid = ci.value().mig_uuid;
        changed = true;
      }
    }
  }
  std::vector<DriverMigInstance> destroyed;
  for (const auto& inst : plan.destroy) {
    auto done = driver_.DestroyInstance(inst);
    if (!done.ok()) {  // e.g. IN_USE: try again next pass, never block Allocate (W3)
      report.errors.push_back(done.error().message);
      continue;
    }
    destroyed.push_back(inst);
    ++report.destroyed;
    ++destroyed_;
    std::erase_if(ledger_, [&](const auto& e) {
      return SameKey(e, inst.gpu_uuid, inst.profile, inst.placement);
    });
    changed = true;
  }
  for (const auto& gone : plan.forget) {
    ++report.forgotten;
    std::erase(ledger_, gone);
    changed = true;
  }
  // Gone, but the pod may live: the entry stays as the record of the placement it held, and
  // from now on proves nothing (the driver reuses GPU instance ids after a reboot).
  for (const auto& gone : plan.mark_lost) {
    for (auto& e : ledger_) {
      if (e == gone) {
        e.lost = true;
        changed = true;
      }
    }
  }
  if (changed) {
    if (auto s = SaveLedger(); !s) report.errors.push_back(s.message());
  }
  report.lost = plan.lost;
  for (const auto& lost : plan.recreate) Recreate(lost, &report);
  for (const auto& inst : plan.foreign) {
    if (std::find(destroyed.begin(), destroyed.end(), inst) == destroyed.end()) {
      report.foreign.push_back(inst);
    }
  }
  foreign_ = report.foreign;
  report.listed_gpus = input.listed_gpus;

  // The identities pods should carry: what the driver reports now, per kept or recreated
  // instance.
  for (const auto& r : report.recreated) report.identities[r.pod].push_back(r.allocation);
  for (const auto& keep : plan.keep) {
    DriverMigInstance inst = keep.instance;
    auto f = finished.find(keep.instance.gpu_uuid + "/" + keep.instance.profile + "/" +
                           std::to_string(keep.instance.placement.start));
    if (f != finished.end()) inst = f->second;
    if (!inst.has_compute_instance) continue;
    const codec::MigRuntimeIdentity id{inst.mig_uuid, inst.gpu_instance_id,
                                       inst.compute_instance_id};
    for (const auto& claim : claims.claims) {
      if (claim.uid != keep.entry.pod_uid) continue;
      for (const auto& a : claim.allocations) {
        if (!node::Matches(inst, a) || (a.runtime && *a.runtime == id)) continue;
        codec::MigAllocation updated = a;
        updated.runtime = id;
        report.identities[claim.pod].push_back(updated);
      }
    }
  }
  return report;
}

}  // namespace tessera::agent
