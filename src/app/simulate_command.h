#pragma once

namespace CLI {
class App;
}

namespace tessera::app {

// Adds `tessera simulate SCENARIO [--output text|json] [--final-only]` (docs/simulator.md) to
// `app`; it runs when parsed and ends the parse with its exit code.
void AddSimulateCommand(CLI::App& app);

}  // namespace tessera::app
