#pragma once

#include <map>
#include <string>
#include <vector>

#include "app/serve_command.h"
#include "core/common/result.h"

namespace CLI {
class App;
}

namespace tessera::app {

// Rewrites klog's single-dash verbosity in the `serve` subcommand's arguments into the long
// option CLI11 knows: `-v=N`, `-v N` and `-vN` become `--v=N` (HAMi's chart passes `-v=4`).
// Only arguments after a leading `serve` subcommand are touched, and none after `--`; everything
// else (other subcommands, `--v=N`, `--version`-like long options) is returned unchanged.
// args[0] is the program name.
std::vector<std::string> NormalizeServeArgs(const std::vector<std::string>& args);

// --node-label-selector: each value is `key=value[,key=value...]` (HAMi's pflag
// StringToString: the value may be empty and may contain `=`; the flag may be repeated).
// An item without `=`, an empty key, an empty item or a key given twice with different values
// is an error naming the flag and the item.
Result<std::map<std::string, std::string>> ParseNodeSelector(
    const std::vector<std::string>& values);

// The log level `serve` runs at: --debug, or klog's -v of 4 or more, mean debug; otherwise
// --log-level.
std::string EffectiveLogLevel(const std::string& log_level, bool debug, int verbosity);

// Leader election as the flags ask for it (only meaningful with --leader-elect).
struct LeaderElectionFlags {
  bool follow = false;  // follow the kube-scheduler's Lease; false: campaign for our own
  std::string lease_namespace;
  std::string lease_name;
};
// HAMi's --leader-elect-resource-name/-namespace name the kube-scheduler's Lease, which HAMi's
// extender follows and never campaigns for; so without --leader-elect-mode they mean follow.
// tessera's --leader-elect-name/-namespace keep campaign as the default. An unknown mode is an
// error.
Result<LeaderElectionFlags> ResolveLeaderElection(const ServeOptions& options);

// Declares every `tessera serve` flag on `serve`, bound to `options` (docs/serve.md's table).
void AddServeFlags(CLI::App& serve, ServeOptions& options);

}  // namespace tessera::app
