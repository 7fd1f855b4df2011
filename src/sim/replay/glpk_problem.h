#pragma once

// GLPK for the replays' LP bounds (sim/replay/upper_bound.cc, sim/mig_replay/upper_bound.cc).

#include <glpk.h>

#include <memory>

namespace tessera::sim::replay {

using GlpkProblem = std::unique_ptr<glp_prob, decltype(&glp_delete_prob)>;

// GLPK keeps an environment per thread and frees it only when asked: each solve frees it when
// done (declare this before the problem, so that the problem goes first), or a worker thread's
// would leak at its exit.
struct GlpkEnvironment {
  GlpkEnvironment() = default;
  GlpkEnvironment(const GlpkEnvironment&) = delete;
  GlpkEnvironment& operator=(const GlpkEnvironment&) = delete;
  GlpkEnvironment(GlpkEnvironment&&) = delete;
  GlpkEnvironment& operator=(GlpkEnvironment&&) = delete;
  ~GlpkEnvironment() { glp_free_env(); }
};

}  // namespace tessera::sim::replay
