#pragma once

#include <string>

#include "core/config/scheduler_config.h"
#include "core/mig/catalog.h"

namespace tessera::mig {

// The built-in models as `tessera models` lists them: aliases, memory and slices, the number of
// MIG layouts tessera's layout table reaches, and each profile's placements. A model without
// verified placements says why and what an allowlist entry for it does. With `allowlist` (a
// device config's nvidia section), each model also shows the profiles its entry allows.
std::string CatalogText(const GpuModelCatalog& catalog,
                        const config::NvidiaConfig* allowlist = nullptr);

}  // namespace tessera::mig
