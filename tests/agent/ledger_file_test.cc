// The ledger's start-up and readiness check (issue 38 D): what would make every MIG Allocate
// fail is found before the first one, and named.

#include "agent/ledger_file.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tessera {
namespace {

namespace fs = std::filesystem;
using agent::LedgerFile;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "tessera-ledger-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string Problem(const std::string& path) {
  const Status s = LedgerFile(path).CheckUsable();
  return s.ok() ? "" : s.message();
}

TEST(LedgerFileTest, AWritableAbsolutePathIsUsableAndTheCheckLeavesNothingBehind) {
  TempDir dir;
  const std::string path = (dir.path() / "mig-ledger.json").string();
  EXPECT_EQ(Problem(path), "");  // not there yet: made by the first Save
  ASSERT_TRUE(LedgerFile(path).Save({}).ok());
  EXPECT_EQ(Problem(path), "");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator{}), 1);
}

TEST(LedgerFileTest, WhatWouldFailEverySaveIsNamed) {
  TempDir dir;
  EXPECT_NE(Problem("mig-ledger.json").find("not an absolute path"), std::string::npos);
  EXPECT_NE(Problem("").find("no path"), std::string::npos);
  EXPECT_NE(Problem((dir.path() / "missing" / "mig-ledger.json").string()).find("does not exist"),
            std::string::npos);
  fs::create_directories(dir.path() / "folder");
  EXPECT_NE(Problem((dir.path() / "folder").string()).find("is a folder"), std::string::npos);
  EXPECT_NE(Problem((dir.path() / "folder").string() + "/").find("folder"), std::string::npos);
  std::ofstream(dir.path() / "file") << "x";
  EXPECT_NE(Problem((dir.path() / "file" / "mig-ledger.json").string()).find("is not a folder"),
            std::string::npos);
  // Root may write anywhere but on a read-only or virtual file system.
  EXPECT_NE(Problem("/proc/mig-ledger.json").find("is not writable"), std::string::npos);
}

}  // namespace
}  // namespace tessera
