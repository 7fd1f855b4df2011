#pragma once

#include <string>

#include "core/mig/catalog.h"

namespace tessera::mig {

// The built-in models as `tessera models` lists them: aliases, memory and slices, the number of
// MIG layouts tessera's layout table reaches, and each profile's placements.
std::string CatalogText(const GpuModelCatalog& catalog);

}  // namespace tessera::mig
