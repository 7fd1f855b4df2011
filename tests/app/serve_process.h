#pragma once
// `tessera serve` as a child process, for tests that start the real program.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tessera::testing {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tessera-serve-process-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

inline std::string ReadAll(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `tessera serve ARGS` in the background, stdout and stderr into one log file.
class ServeProcess {
 public:
  ServeProcess(const std::vector<std::string>& args, fs::path log) : log_(std::move(log)) {
    std::vector<std::string> argv = {TESSERA_BINARY, "serve"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
      }
      std::vector<char*> cargs;
      for (auto& a : argv) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      execv(cargs[0], cargs.data());
      _exit(127);
    }
  }
  ~ServeProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  // The number that follows the first `before` in the log, waiting up to 15 s; "" if none.
  // (Plain text search: GCC's std::regex trips -Wmaybe-uninitialized under ASan.)
  std::string WaitForPort(const std::string& before) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string text = log();
      if (size_t at = text.find(before); at != std::string::npos) {
        size_t end = at + before.size();
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) != 0) ++end;
        if (end > at + before.size())
          return text.substr(at + before.size(), end - at - before.size());
      }
      if (Exited()) return "";
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "";
  }
  std::string log() const { return ReadAll(log_); }
  // SIGTERM, then the exit status (-1 if it did not exit normally within 15 s).
  int Stop() {
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (!Exited() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return exited_ && WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
  }

 private:
  bool Exited() {
    if (!exited_ && waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
    return exited_;
  }

  fs::path log_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool exited_ = false;
};

// Runs a shell command to the end; returns its exit code (-1 if it did not exit normally) and
// appends what it printed to `output`.
inline int RunCommand(const std::string& command, std::string* output) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output->append(buffer, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `tessera SUBCOMMAND ARGS`, stdout and stderr together.
inline int RunTessera(const std::string& subcommand, const std::string& args, std::string* output) {
  return RunCommand(std::string(TESSERA_BINARY) + " " + subcommand + " " + args + " 2>&1", output);
}

}  // namespace tessera::testing
