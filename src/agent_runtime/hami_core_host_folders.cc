#include "agent_runtime/hami_core_host_folders.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tessera::agent_runtime {

namespace fs = std::filesystem;

namespace {

// Makes `path` (and its parents) when missing and opens it to everyone. An existing folder that
// is already 0777 is left as it is: it may belong to another user (a shared /tmp/vgpulock).
Status MakeOpenFolder(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return Error{path + ": " + ec.message()};
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error{path + ": " + std::strerror(errno)};
  if (!S_ISDIR(st.st_mode)) return Error{path + ": not a folder"};
  if ((st.st_mode & 07777) == 0777) return Status::Ok();
  if (::chmod(path.c_str(), 0777) != 0) {
    return Error{path + ": making it writable for every user failed: " + std::strerror(errno)};
  }
  return Status::Ok();
}

// A folder name of ours: one path component, no "." or "..".
bool PlainName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

}  // namespace

HamiCoreHostFolders::HamiCoreHostFolders(const std::string& hook_path, std::string lock_dir)
    : containers_dir_(hook_path + "/vgpu/containers"), lock_dir_(std::move(lock_dir)) {}

Status HamiCoreHostFolders::Prepare(const std::string& pod_uid, const std::string& container) {
  const std::string name = node::ContainerFolderName(pod_uid, container);
  if (!PlainName(name) || !node::FolderPodUid(name)) {
    return Error{"pod uid \"" + pod_uid + "\" and container \"" + container +
                 "\" make no folder name"};
  }
  if (auto s = MakeOpenFolder(containers_dir_ + "/" + name); !s) return s;
  return MakeOpenFolder(lock_dir_);
}

Result<std::vector<node::ContainerFolder>> HamiCoreHostFolders::List() {
  std::vector<node::ContainerFolder> out;
  std::error_code ec;
  if (!fs::exists(containers_dir_, ec)) return out;
  fs::directory_iterator it(containers_dir_, ec);
  if (ec) return Error{containers_dir_ + ": " + ec.message()};
  for (const auto& entry : it) {
    struct stat st {};
    const std::string path = entry.path().string();
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    const int64_t modified_ms =
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
    out.push_back({entry.path().filename().string(), modified_ms});
  }
  return out;
}

Status HamiCoreHostFolders::Remove(const std::string& name) {
  if (!PlainName(name)) return Error{"\"" + name + "\" is not a folder name"};
  const std::string path = containers_dir_ + "/" + name;
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return Error{path + ": " + ec.message()};
  return Status::Ok();
}

}  // namespace tessera::agent_runtime
