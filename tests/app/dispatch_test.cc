// `tessera` as a dispatcher (app/main.cc): every command is listed in its place, runs when named
// and ends the program with its own exit code.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "app/serve_process.h"

namespace tessera {
namespace {

using testing::RunTessera;

TEST(Dispatch, HelpListsEveryCommandInOrder) {
  std::string help;
  ASSERT_EQ(RunTessera("--help", "", &help), 0) << help;
  size_t at = help.find("Subcommands:");
  ASSERT_NE(at, std::string::npos) << help;
  for (const std::string command : {"demo", "simulate", "models", "plugins", "explain", "defrag",
                                    "replay", "migrate-values", "serve", "agent"}) {
    SCOPED_TRACE(command);
    const size_t found = help.find("\n  " + command + " ", at);
    ASSERT_NE(found, std::string::npos) << help;
    at = found;
  }
}

TEST(Dispatch, EachCommandEndsWithItsOwnExitCode) {
  std::string output;
  EXPECT_EQ(RunTessera("plugins", "", &output), 0) << output;
  EXPECT_NE(output.find("pre-filter:"), std::string::npos) << output;
  EXPECT_EQ(RunTessera("simulate", "/nonexistent/scenario.yaml", &output), 1) << output;
  EXPECT_NE(output.find("tessera: /nonexistent/scenario.yaml"), std::string::npos) << output;
  EXPECT_EQ(RunTessera("replay", "", &output), 1) << output;
  EXPECT_NE(output.find("--nodes, --pods and --policy are required"), std::string::npos) << output;
}

TEST(Dispatch, ACommandIsRequired) {
  std::string output;
  EXPECT_NE(RunTessera("", "", &output), 0);
  EXPECT_NE(output.find("A subcommand is required"), std::string::npos) << output;
}

}  // namespace
}  // namespace tessera
