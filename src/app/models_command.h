#pragma once

namespace CLI {
class App;
}

namespace tessera::app {

// Adds `tessera models [--device-config FILE]` (the built-in GPU models, MIG profiles and
// placements; docs/mig.md) to `app`; it runs when parsed and ends the parse with its exit code.
void AddModelsCommand(CLI::App& app);

}  // namespace tessera::app
