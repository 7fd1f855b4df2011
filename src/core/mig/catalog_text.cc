#include "core/mig/catalog_text.h"

#include <sstream>

#include "core/mig/layout_table.h"

namespace tessera::mig {

std::string CatalogText(const GpuModelCatalog& catalog) {
  std::ostringstream out;
  for (const auto& m : catalog.models()) {
    out << m.model << (m.complete ? "" : " (no verified placements: sharing mode only)")
        << "\n  aliases: ";
    for (size_t i = 0; i < m.aliases.size(); ++i) out << (i ? ", " : "") << m.aliases[i];
    out << "\n  " << m.memory_mib << " MiB, " << m.memory_slices << " memory slices, "
        << m.compute_slices << " compute slices";
    if (m.complete) {
      // The layout table tessera builds for this model (docs/placement.md).
      model::GpuDevice device;
      device.mig_profiles = m.profiles;
      GpuMigModel rules(device, nullptr);
      out << ", " << LayoutTable(rules).size() << " reachable MIG layouts";
    }
    out << "\n";
    for (const auto& p : m.profiles) {
      out << "    " << p.name << ": " << p.memory_mib << " MiB, " << p.core
          << "% cores, placements";
      for (const auto& pl : p.placements) out << " " << pl.start << "+" << pl.size;
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace tessera::mig
