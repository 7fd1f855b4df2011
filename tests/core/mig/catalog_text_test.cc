#include "core/mig/catalog_text.h"

#include <gtest/gtest.h>

#include <string>

#include "core/config/scheduler_config.h"
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

// `model`'s lines: its header, and the indented lines up to the next model's header; a
// paragraph wrapped over several lines (continued with 6 spaces) is joined into one.
std::string Section(const std::string& text, const std::string& model) {
  size_t at = 0;
  while (at != std::string::npos) {
    at = text.find(model, at);
    if (at == std::string::npos) return "";
    const bool line_start = at == 0 || text[at - 1] == '\n';
    const char after = at + model.size() < text.size() ? text[at + model.size()] : '\n';
    if (line_start && (after == ' ' || after == '\n')) break;
    ++at;
  }
  size_t end = text.find('\n', at);
  while (end != std::string::npos && end + 1 < text.size() && text[end + 1] == ' ') {
    end = text.find('\n', end + 1);
  }
  std::string section =
      text.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
  for (size_t wrap = section.find("\n      "); wrap != std::string::npos;
       wrap = section.find("\n      ", wrap)) {
    section.replace(wrap, 7, " ");
  }
  return section;
}

TEST(CatalogTextTest, AModelWithoutVerifiedPlacementsSaysWhyAndWhatAnAllowlistEntryDoes) {
  auto catalog = GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok()) << catalog.error().message;
  const std::string text = CatalogText(catalog.value());
  const std::string rtx5000 = Section(text, "RTX-PRO-5000-Blackwell-48GB");
  ASSERT_FALSE(rtx5000.empty()) << text;
  EXPECT_NE(rtx5000.find("(no verified placements: sharing mode only in scenarios)"),
            std::string::npos);
  EXPECT_NE(rtx5000.find("memory slices unknown"), std::string::npos) << rtx5000;
  // Why: no placements for any profile, no slice count, the memory estimated.
  EXPECT_NE(rtx5000.find("why: the built-in table lists the profiles NVIDIA names for this model "
                         "but no placements for any"),
            std::string::npos)
      << rtx5000;
  EXPECT_NE(rtx5000.find("nor its memory slices"), std::string::npos) << rtx5000;
  EXPECT_NE(rtx5000.find("46080 MiB are an estimate"), std::string::npos) << rtx5000;
  // What it stops (scenarios in MIG mode) and what it does not (real nodes), and what an
  // allowlist entry for it means.
  EXPECT_NE(rtx5000.find("`mode: mig` is refused"), std::string::npos) << rtx5000;
  EXPECT_NE(rtx5000.find("on a real node in MIG mode: the agent registers the profiles and "
                         "placements the driver reports"),
            std::string::npos)
      << rtx5000;
  EXPECT_NE(rtx5000.find("an allowlist entry for it (the Helm chart has one) says which of the "
                         "driver's profiles the agent registers"),
            std::string::npos)
      << rtx5000;
  EXPECT_NE(rtx5000.find("It adds no placements."), std::string::npos) << rtx5000;
  EXPECT_NE(rtx5000.find("1g.24gb: 23040 MiB, 50% cores, placements (none verified)"),
            std::string::npos)
      << rtx5000;
  // The note's lines fit a terminal's 100 columns.
  size_t line_start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', nl + 1)) {
    const std::string line = text.substr(line_start, nl - line_start);
    for (const char* lead : {"  why: ", "  so: ", "  on a real node", "  an allowlist", "      "}) {
      if (line.rfind(lead, 0) == 0) {
        EXPECT_LE(line.size(), 100U) << line;
      }
    }
    line_start = nl + 1;
  }
  // A model with placements has no such note.
  const std::string a100 = Section(text, "A100-40GB");
  ASSERT_FALSE(a100.empty());
  EXPECT_EQ(a100.find("why:"), std::string::npos) << a100;
  EXPECT_EQ(a100.find("allowlist"), std::string::npos) << a100;
}

TEST(CatalogTextTest, WithAnAllowlistEachModelShowsTheProfilesItsEntryAllows) {
  auto catalog = GpuModelCatalog::Builtin();
  ASSERT_TRUE(catalog.ok()) << catalog.error().message;
  config::NvidiaConfig allowlist;
  allowlist.mig_profile_allowlist = {
      {{"A100-SXM4-40GB", "A100-PCIE-40GB", "A100-40GB"}, {"1g.5gb", "3g.20gb"}},
      {{"RTX PRO 5000 Blackwell"}, {"1g.24gb", "2g.48gb"}}};
  const std::string text = CatalogText(catalog.value(), &allowlist);
  EXPECT_NE(Section(text, "A100-40GB").find("  allowlist: 1g.5gb, 3g.20gb\n"), std::string::npos)
      << text;
  // Matched by its NVML name, as the agent matches the registered type.
  EXPECT_NE(Section(text, "RTX-PRO-5000-Blackwell-48GB").find("  allowlist: 1g.24gb, 2g.48gb\n"),
            std::string::npos)
      << text;
  EXPECT_NE(Section(text, "A30-24GB").find("  allowlist: (no entry: no profile in MIG mode)\n"),
            std::string::npos)
      << text;

  const config::NvidiaConfig empty;
  EXPECT_NE(Section(CatalogText(catalog.value(), &empty), "A30-24GB")
                .find("  allowlist: (none: every profile)\n"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::mig
