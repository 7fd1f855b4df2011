// `tessera agent` started as a user would (issue 38 D): every path flag is checked before the
// agent starts, with an error that names the flag and a non-zero exit, never an uncaught
// exception; and what the agent logs, errors included, goes to stderr, never to stdout.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "app/serve_process.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::ReadAll;
using testing::RunCommand;
using testing::TempDir;

struct Outcome {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

std::string Quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class AgentCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    state_ = dir_.path() / "nvml-state.json";
    std::ofstream(state_)
        << R"({"gpus": [{"uuid": "GPU-rtx-0", "model": "RTX-PRO-6000-Blackwell-96GB", "migMode": true}]})";
    kubeconfig_ = dir_.path() / "kubeconfig";
    std::ofstream(kubeconfig_) << "";
    fs::create_directories(dir_.path() / "device-plugins");
    fs::create_directories(dir_.path() / "vgpu");
    fs::create_directories(dir_.path() / "sys");
    fs::create_directories(dir_.path() / "ledger");
    // Valid values for every path flag; each test breaks one.
    flags_ = {
        {"--node-name", "n1"},
        {"--nvml-library",
         (fs::path(TESSERA_BINARY).parent_path() / "libtessera-nvml-sim.so").string()},
        {"--kubeconfig", kubeconfig_.string()},
        {"--node-config-file", (dir_.path() / "no-config.json").string()},
        {"--plugin-dir", (dir_.path() / "device-plugins").string()},
        {"--hook-path", (dir_.path() / "vgpu").string()},
        {"--sysfs-root", (dir_.path() / "sys").string()},
        {"--ledger", (dir_.path() / "ledger" / "mig-ledger.json").string()},
        {"--http-bind", ""},
    };
  }

  // `tessera agent` with the flags, one replaced; stdout and stderr apart.
  Outcome Run(const std::map<std::string, std::string>& changed) {
    std::map<std::string, std::string> flags = flags_;
    for (const auto& [flag, value] : changed) flags[flag] = value;
    std::string command = "TESSERA_NVML_SIM_STATE=" + Quoted(state_.string()) + " timeout 30 " +
                          Quoted(TESSERA_BINARY) + " agent";
    // `--flag value`: CLI11 takes `--flag=` with an empty value as `--flag` and the next word.
    for (const auto& [flag, value] : flags) command += " " + flag + " " + Quoted(value);
    const fs::path err = dir_.path() / "stderr.txt";
    command += " 2>" + Quoted(err.string());
    Outcome o;
    o.code = RunCommand(command, &o.out);
    o.err = ReadAll(err);
    return o;
  }

  TempDir dir_;
  fs::path state_;
  fs::path kubeconfig_;
  std::map<std::string, std::string> flags_;
};

// The flag is named, the exit is 1 (an uncaught exception would abort: 134), nothing on stdout.
void ExpectRefused(const Outcome& o, const std::string& flag, const std::string& why) {
  EXPECT_EQ(o.code, 1) << o.err;
  EXPECT_NE(o.err.find(flag), std::string::npos) << o.err;
  EXPECT_NE(o.err.find(why), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("terminate called"), std::string::npos) << o.err;
  EXPECT_EQ(o.out, "");
}

TEST_F(AgentCommandTest, ARelativeLedgerPathIsRefused) {
  ExpectRefused(Run({{"--ledger", "mig-ledger.json"}}), "--ledger mig-ledger.json", "absolute");
}

TEST_F(AgentCommandTest, ALedgerFolderThatCannotBeCreatedIsRefused) {
  ExpectRefused(Run({{"--ledger", "/proc/tessera-no-such-folder/mig-ledger.json"}}),
                "--ledger /proc/tessera-no-such-folder/mig-ledger.json", "folder");
}

TEST_F(AgentCommandTest, ALedgerInAFolderThatCannotBeWrittenIsRefused) {
  ExpectRefused(Run({{"--ledger", "/proc/mig-ledger.json"}}), "--ledger /proc/mig-ledger.json",
                "not writable");
}

TEST_F(AgentCommandTest, ALedgerPathThatIsAFolderIsRefused) {
  const std::string folder = (dir_.path() / "ledger").string();
  ExpectRefused(Run({{"--ledger", folder}}), "--ledger " + folder, "is a folder");
}

TEST_F(AgentCommandTest, EveryOtherPathFlagIsChecked) {
  const std::string folder = (dir_.path() / "ledger").string();
  const std::string file = kubeconfig_.string();
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"--device-config-file", folder, "is a folder"},
      {"--device-config-file", "/nonexistent/device-config.yaml", "does not exist"},
      {"--node-config-file", folder, "is a folder"},
      {"--kubeconfig", folder, "is a folder"},
      {"--kubeconfig", "/nonexistent/kubeconfig", "does not exist"},
      {"--plugin-dir", "device-plugins", "absolute"},
      {"--plugin-dir", file, "not a folder"},
      {"--hook-path", "vgpu", "absolute"},
      {"--sysfs-root", "/nonexistent/sys", "does not exist"},
  };
  for (const auto& [flag, value, why] : cases) {
    SCOPED_TRACE(flag + " " + value);
    ExpectRefused(Run({{flag, value}}), flag + " " + value, why);
  }
}

// /metrics is guarded unless asked otherwise (issue 38 F): a mode that is not auto, delegated or
// none stops the agent naming the flag, before it reaches NVML or the API server.
TEST_F(AgentCommandTest, AnUnknownReadAuthModeIsRefused) {
  Outcome o = Run({{"--read-auth", "sometimes"}});
  EXPECT_NE(o.code, 0);
  EXPECT_NE(o.err.find("--read-auth"), std::string::npos) << o.err;
  EXPECT_EQ(o.out, "");
}

// Logs go to stderr (issue 38 D): a flag CLI11 does not know, and an error of the agent's own.
TEST_F(AgentCommandTest, ErrorsGoToStderrAndNothingToStdout) {
  Outcome unknown = Run({{"--no-such-flag", "x"}});
  EXPECT_NE(unknown.code, 0);
  EXPECT_EQ(unknown.out, "");
  EXPECT_NE(unknown.err.find("--no-such-flag"), std::string::npos) << unknown.err;
  Outcome refused = Run({{"--ledger", "mig-ledger.json"}});
  EXPECT_NE(refused.code, 0);
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find("[error]"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace tessera
