#include "app/serve_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

namespace tessera::app {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

using Args = std::vector<std::string>;

TEST(NormalizeServeArgs, RewritesKlogVerbosityInServeArguments) {
  EXPECT_THAT(NormalizeServeArgs({"tessera", "serve", "--debug", "-v=4"}),
              ElementsAre("tessera", "serve", "--debug", "--v=4"));
  EXPECT_THAT(NormalizeServeArgs({"tessera", "serve", "-v", "5", "--cluster", "x.yaml"}),
              ElementsAre("tessera", "serve", "--v=5", "--cluster", "x.yaml"));
  EXPECT_THAT(NormalizeServeArgs({"tessera", "serve", "-v3"}),
              ElementsAre("tessera", "serve", "--v=3"));
}

TEST(NormalizeServeArgs, LeavesEverythingElseAlone) {
  // Long options, --v itself, and options that merely start with -v.
  const Args serve = {"tessera", "serve", "--v=2", "--version", "-vx", "--http_bind=:1"};
  EXPECT_EQ(NormalizeServeArgs(serve), serve);
  // Other subcommands never change, even where their arguments look like klog's.
  const Args agent = {"tessera", "agent", "-v=4"};
  EXPECT_EQ(NormalizeServeArgs(agent), agent);
  const Args simulate = {"tessera", "simulate", "serve", "-v=4"};
  EXPECT_EQ(NormalizeServeArgs(simulate), simulate);
  // Nothing after `--`; a trailing -v without a value is left for CLI11 to refuse.
  const Args dashdash = {"tessera", "serve", "--", "-v=4"};
  EXPECT_EQ(NormalizeServeArgs(dashdash), dashdash);
  const Args trailing = {"tessera", "serve", "-v"};
  EXPECT_EQ(NormalizeServeArgs(trailing), trailing);
  EXPECT_EQ(NormalizeServeArgs({}), Args{});
  const Args help = {"tessera", "--help"};
  EXPECT_EQ(NormalizeServeArgs(help), help);
}

TEST(ParseNodeSelector, ParsesKeyValueLists) {
  auto s = ParseNodeSelector({"gpu=on,zone=a"});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_THAT(s.value(), UnorderedElementsAre(Pair("gpu", "on"), Pair("zone", "a")));
  // Repeated flags merge; values may be empty or hold '='; spaces around items are dropped.
  s = ParseNodeSelector({"a=1", " b = , c=x=y "});
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_THAT(s.value(), UnorderedElementsAre(Pair("a", "1"), Pair("b", ""), Pair("c", "x=y")));
  s = ParseNodeSelector({});
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->empty());
  s = ParseNodeSelector({""});
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->empty());
  s = ParseNodeSelector({"a=1", "a=1"});
  ASSERT_TRUE(s.ok());
}

