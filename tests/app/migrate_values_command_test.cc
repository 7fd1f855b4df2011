// `tessera migrate-values` run as a user would (issue 40): tessera's values on stdout or in
// --out, the keys not carried over on stderr only, exit 0 with them; exit 1 naming the file on
// bad YAML, a missing file or an output that cannot be written.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "app/serve_process.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::ReadAll;
using testing::RunCommand;
using ::testing::StartsWith;
using testing::TempDir;

const std::string kHamiDefaults =
    std::string(TESSERA_SOURCE_DIR) + "/tests/adapters/yaml/testdata/hami-v2.10.0-values.yaml";

struct Outcome {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

class MigrateValuesCommandTest : public ::testing::Test {
 protected:
  Outcome Run(const std::string& args) {
    const fs::path err = dir_.path() / "stderr.txt";
    Outcome o;
    o.code = RunCommand(
        std::string(TESSERA_BINARY) + " migrate-values " + args + " 2>" + err.string(), &o.out);
    o.err = ReadAll(err);
    return o;
  }

  TempDir dir_;
};

TEST_F(MigrateValuesCommandTest, HamiDefaultsGoToStdoutAndTheUnmappedKeysToStderr) {
  const Outcome o = Run(kHamiDefaults);
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.out, StartsWith("# tessera chart values"));
  EXPECT_THAT(o.out, HasSubstr("nodeSchedulerPolicy: \"binpack\""));
  EXPECT_THAT(o.out, HasSubstr("resourceMemoryName: \"nvidia.com/gpumem\""));
  EXPECT_THAT(o.out, Not(HasSubstr("not carried over")));
  EXPECT_THAT(o.err, HasSubstr("not carried over:\n"));
  EXPECT_THAT(o.err, HasSubstr("\nschedulerName: \"hami-scheduler\" not carried over"));
  EXPECT_THAT(o.err, HasSubstr("\ndevicePlugin.nvidiaNodeSelector: "));
  EXPECT_THAT(o.err, HasSubstr("\ndevices.amd: tessera schedules NVIDIA GPUs only\n"));
}

TEST_F(MigrateValuesCommandTest, OutWritesTheFileAndNothingToStdout) {
  const fs::path out = dir_.path() / "tessera-values.yaml";
  const Outcome o = Run(kHamiDefaults + " --out " + out.string());
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_THAT(o.out, IsEmpty());
  EXPECT_THAT(ReadAll(out), HasSubstr("gpuSchedulerPolicy: \"spread\""));
  EXPECT_THAT(o.err, HasSubstr("schedulerName: "));
}

TEST_F(MigrateValuesCommandTest, BadYamlMissingFilesAndUnwritableOutputFailNamingTheFile) {
  const fs::path bad = dir_.path() / "bad.yaml";
  std::ofstream(bad) << "scheduler: [1, 2\n";
  Outcome o = Run(bad.string());
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, HasSubstr(bad.string() + ": invalid YAML at line"));
  EXPECT_THAT(o.out, IsEmpty());

  o = Run((dir_.path() / "missing.yaml").string());
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, HasSubstr("missing.yaml: cannot open"));

  const fs::path unwritable = dir_.path() / "no-such-folder" / "values.yaml";
  o = Run(kHamiDefaults + " --out " + unwritable.string());
  EXPECT_EQ(o.code, 1);
  EXPECT_THAT(o.err, HasSubstr(unwritable.string() + ": cannot write"));
}

TEST_F(MigrateValuesCommandTest, WithoutAFileItSaysWhatIsMissing) {
  const Outcome o = Run("");
  EXPECT_NE(o.code, 0);
  EXPECT_THAT(o.err, HasSubstr("hami_values"));
}

}  // namespace
}  // namespace tessera
