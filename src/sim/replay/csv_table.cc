#include "sim/replay/csv_table.h"

namespace tessera::sim::replay {

Result<std::vector<std::string>> SplitCsvLine(std::string_view line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  bool field_was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
    } else if (c == '"' && field.empty() && !field_was_quoted) {
      quoted = true;
      field_was_quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
      field_was_quoted = false;
    } else {
      field += c;
    }
  }
  if (quoted) return Error{"unterminated quoted field"};
  fields.push_back(std::move(field));
  return fields;
}

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<size_t> CsvTable::Column(std::initializer_list<std::string_view> names) const {
  for (std::string_view name : names) {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return i;
    }
  }
  return std::nullopt;
}

Result<CsvTable> ParseCsv(std::string_view text, std::string_view source) {
  CsvTable table;
  bool have_header = false;
  int line_number = 0;
  size_t pos = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") pos = 3;  // UTF-8 byte order mark
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (TrimBlanks(line).empty()) continue;
    auto fields = SplitCsvLine(line);
    if (!fields.ok()) {
      return Error{std::string(source) + ":" + std::to_string(line_number) + ": " +
                   fields.error().message};
    }
    if (!have_header) {
      for (auto& name : fields.value()) table.header.emplace_back(TrimBlanks(name));
      have_header = true;
      continue;
    }
    if (fields->size() != table.header.size()) {
      return Error{std::string(source) + ":" + std::to_string(line_number) + ": expected " +
                   std::to_string(table.header.size()) + " fields (as in the header), got " +
                   std::to_string(fields->size())};
    }
    table.rows.emplace_back(line_number, std::move(fields.value()));
  }
  if (!have_header) return Error{std::string(source) + ": empty file, expected a CSV header"};
  return table;
}

}  // namespace tessera::sim::replay
