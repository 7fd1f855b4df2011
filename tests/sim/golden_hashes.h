#pragma once

// Pinned outputs for tests that prove a reshaping keeps decisions identical: each case's output
// is hashed, and the hashes live in a file under tests/sim/data. TESSERA_UPDATE_GOLDEN=1 records
// them (a change meant to alter decisions does that and says why in its commit).

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace tessera::sim::testing {

inline uint64_t Fnv1a(const std::string& text, uint64_t h = 0xcbf29ce484222325ULL) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

inline std::string GoldenPath(const std::string& file) {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/sim/data/" + file;
}

// Compares `hashes` (case name -> hash) with `file`, or records them with TESSERA_UPDATE_GOLDEN.
inline void ExpectGoldenHashes(const std::string& file,
                               const std::map<std::string, uint64_t>& hashes,
                               const std::string& header) {
  if (std::getenv("TESSERA_UPDATE_GOLDEN") != nullptr) {
    std::ofstream out(GoldenPath(file));
    out << "# " << header << "\n";
    for (const auto& [name, hash] : hashes) out << name << " " << std::hex << hash << "\n";
    GTEST_SKIP() << "recorded " << GoldenPath(file);
  }
  std::ifstream in(GoldenPath(file));
  ASSERT_TRUE(in) << "missing " << GoldenPath(file) << " (record it with TESSERA_UPDATE_GOLDEN=1)";
  std::map<std::string, uint64_t> recorded;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name;
    uint64_t hash = 0;
    fields >> name >> std::hex >> hash;
    recorded[name] = hash;
  }
  EXPECT_EQ(recorded.size(), hashes.size()) << GoldenPath(file);
  for (const auto& [name, hash] : hashes) {
    const auto it = recorded.find(name);
    if (it == recorded.end()) {
      ADD_FAILURE() << name << " is not recorded in " << GoldenPath(file);
    } else if (it->second != hash) {
      ADD_FAILURE() << name << " decides differently from the build that recorded " << file;
    }
  }
}

}  // namespace tessera::sim::testing
