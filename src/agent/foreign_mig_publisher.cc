#include "agent/foreign_mig_publisher.h"

#include <algorithm>
#include <utility>

#include "core/model/annotations.h"

namespace tessera::agent {

namespace {

const std::string kForeignKey(model::annotations::kForeignMigInstances);
// An Event names this many instances of each list at most; the annotation has them all.
constexpr size_t kNamedInEvent = 8;

codec::ForeignMigInstance FromDriver(const node::DriverMigInstance& inst) {
  return codec::ForeignMigInstance{inst.gpu_uuid, inst.profile, inst.placement,
                                   inst.gpu_instance_id};
}

// Those of `a` that are not in `b` (both in the annotation's order).
std::vector<codec::ForeignMigInstance> Missing(const std::vector<codec::ForeignMigInstance>& a,
                                               const std::vector<codec::ForeignMigInstance>& b) {
  std::vector<codec::ForeignMigInstance> out;
  for (const auto& f : a) {
    if (std::find(b.begin(), b.end(), f) == b.end()) out.push_back(f);
  }
  return out;
}

std::string Describe(const std::vector<codec::ForeignMigInstance>& list) {
  std::string out;
  for (size_t i = 0; i < list.size() && i < kNamedInEvent; ++i) {
    out += (i > 0 ? ", " : "") + DescribeForeignInstance(list[i]);
  }
  if (list.size() > kNamedInEvent) {
    out += " and " + std::to_string(list.size() - kNamedInEvent) + " more";
  }
  return out;
}

}  // namespace

std::string DescribeForeignInstance(const codec::ForeignMigInstance& instance) {
  std::string out = instance.gpu_uuid + " " + instance.profile + " at slice " +
                    std::to_string(instance.placement.start);
  if (instance.gpu_instance_id != 0) {
    out += " (GPU instance " + std::to_string(instance.gpu_instance_id) + ")";
  }
  return out;
}

ForeignMigPublisher::ForeignMigPublisher(NodeApi& api, int64_t verify_interval_ms)
    : api_(api), verify_interval_ms_(std::max<int64_t>(verify_interval_ms, 1)) {}

std::optional<std::vector<codec::ForeignMigInstance>> ForeignMigPublisher::ReadPublished(
    const model::Node& node) {
  const std::string* text = node.Annotation(kForeignKey);
  if (text == nullptr) return std::vector<codec::ForeignMigInstance>{};
  auto decoded = codec::DecodeForeignMigInstances(*text, node.name);
  // An unreadable value is replaced by what the agent finds; it stands for nothing.
  if (!decoded.ok()) return std::vector<codec::ForeignMigInstance>{};
  return codec::CanonicalForeignMigInstances(std::move(decoded.value()));
}

ForeignMigSync ForeignMigPublisher::Sync(const ReconcileReport& report,
                                         const std::set<std::string>& mig_gpus, int64_t now_ms) {
  ForeignMigSync out;
  std::optional<model::Node> read;  // the node, when this call has read it
  auto fail = [&](const std::string& message) {
    out.error = message;
    out.retry_in_ms = backoff_.Failed(now_ms);
    out.failures = backoff_.failures();
  };
  if (!seeded_) {
    // What the node lists stands for what was known before this process: a GPU whose first
    // listing fails keeps its instances, and an unchanged set is not reported again.
    seeded_ = true;
    auto got = api_.GetNode();
    if (got.ok()) {
      read = std::move(got.value());
      known_ = ReadPublished(*read).value_or(std::vector<codec::ForeignMigInstance>{});
      unpublished_ = true;  // compared below with the node just read: a bad value is replaced
    } else {
      fail("reading node: " + got.error().message);
    }
  }
  std::vector<codec::ForeignMigInstance> next;
  for (const auto& f : known_) {
    // Not listed this pass: nothing is known to have changed there.
    if (mig_gpus.count(f.gpu_uuid) > 0 && report.listed_gpus.count(f.gpu_uuid) == 0) {
      next.push_back(f);
    }
  }
  for (const auto& inst : report.foreign) {
    if (report.listed_gpus.count(inst.gpu_uuid) > 0) next.push_back(FromDriver(inst));
  }
  next = codec::CanonicalForeignMigInstances(std::move(next), &out.dropped);
  if (next != known_) {
    std::vector<codec::ForeignMigInstance> before = std::move(known_);
    known_ = std::move(next);
    unpublished_ = true;
    RecordChange(before, &out);
  }
  // A node without GPUs in MIG mode and nothing to publish is read once, at start (a value left
  // from before is deleted then), not every interval.
  const bool verify = now_ms >= next_verify_ms_ && (!mig_gpus.empty() || !known_.empty());
  if ((unpublished_ || verify) && !out.error && backoff_.Due(now_ms)) {
    if (!read) {
      auto got = api_.GetNode();
      if (!got.ok()) {
        fail("reading node: " + got.error().message);
        return out;
      }
      read = std::move(got.value());
    }
    const std::string text = codec::EncodeForeignMigInstances(known_);
    const std::string* current = read->Annotation(kForeignKey);
    const bool same = text.empty() ? current == nullptr : current != nullptr && *current == text;
    if (!same) {
      AnnotationPatch patch;
      patch[kForeignKey] = text.empty() ? std::nullopt : std::optional<std::string>(text);
      auto patched = api_.PatchNode(patch, "");
      if (!patched.ok()) {
        fail("publishing " + kForeignKey + ": " + patched.error().message);
        return out;
      }
      out.patched = true;
    }
    unpublished_ = false;
    backoff_.Succeeded();
    next_verify_ms_ = now_ms + verify_interval_ms_;
  }
  return out;
}

void ForeignMigPublisher::RecordChange(const std::vector<codec::ForeignMigInstance>& before,
                                       ForeignMigSync* out) {
  out->changed = true;
  const auto appeared = Missing(known_, before);
  const auto gone = Missing(before, known_);
  std::string& m = out->change;
  if (known_.empty()) {
    m = "no MIG instance that tessera did not create is left on this node's GPUs";
  } else {
    m = std::to_string(known_.size()) +
        " MIG instance(s) on this node's GPUs were not created by tessera: " + Describe(known_) +
        "; tessera's scheduler places no pod on their slices (node annotation " + kForeignKey + ")";
  }
  if (!appeared.empty()) m += "; new: " + Describe(appeared);
  if (!gone.empty()) m += "; gone: " + Describe(gone);
  if (out->dropped > 0) {
    m += "; " + std::to_string(out->dropped) + " more are not published (at most " +
         std::to_string(codec::kMaxForeignMigInstances) + ")";
  }
  api_.NodeEvent("ForeignMigInstances", m, /*warning=*/!known_.empty());
}

}  // namespace tessera::agent
