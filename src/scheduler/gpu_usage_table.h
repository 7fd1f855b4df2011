#pragma once

// What the agents measured on their GPUs (tessera.io/gpu-usage, codec/gpu_usage.h), kept beside
// the scheduling state and never in it: /ui draws it on the bars, nothing schedules by it. One
// entry per node that carries the annotation, so it is bounded by the nodes; a malformed value
// is dropped with one log line per distinct value and never touches the node's scheduling
// state. Thread-safe (its own lock, never held with anything else taken inside it).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/codec/gpu_usage.h"

namespace tessera::scheduler {

class GpuUsageTable {
 public:
  // The node's annotation as last seen (nullptr: it carries none). Decodes only a changed value.
  void Update(const std::string& node, const std::string* annotation);
  void Remove(const std::string& node);

  // The table as the "usage" member of /ui/state:
  //   {"NODE":[time, [[uuid, util, usedMiB, [[start, util, usedMiB], ...]], ...]], ...}
  // with null for a value the agent did not report. `version` moves whenever it changes.
  struct Json {
    std::shared_ptr<const std::string> text;
    uint64_t version = 0;
  };
  Json ToJson() const;

  size_t size() const;
  uint64_t version() const;
  // Malformed values seen (each distinct value once).
  uint64_t malformed() const;

 private:
  struct Entry {
    std::string raw;
    std::shared_ptr<const codec::NodeGpuUsage> usage;  // null: `raw` does not decode
  };
  mutable std::mutex mu_;
  std::map<std::string, Entry> nodes_;
  uint64_t version_ = 0;
  uint64_t malformed_ = 0;
  mutable std::shared_ptr<const std::string> json_;
  mutable uint64_t json_version_ = UINT64_MAX;
};

}  // namespace tessera::scheduler
