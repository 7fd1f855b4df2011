#include "app/migrate_values_command.h"

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <memory>
#include <ostream>

#include "adapters/yaml/hami_values_migration.h"
#include "adapters/yaml/yaml_json.h"
#include "app/command_support.h"

namespace tessera::app {

int RunMigrateValuesCommand(const MigrateValuesOptions& options, std::ostream& out,
                            std::ostream& err) {
  const auto fail = [&err](const std::string& message) {
    err << "tessera migrate-values: " << message << "\n";
    return 1;
  };
  auto text = adapters::ReadFile(options.hami_values);
  if (!text.ok()) return fail(text.error().message);
  auto migration = adapters::MigrateHamiValues(text.value(), options.hami_values);
  if (!migration.ok()) return fail(migration.error().message);

  const std::string yaml =
      "# tessera chart values (deploy/helm/tessera), carried over by `tessera migrate-values`\n"
      "# from HAMi's " +
      options.hami_values +
      "\n# Keys not set here keep tessera's defaults; docs/migrating-from-hami.md has the "
      "mapping.\n" +
      adapters::ValuesYaml(migration->values);
  if (options.out.empty()) {
    out << yaml << std::flush;
    if (!out) return fail("cannot write the values to stdout");
  } else {
    std::ofstream file(options.out, std::ios::binary | std::ios::trunc);
    file << yaml;
    file.close();
    if (!file) return fail(options.out + ": cannot write the values");
  }

  const auto& unmapped = migration->unmapped;
  if (!unmapped.empty()) {
    err << "tessera migrate-values: " << unmapped.size() << " HAMi key"
        << (unmapped.size() == 1 ? "" : "s") << " of " << options.hami_values
        << " not carried over:\n";
    for (const auto& key : unmapped) err << key.path << ": " << key.reason << "\n";
  }
  return 0;
}

void AddMigrateValuesCommand(CLI::App& app) {
  auto* command = app.add_subcommand(
      "migrate-values",
      "Turn a HAMi chart values file into tessera's chart values; keys that cannot be carried "
      "over are listed on stderr (docs/migrating-from-hami.md)");
  auto options = std::make_shared<MigrateValuesOptions>();
  command->add_option("hami_values", options->hami_values, "HAMi's values file (YAML)")->required();
  command->add_option("--out,-o", options->out, "Write tessera's values here instead of stdout");
  command->callback(
      [options] { EndCommand(RunMigrateValuesCommand(*options, std::cout, std::cerr)); });
}

}  // namespace tessera::app
