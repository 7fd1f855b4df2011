#pragma once

#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace tessera::app {

struct MigrateValuesOptions {
  std::string hami_values;  // HAMi's chart values file
  std::string out;          // tessera's chart values file to write; "" = stdout
};

// `tessera migrate-values HAMI_VALUES.yaml [--out FILE]`: tessera's chart values on `out` (or
// the file), and every HAMi key that could not be carried over, with why, on `err`. 0 when the
// file was converted, unmapped keys or not; 1 when it cannot be read, is not YAML, or the output
// cannot be written, with a message naming the file.
int RunMigrateValuesCommand(const MigrateValuesOptions& options, std::ostream& out,
                            std::ostream& err);

// Adds the `migrate-values` subcommand to `app`. It runs when parsed, inside app.parse(), and
// ends the parse with its exit code (EndCommand), which CLI11_PARSE returns from main.
void AddMigrateValuesCommand(CLI::App& app);

}  // namespace tessera::app
