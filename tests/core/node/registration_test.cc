#include "core/node/registration.h"

#include <gtest/gtest.h>

#include "core/codec/node_register.h"

namespace tessera::node {
namespace {

DriverGpu Rtx(uint32_t index, const std::string& uuid) {
  DriverGpu g;
  g.index = index;
  g.uuid = uuid;
  g.name = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
  g.memory_mib = 97887;
  g.mig_capable = g.mig_enabled = true;
  DriverMigProfile one{"1g.24gb", 0, 14, 1, 4, 46, 24192, {{0, 3}, {3, 3}, {6, 3}, {9, 3}}};
  DriverMigProfile me{"1g.24gb+me", 7, 21, 1, 1, 46, 24192, {{0, 3}, {3, 3}, {6, 3}, {9, 3}}};
  DriverMigProfile two{"2g.48gb", 1, 5, 2, 2, 94, 48512, {{0, 6}, {6, 6}}};
  DriverMigProfile four{"4g.96gb", 3, 0, 4, 1, 188, 97408, {{0, 12}}};
  g.mig_profiles = {one, me, two, four};
  return g;
}

DriverGpu T4(uint32_t index, const std::string& uuid) {
  DriverGpu g;
  g.index = index;
  g.uuid = uuid;
  g.name = "Tesla T4";
  g.memory_mib = 15360;
  return g;
}

TEST(RegistrationTest, SharedGpusFollowHamisRules) {
  NodeDeviceConfig config;
  config.device_memory_scaling = 1.5;
  config.device_core_scaling = 2;
  RegistrationInput input;
  input.gpus = {T4(1, "GPU-b"), T4(0, "GPU-a")};
  input.unhealthy = {"GPU-b"};
  input.numa = {{"GPU-b", 1}};
  auto reg = BuildRegistration(input, config);
  ASSERT_EQ(reg.devices.size(), 2U);
  // Stable order by index, so an unchanged node is never re-patched (HAMi W11).
  EXPECT_EQ(
      codec::EncodeNodeRegister(reg.devices),
      R"([{"id":"GPU-a","count":10,"devmem":23040,"devcore":200,"type":"NVIDIA-Tesla T4","mode":"hami-core","health":true},)"
      R"({"id":"GPU-b","index":1,"count":10,"devmem":23040,"devcore":200,"type":"NVIDIA-Tesla T4","numa":1,"mode":"hami-core"}])");
}

TEST(RegistrationTest, MigGpusPublishProfilesWithHamisCoreShare) {
  NodeDeviceConfig config;
  config.operating_mode = "mig";
  RegistrationInput input;
  input.gpus = {Rtx(0, "GPU-rtx")};
  auto reg = BuildRegistration(input, config);
  ASSERT_EQ(reg.devices.size(), 1U);
  const auto& d = reg.devices[0];
  EXPECT_EQ(d.mode, "mig");
  EXPECT_EQ(d.count, 4);  // the largest instance count
  EXPECT_EQ(d.total_mem_mib, 97887);
  EXPECT_EQ(d.total_cores, 100);
  ASSERT_EQ(d.mig_profiles.size(), 4U);
  EXPECT_EQ(d.mig_profiles[0].name, "1g.24gb");
  EXPECT_EQ(d.mig_profiles[0].core, 25);  // ceil(100 * 46 / 188)
  EXPECT_EQ(d.mig_profiles[2].core, 50);
  EXPECT_EQ(d.mig_profiles[0].placements.size(), 4U);
  // What HAMi's scheduler and ours decode is what was meant.
  auto decoded = codec::DecodeNodeRegister(codec::EncodeNodeRegister(reg.devices));
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(decoded.value()[0].mig_profiles[3].placements[0], (model::Placement{0, 12}));
}

TEST(RegistrationTest, AllowlistSelectsAndNamesProfilesHamisWay) {
  NodeDeviceConfig config;
  config.operating_mode = "mig";
  config.mig_profile_allowlist = {
      {{"A100"}, {"1g.5gb"}}, {{"RTX PRO 6000"}, {"2g.48gb", "1g.anything", "1g.24gb+me", "3g.x"}}};
  RegistrationInput input;
  input.gpus = {Rtx(0, "GPU-rtx")};
  auto reg = BuildRegistration(input, config);
  ASSERT_EQ(reg.devices.size(), 1U);
  const auto& p = reg.devices[0].mig_profiles;
  ASSERT_EQ(p.size(), 3U);  // 3g has no profile on this GPU
  EXPECT_EQ(p[0].name, "2g.48gb");
  EXPECT_EQ(p[1].name, "1g.anything");  // HAMi: the prefix picks the base profile
  EXPECT_EQ(p[1].memory_mib, 24192);
  EXPECT_EQ(p[2].name, "1g.24gb+me");  // exact names reach the variants
  EXPECT_EQ(p[2].max_count, 1);
  EXPECT_EQ(reg.devices[0].count, 4);
}

TEST(RegistrationTest, GpusThatCannotServeAreLeftOutWithAReason) {
  NodeDeviceConfig config;
  config.operating_mode = "mig";
  config.mig_profile_allowlist = {{{"H100"}, {"1g.10gb"}}};
  config.filter_indexes = {2};
  RegistrationInput input;
  DriverGpu no_memory = T4(1, "GPU-nomem");
  no_memory.memory_mib = 0;
  input.gpus = {Rtx(0, "GPU-rtx"), no_memory, T4(2, "GPU-filtered")};
  auto reg = BuildRegistration(input, config);
  EXPECT_TRUE(reg.devices.empty());
  ASSERT_EQ(reg.notes.size(), 2U);
  EXPECT_NE(reg.notes[0].find("no MIG profile is allowed"), std::string::npos);
  EXPECT_NE(reg.notes[1].find("preConfiguredDeviceMemory"), std::string::npos);

  NodeDeviceConfig shared;
  shared.pre_configured_device_memory = 8000;
  input.gpus = {Rtx(0, "GPU-rtx"), no_memory};
  reg = BuildRegistration(input, shared);
  ASSERT_EQ(reg.devices.size(), 1U);  // the MIG GPU cannot be shared
  EXPECT_EQ(reg.devices[0].total_mem_mib, 8000);
  EXPECT_NE(reg.notes[0].find("MIG is enabled but the node's operating mode is"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::node

namespace tessera::node {
namespace {

// Issue 38 G: a MIG-capable GPU of a "mig" node whose MIG mode is off, or only pending until a
// reset, is not silently shared: it is listed in mig_mode_off and, by default, left out.
TEST(RegistrationTest, AGpuWithMigModeOffOnAMigNodeIsLeftOutByDefault) {
  NodeDeviceConfig config;
  config.operating_mode = "mig";
  RegistrationInput input;
  DriverGpu off = Rtx(0, "GPU-off");
  off.mig_enabled = off.mig_pending_enabled = false;
  off.mig_profiles.clear();  // the driver reports them only in MIG mode
  DriverGpu pending = off;
  pending.index = 2;
  pending.uuid = "GPU-pending";
  pending.mig_pending_enabled = true;
  input.gpus = {off, Rtx(1, "GPU-on"), pending, T4(3, "GPU-t4")};
  auto reg = BuildRegistration(input, config);
  ASSERT_EQ(reg.devices.size(), 2U);
  EXPECT_EQ(reg.devices[0].uuid, "GPU-on");
  EXPECT_EQ(reg.devices[1].uuid, "GPU-t4");  // cannot run MIG at all: shared, as before
  EXPECT_EQ(reg.mig_mode_off, (std::vector<MigModeOff>{{"GPU-off", 0, false, false},
                                                       {"GPU-pending", 2, true, false}}));
  ASSERT_EQ(reg.notes.size(), 2U);
  EXPECT_EQ(reg.notes[0],
            "GPU-off: the node's operating mode is \"mig\" but MIG mode is off; left out "
            "(migFallback: none)");
  EXPECT_NE(reg.notes[1].find("is pending until a GPU reset or reboot"), std::string::npos);

  config.mig_fallback = MigFallback::kHamiCore;
  auto shared = BuildRegistration(input, config);
  ASSERT_EQ(shared.devices.size(), 4U);
  EXPECT_EQ(shared.devices[0].mode, "hami-core");
  EXPECT_EQ(shared.devices[0].count, 10);
  EXPECT_EQ(shared.devices[0].total_mem_mib, 97887);
  EXPECT_TRUE(shared.mig_mode_off[0].shared);

  // A filtered GPU is not reported; on a node that is not "mig" nothing is.
  config.filter_uuids = {"GPU-off"};
  EXPECT_EQ(BuildRegistration(input, config).mig_mode_off.size(), 1U);
  config.operating_mode = "hami-core";
  EXPECT_TRUE(BuildRegistration(input, config).mig_mode_off.empty());
}

TEST(RegistrationTest, ANonMigGpuOnAMigNodeIsShared) {
  NodeDeviceConfig config;
  config.operating_mode = "mig";
  RegistrationInput input;
  input.gpus = {Rtx(0, "GPU-rtx"), T4(1, "GPU-t4")};
  auto reg = BuildRegistration(input, config);
  ASSERT_EQ(reg.devices.size(), 2U);
  EXPECT_EQ(reg.devices[0].mode, "mig");
  EXPECT_EQ(reg.devices[1].mode, "hami-core");
  EXPECT_EQ(reg.devices[1].count, 10);
}

}  // namespace
}  // namespace tessera::node
