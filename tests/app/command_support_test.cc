// The loaders every command shares (app/command_support.h).
#include "app/command_support.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

#include "app/serve_process.h"

namespace tessera::app {
namespace {

using std::chrono::milliseconds;

TEST(DurationFlag, ReadsGoDurationsAndBareSeconds) {
  EXPECT_EQ(DurationFlag("--x", "1m30s").value(), milliseconds(90'000));
  EXPECT_EQ(DurationFlag("--x", "500ms").value(), milliseconds(500));
  EXPECT_EQ(DurationFlag("--x", "5").value(), milliseconds(5'000));
  EXPECT_EQ(DurationFlag("--x", "0").value(), milliseconds(0));
}

TEST(DurationFlag, MalformedOrNegativeIsAnErrorNamingTheFlag) {
  for (const std::string text : {"soon", "-5s", "5 parsecs", ""}) {
    SCOPED_TRACE(text);
    auto d = DurationFlag("--reconcile-grace", text);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().message,
              "--reconcile-grace " + text + ": want a duration such as 5s, 2m or 1m30s");
  }
}

TEST(LoadDeviceConfig, NoPathIsTheDefaults) {
  auto config = LoadDeviceConfig("");
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->nvidia.resource_count_name,
            config::SchedulerConfig{}.nvidia.resource_count_name);
}

TEST(LoadDeviceConfig, ErrorsNameTheFile) {
  testing::TempDir dir;
  const std::string missing = (dir.path() / "missing.yaml").string();
  auto absent = LoadDeviceConfig(missing);
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.error().message.find(missing), std::string::npos) << absent.error().message;

  const std::string broken = (dir.path() / "broken.yaml").string();
  std::ofstream(broken) << "nvidia: [unclosed\n";
  auto unparsable = LoadDeviceConfig(broken);
  ASSERT_FALSE(unparsable.ok());
  EXPECT_NE(unparsable.error().message.find("device config " + broken), std::string::npos)
      << unparsable.error().message;
}

}  // namespace
}  // namespace tessera::app
