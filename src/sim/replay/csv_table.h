#pragma once

// The CSV reading of the replays' input and output files: a header naming the columns, then
// one record per line.

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/result.h"

namespace tessera::sim::replay {

// Splits one CSV record. Quoted fields may contain commas and doubled quotes; they may not span
// lines (the trace never needs that).
Result<std::vector<std::string>> SplitCsvLine(std::string_view line);

// Without leading and trailing spaces and tabs.
std::string_view TrimBlanks(std::string_view s);

// A parsed CSV file: the header's column positions and the data rows with their line numbers.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::pair<int, std::vector<std::string>>> rows;  // (1-based line, fields)

  // The first of `names` the header has.
  std::optional<size_t> Column(std::initializer_list<std::string_view> names) const;
};

// Blank lines are skipped, a UTF-8 byte order mark and CR line ends accepted; every row must
// have the header's number of fields. Errors name `source` and the line.
Result<CsvTable> ParseCsv(std::string_view text, std::string_view source);

}  // namespace tessera::sim::replay
