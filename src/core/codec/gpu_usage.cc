#include "core/codec/gpu_usage.h"

#include <charconv>

namespace tessera::codec {

namespace {

constexpr uint64_t kMaxUsedMib = uint64_t{1} << 40;
constexpr int64_t kMaxTime = int64_t{1} << 40;

void AppendValue(std::string* out, const UsageValue& v) {
  *out += v.utilization_percent ? std::to_string(*v.utilization_percent) : "-";
  out->push_back(',');
  *out += v.memory_used_mib ? std::to_string(*v.memory_used_mib) : "-";
}

bool ValidUuid(std::string_view uuid) {
  if (uuid.empty() || uuid.size() > kMaxUsageUuidLength) return false;
  for (char c : uuid) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

template <class T>
bool ParseNumber(std::string_view text, T max, T* out) {
  if (text.empty() || text.size() > 20) return false;
  T v{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0 || v > max) return false;
  *out = v;
  return true;
}

template <class T>
bool ParseOptional(std::string_view text, T max, std::optional<T>* out) {
  if (text == "-") {
    out->reset();
    return true;
  }
  T v{};
  if (!ParseNumber(text, max, &v)) return false;
  *out = v;
  return true;
}

// "<util>,<used>"
bool ParseValue(std::string_view text, UsageValue* out) {
  const size_t comma = text.find(',');
  if (comma == std::string_view::npos) return false;
  return ParseOptional<uint32_t>(text.substr(0, comma), 100, &out->utilization_percent) &&
         ParseOptional<uint64_t>(text.substr(comma + 1), kMaxUsedMib, &out->memory_used_mib);
}

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t from = 0;
  for (;;) {
    const size_t at = text.find(sep, from);
    parts.push_back(text.substr(from, at == std::string_view::npos ? at : at - from));
    if (at == std::string_view::npos) return parts;
    from = at + 1;
  }
}

Error Malformed(const std::string& why) {
  return Error{"tessera.io/gpu-usage: " + why, ErrorCode::kInvalidInput};
}

}  // namespace

std::string EncodeGpuUsage(const NodeGpuUsage& usage) {
  std::string out = std::to_string(usage.time_s);
  for (const auto& g : usage.gpus) {
    out.push_back(';');
    out += g.uuid;
    out.push_back('=');
    AppendValue(&out, g.usage);
    for (const auto& m : g.mig) {
      out.push_back('|');
      out += std::to_string(m.start);
      out.push_back(':');
      AppendValue(&out, m.usage);
    }
  }
  return out;
}

Result<NodeGpuUsage> DecodeGpuUsage(std::string_view text) {
  if (text.size() > kMaxGpuUsageAnnotationBytes) {
    return Malformed("longer than " + std::to_string(kMaxGpuUsageAnnotationBytes) + " bytes");
  }
  const std::vector<std::string_view> parts = Split(text, ';');
  if (parts.size() - 1 > kMaxUsageGpus) {
    return Malformed("more than " + std::to_string(kMaxUsageGpus) + " GPUs");
  }
  NodeGpuUsage out;
  if (!ParseNumber<int64_t>(parts[0], kMaxTime, &out.time_s)) {
    return Malformed("\"" + std::string(parts[0].substr(0, 32)) + "\" is not a time in seconds");
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string where = "GPU " + std::to_string(i);
    const std::vector<std::string_view> pieces = Split(parts[i], '|');
    const size_t eq = pieces[0].find('=');
    if (eq == std::string_view::npos) return Malformed(where + ": expected UUID=UTIL,USED");
    GpuUsage g;
    g.uuid = std::string(pieces[0].substr(0, eq));
    if (!ValidUuid(g.uuid)) return Malformed(where + ": not a GPU UUID");
    if (!ParseValue(pieces[0].substr(eq + 1), &g.usage)) {
      return Malformed(where + " (" + g.uuid + "): expected UTIL,USED (numbers or -)");
    }
    if (pieces.size() - 1 > kMaxUsageMigInstances) {
      return Malformed(where + " (" + g.uuid + "): too many MIG instances");
    }
    for (size_t k = 1; k < pieces.size(); ++k) {
      const size_t colon = pieces[k].find(':');
      MigInstanceUsage m;
      if (colon == std::string_view::npos ||
          !ParseNumber<uint32_t>(pieces[k].substr(0, colon), 64, &m.start) ||
          !ParseValue(pieces[k].substr(colon + 1), &m.usage)) {
        return Malformed(where + " (" + g.uuid + "): MIG instance " + std::to_string(k) +
                         ": expected START:UTIL,USED");
      }
      g.mig.push_back(m);
    }
    out.gpus.push_back(std::move(g));
  }
  return out;
}

bool SameMeasurements(const NodeGpuUsage& a, const NodeGpuUsage& b) { return a.gpus == b.gpus; }

}  // namespace tessera::codec
