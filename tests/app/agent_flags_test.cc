// `tessera agent`'s flags parsed without starting the agent.
#include "app/agent_flags.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace tessera::app {
namespace {

AgentCommandOptions Parse(std::vector<std::string> args) {
  CLI::App agent{"agent"};
  AgentCommandOptions options;
  AddAgentFlags(agent, options);
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  agent.parse(args);
  return options;
}

// HAMi's HOOK_PATH is /usr/local and HAMi-core is in its vgpu folder
// (<HOOK_PATH>/vgpu/libvgpu.so); the agent used /usr/local/vgpu, so it looked for
// /usr/local/vgpu/vgpu/libvgpu.so on nodes without --hook-path or HOOK_PATH.
TEST(AgentFlags, HookPathDefaultsToHamisHookPath) {
  EXPECT_EQ(ResolveHookPath(Parse({}).hook_path, nullptr), "/usr/local");
}

TEST(AgentFlags, HookPathFlagWinsOverTheEnvironment) {
  EXPECT_EQ(ResolveHookPath(Parse({}).hook_path, "/opt/hami"), "/opt/hami");
  EXPECT_EQ(ResolveHookPath(Parse({"--hook-path", "/srv/hook"}).hook_path, "/opt/hami"),
            "/srv/hook");
}

TEST(AgentFlags, HelpNamesTheDefaultHookPath) {
  CLI::App agent{"agent"};
  AgentCommandOptions options;
  AddAgentFlags(agent, options);
  const std::string help = agent.help();
  EXPECT_NE(help.find("$HOOK_PATH or /usr/local)"), std::string::npos) << help;
}

}  // namespace
}  // namespace tessera::app
