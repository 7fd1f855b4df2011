#pragma once

namespace CLI {
class App;
}

namespace tessera::app {

// Adds `tessera demo` (the built-in scenarios, no files and no cluster) to `app`; it runs when
// parsed and ends the parse with its exit code.
void AddDemoCommand(CLI::App& app);

}  // namespace tessera::app
