#include "core/mig/catalog_text.h"

#include <gtest/gtest.h>

#include <string>

#include "core/mig/layout_table.h"

namespace tessera::mig {
namespace {

TEST(CatalogTextTest, ListsEveryModelWithItsLayoutsAndProfilePlacements) {
  auto catalog = GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok()) << catalog.error().message;
  const std::string text = CatalogText(catalog.value());
  for (const auto& m : catalog->models()) {
    EXPECT_NE(text.find(m.model), std::string::npos) << m.model;
    for (const auto& p : m.profiles) {
      EXPECT_NE(text.find("    " + p.name + ": " + std::to_string(p.memory_mib) + " MiB"),
                std::string::npos)
          << m.model << " " << p.name;
    }
  }
  // The layout count is the table's own.
  const GpuModelSpec* a100 = catalog->Find("A100-40GB");
  ASSERT_NE(a100, nullptr);
  model::GpuDevice device;
  device.mig_profiles = a100->profiles;
  const GpuMigModel rules(device, nullptr);
  const std::string layouts = std::to_string(LayoutTable(rules).size()) + " reachable MIG layouts";
  EXPECT_NE(text.find(a100->model), std::string::npos);
  EXPECT_NE(text.find(layouts, text.find(a100->model)), std::string::npos) << layouts;
  // 1g.5gb's seven placements, as start+size.
  EXPECT_NE(text.find("1g.5gb: 4864 MiB"), std::string::npos);
}

}  // namespace
}  // namespace tessera::mig
