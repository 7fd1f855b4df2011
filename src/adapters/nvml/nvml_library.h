#pragma once

#include <memory>
#include <string>

#include "adapters/nvml/nvml_api.h"
#include "core/common/result.h"

namespace tessera::nvml {

// libnvidia-ml.so.1 (or the simulated library) opened with dlopen, every function of
// TESSERA_NVML_FUNCTIONS resolved by its exact, versioned symbol name. Opening fails, naming
// the library and the symbol, if any of them is missing; TESSERA_NVML_OPTIONAL_FUNCTIONS stay
// nullptr when missing.
class NvmlLibrary {
 public:
  static Result<std::unique_ptr<NvmlLibrary>> Open(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

#define TESSERA_NVML_POINTER(name, ret, params) \
  ret(*name) params = nullptr;  // NOLINT(bugprone-macro-parentheses)
  TESSERA_NVML_FUNCTIONS(TESSERA_NVML_POINTER)
  TESSERA_NVML_OPTIONAL_FUNCTIONS(TESSERA_NVML_POINTER)  // nullptr when the library lacks one
#undef TESSERA_NVML_POINTER

  const std::string& path() const { return path_; }

 private:
  NvmlLibrary() = default;
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace tessera::nvml
