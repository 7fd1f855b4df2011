#pragma once

#include <cstddef>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "core/state/cluster_state.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace tessera::sim {

// JSON Lines (docs/simulator.md): one object per step result, then one final object.
std::string StepJson(const StepResult& result);
std::string FinalJson(const state::ClusterState& state);

// For people, across one run: the decision, the reasons, and a map of every GPU. A pod keeps its
// letter in every slice map of the run (letters are given in order of first appearance and
// reused only once 62 pods have had one, from pods that hold no MIG instance any more), and a
// GPU's id is shortened to 12 characters only where no other GPU of the scenario shares that
// prefix; otherwise it is printed as far as it differs.
class TextReport {
 public:
  // `scenario`: every node it ever has (its nodes and those of its node steps) names the GPUs
  // whose ids must stay apart.
  explicit TextReport(const Scenario& scenario);

  std::string Step(const StepResult& result) const;
  // Gives letters to pods drawn for the first time.
  std::string Cluster(const state::ClusterState& state);

  // The id as printed: shortened where that keeps it apart from every other GPU of the scenario;
  // an id no node of the scenario has is printed in full.
  std::string GpuId(const std::string& uuid) const;

 private:
  // The letter of `pod`; `holding` are the pods holding MIG instances in the state being drawn.
  char LetterFor(const std::string& pod, const std::set<std::string>& holding);

  std::map<std::string, std::string> gpu_ids_;  // uuid -> as printed
  std::map<std::string, char> letters_;         // pod key -> its letter
  size_t letters_given_ = 0;                    // letters handed out, reused ones included
};

// What `tessera simulate` prints: the text report (the initial state and the map after every
// step, or with `final_only` the decisions and the final state only), or JSON Lines (the same
// either way: one object per step result and the final state).
struct SimulationOutput {
  bool json = false;
  bool final_only = false;
};
void WriteSimulation(Scenario scenario, const SimulationOutput& output, std::ostream& out);

}  // namespace tessera::sim
