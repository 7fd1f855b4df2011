#pragma once

#include <string>

#include "core/common/result.h"

namespace tessera::files {

// Replaces `path` with `text` so that a crash at any moment leaves the old content or the new,
// never a mix: a temporary file beside it, fsync, rename. Errors name the file.
Status WriteFileAtomically(const std::string& path, const std::string& text, unsigned mode = 0644);

}  // namespace tessera::files
