#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/mig/layout.h"

namespace tessera::mig {

struct LayoutHash {
  size_t operator()(const Layout& layout) const;
};

// Every occupancy a GPU of one model can reach from empty by legal placements (rules R1-R5,
// compute slices and media engines included, since Layout carries them), with the room each
// leaves per profile. A GPU has at most a few thousand such states, so the table is computed
// once per model at start-up and a scoring step becomes a lookup.
class LayoutTable {
 public:
  // Stops at `max_states` (Find then answers nullptr for the rest; callers fall back to
  // GpuMigModel::ComputeRoom).
  explicit LayoutTable(const GpuMigModel& model, size_t max_states = 1U << 20);

  // nullptr when `layout` is not a reachable state of this model.
  const ProfileRoom* Find(const Layout& layout) const;
  // The layout's position in states(), or -1 when it is not a reachable state.
  int32_t IndexOf(const Layout& layout) const;
  size_t size() const { return rooms_.size(); }
  // The reachable layouts, in breadth-first order from the empty GPU.
  const std::vector<Layout>& states() const { return states_; }
  bool complete() const { return complete_; }
  // The room per profile of the state at `index` (0 <= index < size()).
  const ProfileRoom& RoomAt(int32_t index) const { return rooms_[index]; }

  // One more instance on a state: its profile and the state it leads to.
  struct Step {
    uint32_t profile;
    uint32_t next;  // index of the state with the instance
  };
  // Every legal placement of one more instance on the state at `index`, one step each (steps
  // past max_states are left out: then complete() is false).
  std::span<const Step> Steps(int32_t index) const {
    return {steps_.data() + step_begin_[index], step_begin_[index + 1] - step_begin_[index]};
  }

 private:
  std::unordered_map<Layout, uint32_t, LayoutHash> index_;
  std::vector<Layout> states_;
  std::vector<ProfileRoom> rooms_;
  std::vector<uint32_t> step_begin_;  // per state, and one past the last: where its steps start
  std::vector<Step> steps_;
  bool complete_ = true;
};

}  // namespace tessera::mig
