#pragma once

#include <signal.h>

#include <chrono>
#include <string>

#include "core/common/result.h"
#include "core/config/scheduler_config.h"

// What more than one `tessera` command reads or does the same way, written once.
namespace tessera::app {

// HAMi's device-config.yaml (--device-config-file); the defaults when `path` is empty. Errors
// name the file.
Result<config::SchedulerConfig> LoadDeviceConfig(const std::string& path);

// A Go-style duration flag: "90s", "2m", "1m30s", "500ms", or a bare number of seconds. Malformed
// or negative is an error naming the flag and the value.
Result<std::chrono::milliseconds> DurationFlag(const std::string& flag, const std::string& text);

// Blocks SIGINT and SIGTERM in this thread and in every thread it starts afterwards, so that
// only a sigwait() on the returned set sees them and the command stops cleanly. Call it before
// the command starts any thread.
sigset_t BlockStopSignals();

// `tessera: <message>` on stderr, for the commands that print rather than log; returns 1, the
// exit code of a failed command.
int PrintFailure(const std::string& message);

// Ends a subcommand's callback, and with it CLI11's parse, with the command's exit code:
// CLI11_PARSE returns it from main (CLI::Success for 0, CLI::RuntimeError otherwise, neither of
// which prints anything).
[[noreturn]] void EndCommand(int exit_code);

}  // namespace tessera::app