TEST(ParseNodeSelector, MalformedItemsAreErrorsNamingTheFlagAndTheItem) {
  auto s = ParseNodeSelector({"gpu=on,nolabel"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "--node-label-selector: \"nolabel\" is not key=value");
  s = ParseNodeSelector({"=on"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "--node-label-selector: \"=on\" has an empty key");
  s = ParseNodeSelector({"a=1,,b=2"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("--node-label-selector a=1,,b=2: empty item"));
  s = ParseNodeSelector({"a=1", "a=2"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("key \"a\" given twice"));
}

TEST(EffectiveLogLevel, DebugAndKlogVerbosity) {
  EXPECT_EQ(EffectiveLogLevel("info", false, 0), "info");
  EXPECT_EQ(EffectiveLogLevel("warn", true, 0), "debug");
  EXPECT_EQ(EffectiveLogLevel("info", false, 4), "debug");
  EXPECT_EQ(EffectiveLogLevel("warn", false, 3), "warn");
  EXPECT_EQ(EffectiveLogLevel("debug", false, 1), "debug");
}

// Parses a serve command line the way main() does.
ServeOptions Parse(Args args, std::string* error = nullptr) {
  CLI::App app;
  auto* serve = app.add_subcommand("serve");
  ServeOptions so;
  AddServeFlags(*serve, so);
  args = NormalizeServeArgs(args);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    if (error != nullptr)
      *error = e.what();
    else
      ADD_FAILURE() << e.what();
  }
  return so;
}

TEST(AddServeFlags, HamiChartArgumentsParseWithTheirMeaning) {
  const ServeOptions so = Parse(
      {"tessera", "serve", "--http_bind=0.0.0.0:443", "--cert_file=/tls/tls.crt",
       "--key_file=/tls/tls.key", "--scheduler-name=hami-scheduler", "--metrics-bind-address=:9395",
       "--node-scheduler-policy=binpack", "--gpu-scheduler-policy=spread",
       "--force-overwrite-default-scheduler=true", "--device-config-file=/device-config.yaml",
       "--leader-elect=true", "--leader-elect-resource-name=hami-scheduler",
       "--leader-elect-resource-namespace=hami-system", "--debug", "-v=4"});
  EXPECT_EQ(so.http_bind, "0.0.0.0:443");
  EXPECT_EQ(so.tls_cert_file, "/tls/tls.crt");
  EXPECT_EQ(so.tls_key_file, "/tls/tls.key");
  EXPECT_EQ(so.scheduler_name, "hami-scheduler");
  EXPECT_EQ(so.metrics_bind_address, ":9395");
  EXPECT_TRUE(so.force_overwrite_default_scheduler);
  EXPECT_EQ(so.device_config, "/device-config.yaml");
  EXPECT_TRUE(so.leader_elect);
  EXPECT_TRUE(so.debug);
  EXPECT_EQ(so.verbosity, 4);
  auto le = ResolveLeaderElection(so);
  ASSERT_TRUE(le.ok());
  // HAMi's extender follows the kube-scheduler's Lease; it never campaigns.
  EXPECT_TRUE(le->follow);
  EXPECT_EQ(le->lease_name, "hami-scheduler");
  EXPECT_EQ(le->lease_namespace, "hami-system");
}

TEST(AddServeFlags, GoStyleBooleansAndTheOtherHamiFlags) {
  ServeOptions so =
      Parse({"tessera", "serve", "--leader-elect=false",
             "--force-overwrite-default-scheduler=false", "--profiling=true", "--legacy-metrics",
             "--debug=false", "--v", "2", "--node-label-selector=gpu=on,zone=a",
             "--node-label-selector", "x=y", "--kube-qps=5", "--kube-burst=10", "--kube-timeout=30",
             "--node-lock-timeout=2m", "--node-lock-retry-timeout=0", "--node-liveness-grace=0"});
  EXPECT_FALSE(so.leader_elect);
  EXPECT_FALSE(so.force_overwrite_default_scheduler);
  EXPECT_TRUE(so.profiling);
  EXPECT_TRUE(so.legacy_metrics);
  EXPECT_FALSE(so.debug);
  EXPECT_EQ(so.verbosity, 2);
  EXPECT_THAT(so.node_label_selector, ElementsAre("gpu=on,zone=a", "x=y"));
  EXPECT_DOUBLE_EQ(so.kube_qps, 5);
  EXPECT_EQ(so.kube_burst, 10);
  EXPECT_EQ(so.kube_timeout, "30");
  EXPECT_EQ(so.node_lock_timeout, "2m");
  EXPECT_EQ(so.node_lock_retry_timeout, "0");
  EXPECT_EQ(so.node_liveness_grace, "0");
  so = Parse({"tessera", "serve", "--leader-elect"});
  EXPECT_TRUE(so.leader_elect);
}

TEST(AddServeFlags, TesseraDefaultsAreUnchanged) {
  const ServeOptions so = Parse({"tessera", "serve"});
  EXPECT_EQ(so.http_bind, "127.0.0.1:8080");
  EXPECT_EQ(so.metrics_bind_address, "");
  EXPECT_EQ(so.log_level, "info");
  EXPECT_FALSE(so.leader_elect);
  EXPECT_DOUBLE_EQ(so.kube_qps, 0);
  EXPECT_EQ(so.node_liveness_grace, "60s");
  EXPECT_EQ(so.node_lock_timeout, "5m");
  auto le = ResolveLeaderElection(so);
  ASSERT_TRUE(le.ok());
  EXPECT_FALSE(le->follow);
  EXPECT_EQ(le->lease_namespace, "kube-system");
  EXPECT_EQ(le->lease_name, "tessera-scheduler");
}

TEST(ResolveLeaderElection, ExplicitModeWinsAndUnknownModesAreErrors) {
  ServeOptions so = Parse({"tessera", "serve", "--leader-elect-resource-name=hami-scheduler",
                           "--leader-elect-mode=campaign"});
  auto le = ResolveLeaderElection(so);
  ASSERT_TRUE(le.ok());
  EXPECT_FALSE(le->follow);
  EXPECT_EQ(le->lease_name, "hami-scheduler");
  so = Parse({"tessera", "serve", "--leader-elect-name=ks", "--leader-elect-mode=follow"});
  le = ResolveLeaderElection(so);
  ASSERT_TRUE(le.ok());
  EXPECT_TRUE(le->follow);
  EXPECT_EQ(le->lease_name, "ks");
  so.leader_elect_mode = "race";
  le = ResolveLeaderElection(so);
  ASSERT_FALSE(le.ok());
  EXPECT_EQ(le.error().message, "--leader-elect-mode: want campaign or follow, got race");
}

TEST(AddServeFlags, BadVerbosityIsRefused) {
  std::string error;
  (void)Parse({"tessera", "serve", "-v=x"}, &error);
  EXPECT_THAT(error, HasSubstr("--v"));
  error.clear();
  (void)Parse({"tessera", "serve", "--kube-qps=-1"}, &error);
  EXPECT_THAT(error, HasSubstr("--kube-qps"));
}

}  // namespace
}  // namespace tessera::app
