#include "adapters/files/atomic_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tessera::files {

Status WriteFileAtomically(const std::string& path, const std::string& text, unsigned mode) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Error{tmp + ": " + std::strerror(errno)};
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Error{tmp + ": write failed: " + why};
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return Error{tmp + ": fsync failed: " + why};
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Error{path + ": rename failed: " + std::strerror(errno)};
  }
  return Status::Ok();
}

}  // namespace tessera::files
