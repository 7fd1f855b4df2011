#include "sim/replay/trace.h"

#include "sim/replay/csv_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

namespace tessera::sim::replay {
namespace {

// Upper bounds that keep every later sum far from overflow; the trace is well below them.
constexpr int64_t kMaxResource = int64_t{1} << 40;
constexpr int kMaxGpusPerObject = 64;

Result<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open file"};
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error{path + ": read error"};
  return text.str();
}

// Parses a whole number; "12000" and pandas' "12000.0" are accepted, nothing else.
std::optional<int64_t> ParseWholeNumber(std::string_view text) {
  text = TrimBlanks(text);
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && ptr == text.data() + text.size()) return value;
  double real = 0;
  auto [rptr, rec] = std::from_chars(text.data(), text.data() + text.size(), real);
  if (rec != std::errc() || rptr != text.data() + text.size()) return std::nullopt;
  if (!std::isfinite(real) || std::floor(real) != real) return std::nullopt;
  if (std::fabs(real) > static_cast<double>(kMaxResource)) return std::nullopt;
  return static_cast<int64_t>(real);
}

// Reads the cells of one row, turning problems into errors that name file, line and column.
class RowReader {
 public:
  RowReader(std::string_view source, const CsvTable& table, int line,
            const std::vector<std::string>& fields)
      : source_(source), table_(table), line_(line), fields_(fields) {}

  std::string Where(size_t column) const {
    return std::string(source_) + ":" + std::to_string(line_) + ": column '" +
           table_.header[column] + "'";
  }

  std::string_view Text(size_t column) const { return TrimBlanks(fields_[column]); }

  Result<int64_t> Integer(size_t column, int64_t min, int64_t max) const {
    auto value = ParseWholeNumber(fields_[column]);
    if (!value) {
      return Error{Where(column) + ": expected a whole number, got '" + std::string(Text(column)) +
                   "'"};
    }
    if (*value < min || *value > max) {
      return Error{Where(column) + ": " + std::to_string(*value) + " is outside [" +
                   std::to_string(min) + ", " + std::to_string(max) + "]"};
    }
    return *value;
  }

 private:
  std::string_view source_;
  const CsvTable& table_;
  int line_;
  const std::vector<std::string>& fields_;
};

Result<size_t> RequireColumn(const CsvTable& table, std::string_view source,
                             std::initializer_list<std::string_view> names) {
  if (auto column = table.Column(names)) return *column;
  return Error{std::string(source) + ": header has no column '" + std::string(*names.begin()) +
               "'"};
}

std::vector<std::string> SplitModels(std::string_view spec) {
  std::vector<std::string> models;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t end = spec.find('|', pos);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view model = TrimBlanks(spec.substr(pos, end - pos));
    if (!model.empty()) models.emplace_back(model);  // "A||B" as the simulator: empties skipped
    pos = end + 1;
  }
  return models;
}

}  // namespace

PodKind KindOf(const TracePod& pod) {
  if (pod.num_gpu == 0) return PodKind::kCpuOnly;
  if (pod.num_gpu == 1) return pod.gpu_milli < kMilliPerGpu ? PodKind::kSharing : PodKind::kOneGpu;
  return PodKind::kMultiGpu;
}

std::string_view PodKindName(PodKind kind) {
  switch (kind) {
    case PodKind::kCpuOnly:
      return "cpu_only";
    case PodKind::kSharing:
      return "sharing";
    case PodKind::kOneGpu:
      return "one_gpu";
    case PodKind::kMultiGpu:
      return "multi_gpu";
  }
  return "unknown";
}

