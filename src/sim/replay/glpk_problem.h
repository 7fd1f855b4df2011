#pragma once

// GLPK for the replays' LP bounds (sim/replay/upper_bound.cc, sim/mig_replay/upper_bound.cc).

#include <glpk.h>

#include <memory>
#include <vector>

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

// Loads the (row, column, value) triplets (1-based, slot 0 unused, as GLPK expects) and solves
// with the simplex method, quietly; `scale` first scales the problem. True when optimal.
inline bool SolveQuietly(glp_prob* lp, const std::vector<int>& rows, const std::vector<int>& cols,
                         const std::vector<double>& values, bool scale) {
  glp_load_matrix(lp, static_cast<int>(rows.size()) - 1, rows.data(), cols.data(), values.data());
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;
  // Scaling reports on GLPK's terminal, which is only switched per environment (per thread).
  const int terminal = glp_term_out(GLP_OFF);
  if (scale) glp_scale_prob(lp, GLP_SF_AUTO);
  const int rc = glp_simplex(lp, &parm);
  glp_term_out(terminal);
  return rc == 0 && glp_get_status(lp) == GLP_OPT;
}

}  // namespace tessera::sim::replay
