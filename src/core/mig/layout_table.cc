#include "core/mig/layout_table.h"

#include <algorithm>
#include <cstring>

namespace tessera::mig {

size_t LayoutHash::operator()(const Layout& layout) const {
  // The counts read as four 64-bit words; a multiply-xorshift mix per word.
  static_assert(sizeof(layout.counts) == 32);
  uint64_t words[4];
  std::memcpy(words, layout.counts.data(), sizeof(words));
  uint64_t h = layout.occupied | static_cast<uint64_t>(layout.compute_used) << 32;
  auto mix = [&h](uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ULL;
  };
  for (uint64_t w : words) mix(w);
  mix(static_cast<uint64_t>(layout.media_shared) << 16 |
      static_cast<uint64_t>(layout.media_all) << 8 | layout.with_media);
  return static_cast<size_t>(h ^ (h >> 31));
}

LayoutTable::LayoutTable(const GpuMigModel& model, size_t max_states) {
  const auto& profiles = model.profiles();
  // Breadth-first from the empty GPU: a state's successors hold one more instance, so every
  // successor is discovered after its predecessor and a reverse pass sees successors first.
  std::vector<Layout>& states = states_;
  states.push_back(Layout{});
  index_.emplace(Layout{}, 0);
  for (size_t i = 0; i < states.size(); ++i) {
    for (size_t p = 0; p < profiles.size(); ++p) {
      for (const auto& pl : profiles[p].placements) {
        if (!model.CanPlace(states[i], static_cast<int>(p), pl)) continue;
        Layout next = states[i];
        model.Place(next, static_cast<int>(p), pl);
        if (index_.count(next) > 0) continue;
        if (states.size() >= max_states) {
          complete_ = false;
          continue;
        }
        index_.emplace(next, static_cast<uint32_t>(states.size()));
        states.push_back(next);
      }
    }
  }
  rooms_.assign(states.size(), ProfileRoom{});
  // Steps are gathered backwards (the reverse pass below) and put in state order after.
  std::vector<std::vector<Step>> steps(states.size());
  for (size_t i = states.size(); i-- > 0;) {
    for (size_t p = 0; p < profiles.size(); ++p) {
      int best = 0;
      for (const auto& pl : profiles[p].placements) {
        if (!model.CanPlace(states[i], static_cast<int>(p), pl)) continue;
        Layout next = states[i];
        model.Place(next, static_cast<int>(p), pl);
        auto it = index_.find(next);
        int after = 0;
        if (it != index_.end()) {
          after = rooms_[it->second][p];
          steps[i].push_back(Step{static_cast<uint32_t>(p), it->second});
        } else {
          after = model.ComputeRoom(next)[p];  // past max_states
        }
        best = std::max(best, 1 + after);
      }
      rooms_[i][p] = static_cast<uint8_t>(best);
    }
  }
  step_begin_.reserve(states.size() + 1);
  for (const auto& of_state : steps) {
    step_begin_.push_back(static_cast<uint32_t>(steps_.size()));
    steps_.insert(steps_.end(), of_state.begin(), of_state.end());
  }
  step_begin_.push_back(static_cast<uint32_t>(steps_.size()));
}

const ProfileRoom* LayoutTable::Find(const Layout& layout) const {
  auto it = index_.find(layout);
  return it == index_.end() ? nullptr : &rooms_[it->second];
}

int32_t LayoutTable::IndexOf(const Layout& layout) const {
  auto it = index_.find(layout);
  return it == index_.end() ? -1 : static_cast<int32_t>(it->second);
}

}  // namespace tessera::mig
