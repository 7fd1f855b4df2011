#include "core/mig/catalog_text.h"

#include <sstream>

#include "core/mig/layout_table.h"

namespace tessera::mig {
namespace {

// The allowlist entry's profiles for a model: the first entry naming a part of the model's id
// or of one of its aliases (NVML's names among them), as the agent and the scheduler match the
// registered GPU type.
const std::vector<std::string>* AllowedFor(const GpuModelSpec& m,
                                           const config::NvidiaConfig& allowlist) {
  if (const auto* allowed = allowlist.AllowedProfiles(m.model)) return allowed;
  for (const auto& alias : m.aliases) {
    if (const auto* allowed = allowlist.AllowedProfiles(alias)) return allowed;
  }
  return nullptr;
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// `text` after `lead`, wrapped at 100 columns, the following lines indented by 4 more spaces.
void Paragraph(std::ostream& out, const std::string& lead, const std::string& text) {
  constexpr size_t kWidth = 100;
  const std::string indent(lead.find_first_not_of(' ') + 4, ' ');
  std::string line = lead;
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    const bool first = line.size() == lead.size();
    if (!first && line.size() + 1 + word.size() > kWidth) {
      out << line << "\n";
      line = indent + word;
    } else {
      line += (first ? "" : " ") + word;
    }
  }
  out << line << "\n";
}

// Why a model has no verified placements, and what that does and does not stop.
void ExplainUnverified(const GpuModelSpec& m, std::ostream& out) {
  std::vector<std::string> unplaced;
  for (const auto& p : m.profiles) {
    if (p.placements.empty()) unplaced.push_back(p.name);
  }
  std::string why =
      "the built-in table lists the profiles NVIDIA names for this model but no "
      "placements for " +
      (unplaced.size() == m.profiles.size() ? "any of them" : Join(unplaced)) +
      (m.memory_slices == 0 ? ", nor its memory slices" : "") +
      " (placements come from `nvidia-smi mig -lgipp` on the GPU; none is recorded "
      "for it)";
  for (const auto& f : m.estimated_fields) {
    if (f == "memoryMiB") why += "; its " + std::to_string(m.memory_mib) + " MiB are an estimate";
  }
  Paragraph(out, "  why: ", why + ".");
  Paragraph(out, "  so: ",
            "scenario GPUs of this model (`tessera simulate`, `serve --cluster`) run in hami-core "
            "or mps mode only (`mode: mig` is refused), and `replay --mig` has no fleet of it.");
  Paragraph(out, "  on a real node in MIG mode: ",
            "the agent registers the profiles and placements the driver reports, and tessera "
            "schedules them as any GPU's.");
  Paragraph(out, "  an allowlist entry for it ",
            "(the Helm chart has one) says which of the driver's profiles the agent registers, "
            "by name: the driver's profile of that name, else its base profile of that slice "
            "count (\"1g.*\" is the 1-slice profile, as in HAMi). It adds no placements. Where "
            "the allowlist has entries and none names the model, its GPUs register no profile "
            "and are left out in MIG mode.");
}

}  // namespace

std::string CatalogText(const GpuModelCatalog& catalog, const config::NvidiaConfig* allowlist) {
  std::ostringstream out;
  for (const auto& m : catalog.models()) {
    out << m.model
        << (m.complete ? "" : " (no verified placements: sharing mode only in scenarios)")
        << "\n  aliases: ";
    for (size_t i = 0; i < m.aliases.size(); ++i) out << (i ? ", " : "") << m.aliases[i];
    out << "\n  " << m.memory_mib << " MiB, ";
    if (m.memory_slices == 0) {
      out << "memory slices unknown, ";
    } else {
      out << m.memory_slices << " memory slices, ";
    }
    out << m.compute_slices << " compute slices";
    if (m.complete) {
      // The layout table tessera builds for this model (docs/placement.md).
      model::GpuDevice device;
      device.mig_profiles = m.profiles;
      GpuMigModel rules(device, nullptr);
      out << ", " << LayoutTable(rules).size() << " reachable MIG layouts";
    }
    out << "\n";
    if (!m.complete) ExplainUnverified(m, out);
    if (allowlist != nullptr) {
      const auto* allowed = AllowedFor(m, *allowlist);
      out << "  allowlist: "
          << (allowed != nullptr                         ? Join(*allowed)
              : allowlist->mig_profile_allowlist.empty() ? "(none: every profile)"
                                                         : "(no entry: no profile in MIG mode)")
          << "\n";
    }
    for (const auto& p : m.profiles) {
      out << "    " << p.name << ": " << p.memory_mib << " MiB, " << p.core
          << "% cores, placements";
      if (p.placements.empty()) out << " (none verified)";
      for (const auto& pl : p.placements) out << " " << pl.start << "+" << pl.size;
      out << "\n";
    }
  }
  return out.str();
}

}  // namespace tessera::mig
