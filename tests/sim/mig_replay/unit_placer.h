#pragma once

// A stand-in Placer for the protocol tests: what a protocol counts, with no MIG in the way.

#include <map>
#include <string>
#include <vector>

#include "sim/mig_replay/protocol.h"

namespace tessera::sim::mig_replay {

// A cluster of `capacity` units; request type t takes t + 1 units. Records the order of
// placements.
class UnitPlacer : public Placer {
 public:
  explicit UnitPlacer(int capacity) : capacity_(capacity) {}
  bool Place(const std::string& key, int type) override {
    if (used_ + type + 1 > capacity_) return false;
    used_ += type + 1;
    held_[key] = type + 1;
    placed.push_back(key);
    return true;
  }
  void Release(const std::string& key) override {
    used_ -= held_.at(key);
    held_.erase(key);
  }
  Snapshot Measure() const override { return Snapshot{}; }
  int64_t ServedSlices(const std::string& key, int /*type*/) const override {
    return held_.count(key) != 0 ? held_.at(key) : 0;
  }
  int64_t TotalSlices() const override { return capacity_; }
  std::vector<std::string> placed;

 private:
  int capacity_;
  int used_ = 0;
  std::map<std::string, int> held_;
};

// An arrival of request type `type` at `time`, staying `lifetime`.
inline Arrival At(int type, double time, double lifetime) { return Arrival{type, time, lifetime}; }

}  // namespace tessera::sim::mig_replay
