#include "core/sched/filter_pass.h"

#include <algorithm>
#include <iterator>
#include <optional>

namespace tessera::sched {
namespace {

void Prefetch(const state::NodeState& ns) {
#if defined(__GNUC__)
  __builtin_prefetch(&ns.unusable_reason);
  __builtin_prefetch(&ns.pair_scores);
  __builtin_prefetch(&ns.state_class);
#else
  (void)ns;
#endif
}

// What evaluating a node reads besides the lines Prefetch fetches: its summaries (their
// address is in the NodeState, fetched by Prefetch some nodes earlier). Only for passes that
// evaluate most nodes: on a pass served by the equivalence cache it would only add traffic
// (a cache on a cluster of nodes that all differ serves none).
void PrefetchForEvaluation(const state::NodeState& ns) {
#if defined(__GNUC__)
  __builtin_prefetch(&ns.summaries_current);
  if (!ns.gpu_summaries.empty()) __builtin_prefetch(ns.gpu_summaries.data());
#else
  (void)ns;
#endif
}

// One thread's share of the nodes: its own evaluations, indices local to it.
struct Share {
  FilterOutcome part;
  std::vector<uint32_t> node_eval;  // per node of the share
};

void EvaluateShare(const CycleState& cycle, std::span<const state::NodeState* const> nodes,
                   size_t state_class_bound, bool skip_outranked, Share* share) {
  FilterPass pass(cycle, state_class_bound, nodes.size(), &share->part, skip_outranked);
  share->node_eval.resize(nodes.size());
  const bool every_node = state_class_bound == 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i + 8 < nodes.size()) Prefetch(*nodes[i + 8]);
    if ((every_node || pass.MostlyAnew(i)) && i + 4 < nodes.size()) {
      PrefetchForEvaluation(*nodes[i + 4]);
    }
    const uint32_t evaluated = pass.Evaluate(*nodes[i]);
    share->node_eval[i] = evaluated;
    // The share's own best so far, for the bound (the choice itself is made after, in order).
    if (pass.skips_outranked() && evaluated != FilterPass::kOutranked) {
      ConsiderNode(cycle, *nodes[i], evaluated, false, &share->part);
    }
  }
}

}  // namespace

FilterPass::FilterPass(const CycleState& cycle, size_t state_class_bound, size_t expected_nodes,
                       FilterOutcome* out, bool skip_outranked)
    : cycle_(cycle),
      evaluator_(cycle),
      by_class_(state_class_bound, FilterOutcome::kNone),
      out_(out),
      skip_outranked_(skip_outranked && cycle.bounds_ranks()) {
  // A one-thread pass over nodes that fit drops their entries as it goes (ForgetUnneededFit):
  // a modest start, grown only where entries stay (refusals, shared classes). A large buffer
  // freed at the end of every decision would also make malloc consolidate its free lists.
  constexpr size_t kInitialEntries = 1024;
  out_->evaluated.reserve(
      std::min(kInitialEntries, state_class_bound > 0 ? std::min(expected_nodes, state_class_bound)
                                                      : expected_nodes));
  out_->fits.reserve(32);  // few: MayFit rules most nodes out
}

void FilterPass::ForgetUnneededFit(uint32_t evaluated) {
  if (evaluated == kUnusable || evaluated != last_unshared_ || evaluated == out_->best_eval) {
    return;
  }
  FilterOutcome::Evaluated& e = out_->evaluated[evaluated];
  // Only a fit is dropped: a refusal's reasons may be asked for once nothing fits.
  if (!e.fits || e.fit + 1 != out_->fits.size()) return;
  out_->fits.pop_back();
  e.fit = FilterOutcome::kNone;
  // Nothing refers to the entry either (not the best, not shared, not a refusal).
  if (evaluated + 1 == out_->evaluated.size()) out_->evaluated.pop_back();
}

uint32_t FilterPass::EvaluateAnew(const state::NodeState& node, bool use_cache) {
  ++anew_;
  if (skip_outranked_ && out_->best != nullptr &&
      Outranked(cycle_, node, out_->evaluated[out_->best_eval].rank, *out_->best)) {
    ++out_->outranked;
    return kOutranked;
  }
  const auto result = static_cast<uint32_t>(out_->evaluated.size());
  last_unshared_ = use_cache ? kUnusable : result;
  FilterOutcome::Evaluated& e = out_->evaluated.emplace_back();
  e.representative = &node;
  // Most nodes cannot take the pod: a cheap check rules them out before the full fit (for MIG
  // nodes, their GPUs' layouts; MigRankBound). Their reasons are worked out only if nothing fits.
  if (evaluator_.MayFit(node) &&
      !(skip_outranked_ && node.any_mig && cycle_.mig_rank_bound().RulesOut(node))) {
    e.fit = static_cast<uint32_t>(out_->fits.size());
    // Most nodes that fit are not chosen: a MIG plan's assignments are made for the chosen one
    // (FilterOutcome::CompleteBestFit).
    e.fits = out_->fits.emplace_back(evaluator_.FitAndRank(node, &e.rank, false)).fits;
  }
  if (use_cache) by_class_[node.state_class] = result;
  return result;
}

