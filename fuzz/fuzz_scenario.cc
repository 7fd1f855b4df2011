// Fuzzes simulator scenarios: YAML text -> Scenario, then runs the small ones through the
// production scheduling code (admission, filter, score, reserve, release).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/mig/catalog.h"
#include "sim/scenario.h"
#include "sim/simulator.h"

namespace {

constexpr size_t kMaxSteps = 20;  // keeps each input's simulation cheap
constexpr size_t kMaxNodes = 20;

const tessera::mig::GpuModelCatalog& Catalog() {
  static const tessera::mig::GpuModelCatalog* catalog = [] {
    auto c = tessera::mig::GpuModelCatalog::Builtin();
    if (!c.ok()) {
      std::fprintf(stderr, "built-in MIG table: %s\n", c.error().message.c_str());
      std::abort();
    }
    return new tessera::mig::GpuModelCatalog(std::move(c.value()));
  }();
  return *catalog;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto scenario = tessera::sim::LoadScenarioText(text, Catalog(), "fuzz");
  if (!scenario.ok()) return 0;
  if (scenario->steps.size() > kMaxSteps || scenario->nodes.size() > kMaxNodes) return 0;
  tessera::sim::Simulator simulator(std::move(scenario.value()));
  auto results = simulator.RunAll();
  (void)results.size();
  return 0;
}
