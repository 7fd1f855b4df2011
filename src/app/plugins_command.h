#pragma once

namespace CLI {
class App;
}

namespace tessera::app {

// Adds `tessera plugins` (the scheduling cycle's plugins by phase and the built-in node
// policies; docs/placement.md) to `app`; it runs when parsed and ends the parse.
void AddPluginsCommand(CLI::App& app);

}  // namespace tessera::app
