#include "sim/mig_replay/starvation.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tessera::sim::mig_replay {

double NearestRankPercentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto n = static_cast<double>(values.size());
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * n));
  rank = std::clamp<size_t>(rank, 1, values.size());
  return values[rank - 1];
}

bool IsPendingProtocol(const std::string& protocol) { return protocol.starts_with("pending"); }

std::vector<TypeStarvation> PooledStarvation(std::span<const RunRecord* const> runs) {
  std::vector<TypeStarvation> out;
  std::vector<std::vector<double>> waits;
  bool pending = false;
  bool any = false;
  for (const RunRecord* r : runs) {
    if (r->metrics.by_type.empty()) continue;
    if (!any) {
      any = true;
      pending = IsPendingProtocol(r->protocol);
      for (const std::string& label : r->type_labels) {
        TypeStarvation s;
        s.label = label;
        out.push_back(std::move(s));
      }
      waits.resize(out.size());
    }
    for (size_t t = 0; t < out.size(); ++t) {
      if (t < r->metrics.by_type.size()) {
        const TypeOutcome& o = r->metrics.by_type[t];
        out[t].arrived += o.arrived;
        out[t].never_placed += o.arrived - (pending ? o.ever_placed : o.accepted);
      }
      if (t < r->metrics.waits_by_type.size()) {
        const std::vector<float>& w = r->metrics.waits_by_type[t];
        waits[t].insert(waits[t].end(), w.begin(), w.end());
      }
    }
  }
  for (size_t t = 0; t < out.size(); ++t) {
    TypeStarvation& s = out[t];
    if (s.arrived > 0) {
      s.never_placed_pct =
          100.0 * static_cast<double>(s.never_placed) / static_cast<double>(s.arrived);
    }
    s.has_wait = pending;
    if (pending) s.wait_p95 = NearestRankPercentile(std::move(waits[t]), 95);
  }
  return out;
}

std::vector<TypeStarvation> StarvationByType(const std::vector<RunRecord>& records,
                                             const std::string& fleet, const std::string& workload,
                                             const std::string& protocol,
                                             const std::string& policy) {
  std::vector<const RunRecord*> runs;
  for (const RunRecord& r : records) {
    if (r.fleet == fleet && r.workload == workload && r.protocol == protocol &&
        r.policy == policy) {
      runs.push_back(&r);
    }
  }
  return PooledStarvation(runs);
}

double WorstNeverPlacedPct(const std::vector<RunRecord>& records, const std::string& fleet,
                           const std::string& workload, const std::string& protocol,
                           const std::string& policy) {
  double worst = 0;
  for (const TypeStarvation& s : StarvationByType(records, fleet, workload, protocol, policy)) {
    if (s.arrived > 0) worst = std::max(worst, s.never_placed_pct);
  }
  return worst;
}

}  // namespace tessera::sim::mig_replay