Result<std::vector<TraceNode>> ParseTraceNodes(std::string_view text, std::string_view source) {
  auto table = ParseCsv(text, source);
  if (!table.ok()) return table.error();
  auto name_col = RequireColumn(*table, source, {"sn", "name"});
  auto cpu_col = RequireColumn(*table, source, {"cpu_milli"});
  auto mem_col = RequireColumn(*table, source, {"memory_mib"});
  auto gpu_col = RequireColumn(*table, source, {"gpu", "num_gpu"});
  auto model_col = RequireColumn(*table, source, {"model", "gpu_model"});
  for (const auto* col : {&name_col, &cpu_col, &mem_col, &gpu_col, &model_col}) {
    if (!col->ok()) return col->error();
  }
  std::vector<TraceNode> nodes;
  nodes.reserve(table->rows.size());
  for (const auto& [line, fields] : table->rows) {
    RowReader row(source, *table, line, fields);
    TraceNode node;
    node.name = std::string(row.Text(*name_col));
    if (node.name.empty()) return Error{row.Where(*name_col) + ": empty node name"};
    auto cpu = row.Integer(*cpu_col, 0, kMaxResource);
    if (!cpu.ok()) return cpu.error();
    auto mem = row.Integer(*mem_col, 0, kMaxResource);
    if (!mem.ok()) return mem.error();
    auto gpus = row.Integer(*gpu_col, 0, kMaxGpusPerObject);
    if (!gpus.ok()) return gpus.error();
    node.cpu_milli = *cpu;
    node.memory_mib = *mem;
    node.gpus = static_cast<int>(*gpus);
    node.model = std::string(row.Text(*model_col));
    if (node.gpus > 0 && node.model.empty()) {
      return Error{row.Where(*model_col) + ": a node with GPUs needs a model"};
    }
    nodes.push_back(std::move(node));
  }
  return nodes;
}

Result<std::vector<TracePod>> ParseTracePods(std::string_view text, std::string_view source) {
  auto table = ParseCsv(text, source);
  if (!table.ok()) return table.error();
  auto name_col = RequireColumn(*table, source, {"name"});
  auto cpu_col = RequireColumn(*table, source, {"cpu_milli"});
  auto mem_col = RequireColumn(*table, source, {"memory_mib"});
  auto num_gpu_col = RequireColumn(*table, source, {"num_gpu"});
  auto milli_col = RequireColumn(*table, source, {"gpu_milli"});
  for (const auto* col : {&name_col, &cpu_col, &mem_col, &num_gpu_col, &milli_col}) {
    if (!col->ok()) return col->error();
  }
  std::optional<size_t> spec_col = table->Column({"gpu_spec"});
  std::vector<TracePod> pods;
  pods.reserve(table->rows.size());
  for (const auto& [line, fields] : table->rows) {
    RowReader row(source, *table, line, fields);
    TracePod pod;
    pod.name = std::string(row.Text(*name_col));
    if (pod.name.empty()) return Error{row.Where(*name_col) + ": empty pod name"};
    auto cpu = row.Integer(*cpu_col, 0, kMaxResource);
    if (!cpu.ok()) return cpu.error();
    auto mem = row.Integer(*mem_col, 0, kMaxResource);
    if (!mem.ok()) return mem.error();
    auto num_gpu = row.Integer(*num_gpu_col, 0, kMaxGpusPerObject);
    if (!num_gpu.ok()) return num_gpu.error();
    pod.cpu_milli = *cpu;
    pod.memory_mib = *mem;
    pod.num_gpu = static_cast<int>(*num_gpu);
    if (pod.num_gpu > 0) {
      auto milli = row.Integer(*milli_col, 1, kMilliPerGpu);
      if (!milli.ok()) return milli.error();
      pod.gpu_milli = *milli;
      if (pod.num_gpu > 1 && pod.gpu_milli < kMilliPerGpu) {
        return Error{row.Where(*milli_col) + ": a pod with " + std::to_string(pod.num_gpu) +
                     " GPUs must request whole GPUs (1000), got " + std::to_string(pod.gpu_milli)};
      }
      if (spec_col) pod.gpu_spec = SplitModels(row.Text(*spec_col));
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

Result<std::vector<TraceNode>> LoadTraceNodes(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.error();
  return ParseTraceNodes(*text, path);
}

Result<std::vector<TracePod>> LoadTracePods(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.error();
  return ParseTracePods(*text, path);
}

Result<std::vector<std::string>> ExpandPodLists(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_regular_file() && name.find("pod_list") != std::string::npos &&
          name.size() > 4 && name.compare(name.size() - 4, 4, ".csv") == 0) {
        found.push_back(entry.path().string());
      }
    }
    if (ec) return Error{"--pods " + path + ": " + ec.message()};
    if (found.empty()) return Error{"--pods " + path + ": no *pod_list*.csv in this folder"};
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  if (out.empty()) return Error{"--pods: no pod list given"};
  return out;
}

}  // namespace tessera::sim::replay
