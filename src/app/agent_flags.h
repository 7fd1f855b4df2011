#pragma once

#include <string>

#include "app/agent_command.h"

namespace CLI {
class App;
}

namespace tessera::app {

// HAMi's HOOK_PATH default (HAMi's chart: global.gpuHookPath). HAMi-core lives in its vgpu
// folder: <HOOK_PATH>/vgpu/libvgpu.so, ld.so.preload, containers/.
inline constexpr const char* kDefaultHookPath = "/usr/local";

// The folder above HAMi-core's vgpu folder: --hook-path, else the HOOK_PATH environment
// variable (`hook_path_env`, null when unset), else kDefaultHookPath.
std::string ResolveHookPath(const std::string& hook_path_flag, const char* hook_path_env);

// Declares every `tessera agent` flag on `agent`, bound to `options` (docs/agent.md).
void AddAgentFlags(CLI::App& agent, AgentCommandOptions& options);

}  // namespace tessera::app
