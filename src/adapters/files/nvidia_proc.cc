#include "adapters/files/nvidia_proc.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::files {

namespace fs = std::filesystem;

namespace {

bool ReadAll(const fs::path& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return !in.bad();
}

}  // namespace

NvidiaProcMinors ReadNvidiaDeviceMinors(const std::string& proc_driver_root) {
  NvidiaProcMinors out;
  const fs::path root(proc_driver_root);
  std::string text;
  const fs::path mig_minors = root / "nvidia-caps" / "mig-minors";
  if (ReadAll(mig_minors, &text)) {
    out.minors.mig_cap_minor = node::ParseMigMinors(text);
  } else {
    out.problems.push_back(mig_minors.string() + " cannot be read");
  }
  const fs::path gpus = root / "nvidia" / "gpus";
  std::error_code ec;
  fs::directory_iterator it(gpus, ec);
  if (ec) {
    out.problems.push_back(gpus.string() + ": " + ec.message());
    return out;
  }
  for (const auto& entry : it) {
    const fs::path info = entry.path() / "information";
    if (!ReadAll(info, &text)) {
      out.problems.push_back(info.string() + " cannot be read");
      continue;
    }
    if (const auto gpu = node::ParseGpuInformation(text)) {
      out.minors.gpu_minor[gpu->gpu_uuid] = gpu->minor;
    } else {
      out.problems.push_back(info.string() + " names no GPU UUID and device minor");
    }
  }
  return out;
}

}  // namespace tessera::files
