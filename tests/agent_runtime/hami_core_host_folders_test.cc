// HAMi-core's folders on a real file system (a temporary folder as the hook path and the lock
// folder): made 0777 when missing, listed with their age, removed with their content.

#include "agent_runtime/hami_core_host_folders.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tessera {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  TempDir() {
    path = fs::temp_directory_path() / ("tessera-hami-folders-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

unsigned Mode(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

TEST(HamiCoreHostFoldersTest, PrepareMakesTheContainerAndLockFoldersOpenToAll) {
  TempDir tmp;
  const mode_t old_umask = ::umask(022);  // as a process normally runs
  agent_runtime::HamiCoreHostFolders folders(tmp.path / "hook", (tmp.path / "vgpulock").string());
  ASSERT_TRUE(folders.Prepare("uid-1", "main").ok());
  ::umask(old_umask);
  const fs::path made = tmp.path / "hook/vgpu/containers/uid-1_main";
  EXPECT_TRUE(fs::is_directory(made));
  EXPECT_EQ(Mode(made), 0777U);
  EXPECT_EQ(Mode(tmp.path / "vgpulock"), 0777U);
  // A second Allocate of the same container keeps what HAMi-core wrote.
  std::ofstream(made / "cache") << "x";
  ASSERT_TRUE(folders.Prepare("uid-1", "main").ok());
  EXPECT_TRUE(fs::exists(made / "cache"));

  auto listed = folders.List();
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed->size(), 1U);
  EXPECT_EQ((*listed)[0].name, "uid-1_main");
  EXPECT_GT((*listed)[0].modified_ms, 0);

  ASSERT_TRUE(folders.Remove("uid-1_main").ok());
  EXPECT_FALSE(fs::exists(made));
  EXPECT_TRUE(folders.Remove("uid-1_main").ok());  // already gone
  EXPECT_FALSE(folders.Remove("..").ok());
  EXPECT_FALSE(folders.Prepare("uid/../x", "main").ok());
}

TEST(HamiCoreHostFoldersTest, AMissingContainersFolderListsNothingAndABlockedOneNamesThePath) {
  TempDir tmp;
  agent_runtime::HamiCoreHostFolders folders(tmp.path / "absent", (tmp.path / "lock").string());
  auto listed = folders.List();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  // The hook folder's vgpu is a file: nothing can be made under it.
  fs::create_directories(tmp.path / "hook");
  std::ofstream(tmp.path / "hook/vgpu") << "not a folder";
  agent_runtime::HamiCoreHostFolders blocked(tmp.path / "hook", (tmp.path / "lock").string());
  auto made = blocked.Prepare("uid-1", "main");
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.message().find("hook/vgpu/containers/uid-1_main"), std::string::npos)
      << made.message();
}

}  // namespace
}  // namespace tessera
