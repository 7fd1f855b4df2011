#include "core/mig/catalog.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/codec/json_util.h"
#include "core/common/strings.h"

namespace tessera::mig {

extern const char* BuiltinMigProfilesJson();

namespace {

using codec::Json;

std::string Normalize(std::string_view name) {
  std::string out;
  for (char c : ToUpper(name)) {
    if (c == '-' || c == '_' || c == ' ') continue;
    out += c;
  }
  if (StartsWith(out, "NVIDIA")) out = out.substr(6);
  return out;
}

// "3g.90gb" -> 90
int NominalGb(const std::string& name) {
  size_t dot = name.find('.');
  if (dot == std::string::npos) return 0;
  int v = 0;
  for (size_t i = dot + 1; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]));
       ++i) {
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

int32_t RoundDown64(double mib) { return static_cast<int32_t>(std::floor(mib / 64.0)) * 64; }

}  // namespace

Result<GpuModelCatalog> GpuModelCatalog::Builtin() { return Parse(BuiltinMigProfilesJson()); }

Result<GpuModelCatalog> GpuModelCatalog::Parse(std::string_view json_text) {
  auto parsed = codec::ParseJson(json_text, "MIG model table");
  if (!parsed.ok()) return parsed.error();
  const Json& root = parsed.value();
  if (!root.is_array()) return Error{"MIG model table: expected an array of models"};
  GpuModelCatalog catalog;
  for (size_t m = 0; m < root.size(); ++m) {
    const Json& mj = root[m];
    std::string where = "MIG model table[" + std::to_string(m) + "]";
    GpuModelSpec spec;
    if (auto s = codec::ReadString(mj, "model", where, &spec.model); !s) return Error{s.message()};
    if (const Json* a = codec::FindKey(mj, "aliases"); a && a->is_array()) {
      for (const auto& alias : *a) {
        if (alias.is_string()) spec.aliases.push_back(alias.get<std::string>());
      }
    }
    if (auto s = codec::ReadIntAs(mj, "memoryMiB", where, 0, 1 << 30, &spec.memory_mib); !s) {
      return Error{s.message()};
    }
    if (auto s = codec::ReadIntAs(mj, "memorySlices", where, 0, 32, &spec.memory_slices); !s) {
      return Error{s.message()};
    }
    if (auto s = codec::ReadIntAs(mj, "computeSlices", where, 0, 32, &spec.compute_slices); !s) {
      return Error{s.message()};
    }
    const Json* profiles = codec::FindKey(mj, "profiles");
    if (profiles == nullptr || !profiles->is_array()) return Error{where + ".profiles: missing"};
    std::vector<int> sm(profiles->size(), 0);
    spec.complete = !profiles->empty();
    for (size_t i = 0; i < profiles->size(); ++i) {
      const Json& pj = (*profiles)[i];
      std::string pw = where + ".profiles[" + std::to_string(i) + "]";
      model::MigProfile p;
      if (auto s = codec::ReadString(pj, "name", pw, &p.name); !s) return Error{s.message()};
      if (auto s = codec::ReadIntAs(pj, "memoryMiB", pw, 0, 1 << 30, &p.memory_mib); !s) {
        return Error{s.message()};
      }
      if (auto s = codec::ReadIntAs(pj, "sliceCount", pw, 0, 32, &p.slice_count); !s) {
        return Error{s.message()};
      }
      if (auto s = codec::ReadIntAs(pj, "maxCount", pw, 0, 64, &p.max_count); !s) {
        return Error{s.message()};
      }
      if (auto s = codec::ReadIntAs(pj, "smCount", pw, 0, 100000, &sm[i]); !s) {
        return Error{s.message()};
      }
      ProfileHardware hw;
      hw.sm_count = sm[i];
      for (auto [key, field] : {std::pair<const char*, int32_t*>{"nvmlProfileId", &hw.nvml_id},
                                {"nvmlProfileEnumValue", &hw.nvml_enum}}) {
        if (auto s = codec::ReadIntAs(pj, key, pw, 0, 4096, field); !s) return Error{s.message()};
      }
      if (const Json* engines = codec::FindKey(pj, "engines"); engines && engines->is_object()) {
        const std::string ew = pw + ".engines";
        for (auto [key, field] : {std::pair<const char*, int32_t*>{"copy", &hw.copy_engines},
                                  {"nvdec", &hw.decoders},
                                  {"nvenc", &hw.encoders},
                                  {"nvjpg", &hw.jpeg},
                                  {"ofa", &hw.ofa}}) {
          if (auto s = codec::ReadIntAs(*engines, key, ew, 0, 64, field); !s) {
            return Error{s.message()};
          }
        }
      }
      spec.hardware.push_back(hw);
      if (const Json* pls = codec::FindKey(pj, "placements"); pls && pls->is_array()) {
        for (const auto& pl : *pls) {
          model::Placement placement;
          if (auto s = codec::ReadIntAs(pl, "start", pw, 0, 31, &placement.start); !s) {
            return Error{s.message()};
          }
          if (auto s = codec::ReadIntAs(pl, "size", pw, 1, 32, &placement.size); !s) {
            return Error{s.message()};
          }
          p.placements.push_back(placement);
        }
      }
      if (p.placements.empty()) spec.complete = false;
      spec.profiles.push_back(std::move(p));
    }
    // Memory of profiles the table lacks: the model's smallest known MiB per placement unit
    // times the profile's size, or, with nothing known, 15/16 of the nominal GB in the name.
    double mib_per_unit = 0;
    for (const auto& p : spec.profiles) {
      if (p.memory_mib > 0 && !p.placements.empty()) {
        double v = static_cast<double>(p.memory_mib) / p.placements.front().size;
        mib_per_unit = mib_per_unit == 0 ? v : std::min(mib_per_unit, v);
      }
    }
    for (auto& p : spec.profiles) {
      if (p.memory_mib > 0) continue;
      if (mib_per_unit > 0 && !p.placements.empty()) {
        p.memory_mib = RoundDown64(mib_per_unit * p.placements.front().size);
      } else {
        p.memory_mib = RoundDown64(NominalGb(p.name) * 1024.0 * 15.0 / 16.0);
      }
      spec.estimated_fields.push_back(p.name + ".memoryMiB");
    }
    // Core share as HAMi's agent computes it: ceil(SMs * 100 / the largest profile's SMs);
    // by compute slices when the full profile's SM count is unknown.
    int max_sm = 0;
    uint32_t max_slices = 0;
    for (size_t i = 0; i < spec.profiles.size(); ++i) {
      max_slices = std::max(max_slices, spec.profiles[i].slice_count);
    }
    for (size_t i = 0; i < spec.profiles.size(); ++i) {
      if (spec.profiles[i].slice_count == max_slices) max_sm = std::max(max_sm, sm[i]);
    }
    for (size_t i = 0; i < spec.profiles.size(); ++i) {
      auto& p = spec.profiles[i];
      if (max_sm > 0 && sm[i] > 0) {
        p.core = static_cast<int32_t>((sm[i] * 100 + max_sm - 1) / max_sm);
      } else if (max_slices > 0) {
        p.core = static_cast<int32_t>((p.slice_count * 100 + max_slices - 1) / max_slices);
        spec.estimated_fields.push_back(p.name + ".core");
      }
    }
    if (spec.memory_mib == 0) {
      for (const auto& p : spec.profiles) spec.memory_mib = std::max(spec.memory_mib, p.memory_mib);
      spec.estimated_fields.push_back("memoryMiB");
    }
    if (spec.compute_slices == 0) spec.compute_slices = max_slices;
    catalog.models_.push_back(std::move(spec));
  }
  return catalog;
}

const GpuModelSpec* GpuModelCatalog::Find(std::string_view name) const {
  std::string wanted = Normalize(name);
  if (wanted.empty()) return nullptr;
  for (const auto& m : models_) {
    if (Normalize(m.model) == wanted) return &m;
    for (const auto& a : m.aliases) {
      if (Normalize(a) == wanted) return &m;
    }
  }
  return nullptr;
}

}  // namespace tessera::mig
