#include "sim/demo.h"

namespace tessera::sim {

extern const char* DemoMigScenario();
extern const char* DemoSharingScenario();

std::vector<DemoPart> DemoParts() {
  return {
      {"Dynamic MIG: two instances per pod on one RTX PRO 6000", "examples/demo-mig.yaml",
       DemoMigScenario()},
      {"GPU sharing: the physical count check stays for non-MIG requests",
       "examples/demo-sharing.yaml", DemoSharingScenario()},
  };
}

}  // namespace tessera::sim
