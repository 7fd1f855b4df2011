#include "adapters/nvml/nvml_library.h"

#include <dlfcn.h>

namespace tessera::nvml {

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Open(const std::string& path) {
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->path_ = path;
  // RTLD_LOCAL: the simulated library's own copy of the core must not interpose on ours.
  lib->handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib->handle_ == nullptr) {
    const char* why = ::dlerror();
    return Error{"NVML library " + path + ": " + (why != nullptr ? why : "cannot be loaded")};
  }
#define TESSERA_NVML_RESOLVE(name, ret, params)                                            \
  lib->name = reinterpret_cast<ret(*) params>(/* NOLINT(bugprone-macro-parentheses) */     \
                                              ::dlsym(lib->handle_, #name));               \
  if (lib->name == nullptr) {                                                              \
    return Error{"NVML library " + path + ": missing symbol " #name " (driver too old?)"}; \
  }
  TESSERA_NVML_FUNCTIONS(TESSERA_NVML_RESOLVE)
#undef TESSERA_NVML_RESOLVE
#define TESSERA_NVML_RESOLVE_OPTIONAL(name, ret, params)                               \
  lib->name = reinterpret_cast<ret(*) params>(/* NOLINT(bugprone-macro-parentheses) */ \
                                              ::dlsym(lib->handle_, #name));
  TESSERA_NVML_OPTIONAL_FUNCTIONS(TESSERA_NVML_RESOLVE_OPTIONAL)
#undef TESSERA_NVML_RESOLVE_OPTIONAL
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  // The library stays loaded: NVML keeps threads and handles that outlive dlclose.
}

}  // namespace tessera::nvml