void FilterOutcome::CompleteBestFit(const CycleState& cycle) {
  NodeFit& fit = fits[evaluated[best_eval].fit];
  if (!fit.slots_omitted) return;
  NodeRank unused;
  fit = NodeEvaluator(cycle).FitAndRank(*best, &unused);
}

void RecordRefusal(const state::NodeState& node, uint32_t evaluated, FilterOutcome* out) {
  out->refused.emplace_back(&node,
                            evaluated == FilterPass::kUnusable ? FilterOutcome::kNone : evaluated);
}

FilterOutcome FilterNodes(const CycleState& cycle, std::span<const state::NodeState* const> nodes,
                          size_t state_class_bound, bool collect_refusals, TaskRunner* runner,
                          size_t threads, bool skip_outranked) {
  FilterOutcome out;
  threads = std::max<size_t>(1, std::min(threads, nodes.size()));
  if (runner == nullptr || threads == 1) {
    // One pass: evaluate and choose node by node.
    FilterPass pass(cycle, state_class_bound, nodes.size(), &out, skip_outranked);
    const bool every_node = state_class_bound == 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (i + 8 < nodes.size()) Prefetch(*nodes[i + 8]);
      if ((every_node || pass.MostlyAnew(i)) && i + 4 < nodes.size()) {
        PrefetchForEvaluation(*nodes[i + 4]);
      }
      const uint32_t evaluated = pass.Evaluate(*nodes[i]);
      if (evaluated == FilterPass::kOutranked) continue;
      ConsiderNode(cycle, *nodes[i], evaluated, collect_refusals, &out);
      pass.ForgetUnneededFit(evaluated);
    }
    return out;
  }
  // Contiguous shares, each with its own cycle state (the first uses the one it was given).
  std::vector<Share> shares(threads);
  std::vector<std::optional<CycleState>> cycles(threads);
  for (size_t t = 1; t < threads; ++t) cycles[t].emplace(cycle, CycleState::ForAnotherThread{});
  runner->Run(threads, [&](size_t t) {
    const size_t lo = nodes.size() * t / threads;
    const size_t hi = nodes.size() * (t + 1) / threads;
    EvaluateShare(t == 0 ? cycle : *cycles[t], nodes.subspan(lo, hi - lo), state_class_bound,
                  skip_outranked, &shares[t]);
  });
  // One outcome, indices rebased; then the choice in the nodes' order.
  std::vector<uint32_t> node_eval;
  node_eval.reserve(nodes.size());
  for (Share& share : shares) {
    const auto eval_base = static_cast<uint32_t>(out.evaluated.size());
    const auto fit_base = static_cast<uint32_t>(out.fits.size());
    for (FilterOutcome::Evaluated& e : share.part.evaluated) {
      if (e.fit != FilterOutcome::kNone) e.fit += fit_base;
      out.evaluated.push_back(e);
    }
    std::move(share.part.fits.begin(), share.part.fits.end(), std::back_inserter(out.fits));
    for (uint32_t index : share.node_eval) {
      const bool marker = index == FilterPass::kUnusable || index == FilterPass::kOutranked;
      node_eval.push_back(marker ? index : index + eval_base);
    }
    out.outranked += share.part.outranked;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    // An outranked node ranks after its share's best, which the choice sees.
    if (node_eval[i] == FilterPass::kOutranked) continue;
    ConsiderNode(cycle, *nodes[i], node_eval[i], collect_refusals, &out);
  }
  return out;
}

void PostFilter(const CycleState& cycle, FilterOutcome* filtered, bool check_preemption,
                const std::function<void(const Refusal&)>& each) {
  NodeEvaluator evaluator(cycle);
  PreemptionCheck preemption(cycle);
  for (const auto& [ns, index] : filtered->refused) {
    if (index == FilterOutcome::kNone) {
      const NodeStatus unusable = NodeStatus::Unusable(ns->unusable_reason);
      each(Refusal{ns, &unusable, false});
      continue;
    }
    FilterOutcome::Evaluated& e = filtered->evaluated[index];
    if (e.fit == FilterOutcome::kNone) {  // ruled out by MayFit: the full fit says why
      e.fit = static_cast<uint32_t>(filtered->fits.size());
      filtered->fits.push_back(evaluator.FitForRefusal(*e.representative));
    }
    NodeFit& fit = filtered->fits[e.fit];
    if (fit.status.code == NodeStatus::Code::kNotWorkedOut) {  // once per equivalence class
      fit.status = evaluator.RefusalReason(*e.representative, fit);
    }
    each(Refusal{ns, &fit.status, check_preemption && preemption.Resolvable(*ns)});
  }
}

}  // namespace tessera::sched
