#include "scheduler/read_views.h"

#include <iterator>
#include <optional>
#include <utility>

#include <prometheus/text_serializer.h>

#include "core/model/pod.h"
#include "core/sched/defrag_format.h"
#include "scheduler/service_metrics.h"

namespace tessera::scheduler {

ReadViews::ReadViews(const ClusterView& view)
    : view_(view),
      instance_(static_cast<int64_t>(view.clocks().steady().time_since_epoch().count())) {}

ExplainResult ReadViews::Explain(std::string_view pod_key, bool json,
                                 const std::string& node) const {
  ExplainResult result;
  if (auto valid = model::ValidatePodKey(pod_key); !valid.ok()) {
    result.outcome = ExplainResult::Outcome::kBadRequest;
    result.body = "pod: " + valid.message() + "\n";
    return result;
  }
  const std::string key(pod_key);
  ClusterView::ExplainSubject subject = view_.PrepareExplanation(key, node);
  if (!subject.draft) {
    if (subject.placed_on.empty()) {
      result.outcome = ExplainResult::Outcome::kNotFound;
      result.body = "pod " + key + ": not a pending pod this scheduler knows\n";
    } else {
      result.body = "pod " + key + ": placed on node " + subject.placed_on + "\n";
    }
    return result;
  }
  // The remedy search runs on the draft's own copies, outside the lock.
  const sched::Explanation e = sched::FinishExplanation(std::move(*subject.draft));
  if (json) {
    result.json = true;
    result.body = sched::ExplanationToJson(e).dump() + "\n";
  } else {
    result.body = sched::FormatExplanation(e);
  }
  return result;
}

DefragResult ReadViews::Defrag(const sched::DefragLimits& limits, bool json) const {
  const ClusterView::DefragInputs in = view_.CopyForDefrag();
  // A mix nothing was observed into yet (a one-shot view, a replica before its first filter)
  // would measure nothing: the planner then observes the running and pending pods instead.
  const sched::ObservedDemand observed{in.demand.empty() ? nullptr : &in.demand,
                                       in.mig_demand.total() > 0 ? &in.mig_demand : nullptr};
  DefragResult result;
  result.plan = sched::PlanDefrag(in.state, in.pending, in.movable, in.policy, in.budgets, in.jobs,
                                  limits, observed);
  result.json = json;
  result.body = json ? sched::DefragPlanToJson(result.plan).dump() + "\n"
                     : sched::FormatDefragPlan(result.plan);
  return result;
}

UiStateBody ReadViews::UiState() const {
  const UiStateEncoder::Snapshot snap = view_.CollectUiState();
  // The agents' GPU usage, from its own table (not under the view's lock): "usage" beside the
  // nodes, keyed by node name.
  const GpuUsageTable::Json usage = view_.gpu_usage().ToJson();
  std::lock_guard lock(ui_mu_);
  if (!ui_body_ || ui_version_ != snap.version || ui_usage_version_ != usage.version) {
    std::string body = snap.Join();
    body.pop_back();  // the closing brace
    body.append(",\"usage\":");
    body.append(*usage.text);
    body.push_back('}');
    ui_body_ = std::make_shared<const std::string>(std::move(body));
    ui_version_ = snap.version;
    ui_usage_version_ = usage.version;
  }
  return UiStateBody{ui_body_, snap.version, instance_, usage.version};
}

std::vector<prometheus::MetricFamily> ReadViews::StateFamilies() const {
  std::vector<prometheus::MetricFamily> families;
  view_.ReadForMetrics([&](const ClusterView::MetricsReading& r) {
    families = GpuUsageFamilies(r.state);
    const sched::MigWeights weights(r.mig_demand_mix, view_.options().policy.mig_prior,
                                    r.mig_fleet_signals);
    auto placement = PlacementFamilies(r.state, weights);
    families.insert(families.end(), std::make_move_iterator(placement.begin()),
                    std::make_move_iterator(placement.end()));
    prometheus::ClientMetric age;
    age.gauge.value = r.oldest_reservation_wait.count();
    families.push_back(prometheus::MetricFamily{
        "tessera_oldest_pending_reservation_age_seconds",
        "Age of the oldest reservation made by filter and not yet bound (0 when none)",
        prometheus::MetricType::Gauge,
        {age}});
    families.push_back(ClientKeyedFamily(r.client_keyed_entries));
  });
  return families;
}

std::string ReadViews::StateMetricsText(bool legacy) const {
  const prometheus::TextSerializer serializer;
  std::string text;
  std::string legacy_text;
  std::vector<prometheus::MetricFamily> one(1);
  auto serialize = [&](prometheus::MetricFamily&& family) {
    if (legacy) {
      if (auto twin = LegacyTwin(family)) {
        one[0] = std::move(*twin);
        legacy_text += serializer.Serialize(one);
      }
    }
    one[0] = std::move(family);
    text += serializer.Serialize(one);
    one[0] = {};
  };
  // The demand mix first (a small copy), so that the placeability weights are built outside.
  std::optional<sched::MigDemandMix> mix;
  sched::MigFleetSignals fleet_signals;
  std::optional<prometheus::MetricFamily> age_family;
  std::optional<prometheus::MetricFamily> keyed_family;
  view_.ReadForMetrics([&](const ClusterView::MetricsReading& r) {
    mix = r.mig_demand_mix;
    fleet_signals = r.mig_fleet_signals;
    prometheus::ClientMetric age;
    age.gauge.value = r.oldest_reservation_wait.count();
    age_family = prometheus::MetricFamily{
        "tessera_oldest_pending_reservation_age_seconds",
        "Age of the oldest reservation made by filter and not yet bound (0 when none)",
        prometheus::MetricType::Gauge,
        {age}};
    keyed_family = ClientKeyedFamily(r.client_keyed_entries);
  });
  const sched::MigWeights weights(*mix, view_.options().policy.mig_prior, fleet_signals);
  std::vector<StateFamilyBuilder> builders = GpuUsageFamilyBuilders();
  for (auto& builder : PlacementFamilyBuilders(weights)) builders.push_back(std::move(builder));
  // Each family is built under the lock and serialized outside it: the lock is held for one
  // family's objects at a time, and so is the memory.
  for (const StateFamilyBuilder& build : builders) {
    std::vector<prometheus::MetricFamily> built;
    view_.WithState([&](const state::ClusterState& state) { built = build(state); });
    for (auto& family : built) serialize(std::move(family));
  }
  serialize(std::move(*age_family));
  serialize(std::move(*keyed_family));
  text += legacy_text;
  return text;
}

}  // namespace tessera::scheduler
