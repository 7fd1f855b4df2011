#include "agent/ledger_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "adapters/files/atomic_write.h"
#include "core/codec/json_util.h"

namespace tessera::agent {

using codec::Json;

Result<std::vector<node::LedgerEntry>> LedgerFile::Load() const {
  std::ifstream in(path_);
  if (!in) {
    if (errno == ENOENT) return std::vector<node::LedgerEntry>{};
    return Error{"MIG ledger " + path_ + ": " + std::strerror(errno)};
  }
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().empty()) return std::vector<node::LedgerEntry>{};
  const std::string what = "MIG ledger " + path_;
  auto parsed = codec::ParseJson(text.str(), what);
  if (!parsed.ok()) return parsed.error();
  const Json* list = codec::FindKey(parsed.value(), "instances");
  if (list == nullptr || !list->is_array()) return Error{what + ".instances: expected an array"};
  std::vector<node::LedgerEntry> out;
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& j = (*list)[i];
    const std::string where = what + ".instances[" + std::to_string(i) + "]";
    node::LedgerEntry e;
    for (auto [key, field] : {std::pair<const char*, std::string*>{"gpuUUID", &e.gpu_uuid},
                              {"profile", &e.profile},
                              {"pod", &e.pod},
                              {"podUID", &e.pod_uid},
                              {"migUUID", &e.mig_uuid}}) {
      if (auto s = codec::ReadString(j, key, where, field); !s) return Error{s.message()};
    }
    if (auto s = codec::ReadIntAs(j, "start", where, 0, 64, &e.placement.start); !s) {
      return Error{s.message()};
    }
    if (auto s = codec::ReadIntAs(j, "size", where, 1, 64, &e.placement.size); !s) {
      return Error{s.message()};
    }
    if (auto s = codec::ReadIntAs(j, "containerIndex", where, 0, 1 << 16, &e.container_index); !s) {
      return Error{s.message()};
    }
    if (auto s = codec::ReadIntAs(j, "deviceIndex", where, 0, 1 << 16, &e.device_index); !s) {
      return Error{s.message()};
    }
    if (auto s = codec::ReadIntAs(j, "gpuInstanceID", where, 0, 1 << 20, &e.gpu_instance_id); !s) {
      return Error{s.message()};
    }
    if (auto s = codec::ReadIntAs(j, "writtenMs", where, 0, 1LL << 62, &e.written_ms); !s) {
      return Error{s.message()};
    }
    if (auto s = codec::ReadBool(j, "created", where, &e.created); !s) return Error{s.message()};
    // Absent in ledgers written before lost records existed.
    if (auto s = codec::ReadBool(j, "lost", where, &e.lost); !s) return Error{s.message()};
    if (e.gpu_uuid.empty() || e.profile.empty()) {
      return Error{where + ": gpuUUID and profile are required"};
    }
    out.push_back(std::move(e));
  }
  return out;
}

Status LedgerFile::Save(const std::vector<node::LedgerEntry>& entries) const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& e : entries) {
    list.push_back({{"gpuUUID", e.gpu_uuid},
                    {"profile", e.profile},
                    {"start", e.placement.start},
                    {"size", e.placement.size},
                    {"pod", e.pod},
                    {"podUID", e.pod_uid},
                    {"containerIndex", e.container_index},
                    {"deviceIndex", e.device_index},
                    {"created", e.created},
                    {"gpuInstanceID", e.gpu_instance_id},
                    {"migUUID", e.mig_uuid},
                    {"writtenMs", e.written_ms},
                    {"lost", e.lost}});
  }
  nlohmann::ordered_json root;
  root["instances"] = list;
  const std::string text = root.dump(1) + "\n";
  if (auto s = files::WriteFileAtomically(path_, text, 0600); !s) {
    return Error{"MIG ledger " + s.message()};
  }
  return Status::Ok();
}

Status LedgerFile::CheckUsable() const {
  namespace fs = std::filesystem;
  const fs::path path(path_);
  if (path_.empty()) return Error{"no path given"};
  if (!path.is_absolute()) return Error{"not an absolute path"};
  if (!path.has_filename()) return Error{"names a folder, not a file"};
  const fs::path folder = path.parent_path();
  std::error_code ec;
  const fs::file_status folder_status = fs::status(folder, ec);
  if (!fs::exists(folder_status)) {
    return Error{"its folder " + folder.string() + " does not exist" +
                 (ec && ec != std::errc::no_such_file_or_directory ? " (" + ec.message() + ")"
                                                                   : std::string())};
  }
  if (!fs::is_directory(folder_status)) return Error{folder.string() + " is not a folder"};
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) return Error{"it is a folder, not a file"};
  if (fs::exists(status)) {
    if (!fs::is_regular_file(status)) return Error{"it is not a regular file"};
    const int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return Error{std::string("cannot be read and written: ") + std::strerror(errno)};
    ::close(fd);
  }
  // Save writes a temporary file beside the ledger, then renames it: the folder must take a new
  // file. A probe of its own name never touches a Save in progress.
  std::string probe = path_ + ".probe-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    return Error{"its folder " + folder.string() + " is not writable: " + std::strerror(errno)};
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::Ok();
}

}  // namespace tessera::agent
