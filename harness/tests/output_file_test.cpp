// Output files appear whole or not at all (runtime/output_file.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "runtime/output_file.h"

namespace wb {
namespace {

namespace fs = std::filesystem;

fs::path fresh_folder(const std::string& name) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("wb_output_file_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t entries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(OutputFile, AppearsOnlyWhenCommitted) {
  const fs::path dir = fresh_folder("commit");
  const std::string path = (dir / "r.json").string();
  {
    OutputFile f(path);
    f.stream() << "{\"a\": 1}\n";
    EXPECT_FALSE(fs::exists(path)) << "not under its name before the commit";
    EXPECT_EQ(entries(dir), 1u) << "a temporary beside it";
    f.commit();
  }
  EXPECT_EQ(read(path), "{\"a\": 1}\n");
  EXPECT_EQ(entries(dir), 1u) << "no temporary left";
}

TEST(OutputFile, AFailedRunLeavesNothingAndKeepsThePreviousFile) {
  const fs::path dir = fresh_folder("abandon");
  const std::string path = (dir / "r.json").string();
  {
    OutputFile f(path);
    f.stream() << "half";
  }  // an exception, a refusal: no commit
  EXPECT_EQ(entries(dir), 0u) << "neither the file nor a temporary";
  write_file_atomically(path, "old\n");
  try {
    OutputFile f(path);
    f.stream() << "new, half written";
    throw std::runtime_error("the run failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(read(path), "old\n") << "the previous complete version stays";
  EXPECT_EQ(entries(dir), 1u);
}

TEST(OutputFile, ProblemsOfAPathAreFoundBeforeAnyWork) {
  const fs::path dir = fresh_folder("problems");
  EXPECT_FALSE(output_path_problem((dir / "r.json").string()).has_value());
  const auto missing = output_path_problem((dir / "no-such-folder" / "r.json").string());
  ASSERT_TRUE(missing.has_value());
  EXPECT_NE(missing->find("no-such-folder does not exist"), std::string::npos) << *missing;
  const auto folder = output_path_problem(dir.string());
  ASSERT_TRUE(folder.has_value());
  EXPECT_NE(folder->find("is a folder"), std::string::npos) << *folder;
  EXPECT_TRUE(output_path_problem("").has_value());
  EXPECT_FALSE(output_path_problem("relative-name.json").has_value()) << "the current folder";
  EXPECT_THROW(write_file_atomically((dir / "no-such-folder" / "r.json").string(), "x"), std::runtime_error);
}

TEST(OutputFile, AWriterThatTakesANameWritesATemporaryFirst) {
  const fs::path dir = fresh_folder("whole");
  const std::string path = (dir / "results.json").string();
  std::string given;
  EXPECT_EQ(write_whole(path,
                        [&](const std::string& name) {
                          given = name;
                          std::ofstream(name) << "{}\n";
                          return std::string();
                        }),
            "");
  EXPECT_NE(given, path) << "the writer gets a temporary";
  EXPECT_EQ(fs::path(given).parent_path(), dir) << "in the same folder";
  EXPECT_EQ(read(path), "{}\n");
  EXPECT_EQ(entries(dir), 1u);
  const std::string other = (dir / "other.json").string();
  EXPECT_EQ(write_whole(other,
                        [](const std::string& name) {
                          std::ofstream(name) << "{ half";
                          return std::string("the writer failed");
                        }),
            "the writer failed");
  EXPECT_FALSE(fs::exists(other));
  EXPECT_EQ(entries(dir), 1u) << "its temporary removed";
  EXPECT_NE(write_whole((dir / "missing" / "r.json").string(), [](const std::string&) { return std::string(); })
                .find("does not exist"),
            std::string::npos);
}

TEST(OutputFile, DevicesAreWrittenInPlaceNotReplaced) {
  EXPECT_FALSE(output_path_problem("/dev/null").has_value());
  EXPECT_FALSE(output_path_problem("-").has_value()) << "standard output";
  write_file_atomically("/dev/null", "x");
  EXPECT_TRUE(fs::is_character_file("/dev/null")) << "still the device";
  std::string given;
  EXPECT_EQ(write_whole("/dev/null",
                        [&](const std::string& name) {
                          given = name;
                          return std::string();
                        }),
            "");
  EXPECT_EQ(given, "/dev/null");
}

}  // namespace
}  // namespace wb
