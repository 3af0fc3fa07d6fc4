// A scratch directory for one test: a fresh folder under $TMPDIR (or /tmp),
// removed with its contents when the object goes, unless the environment sets
// SHARDSCOPE_KEEP_TEST_FILES (to a value other than "" or "0"); then it stays
// and its path is printed on stderr, to look at a failing test's files.
#ifndef SHARDSCOPE_TESTING_SCRATCH_DIR_H_
#define SHARDSCOPE_TESTING_SCRATCH_DIR_H_

#include <string>
#include <string_view>

namespace shardscope::testing {

// True when SHARDSCOPE_KEEP_TEST_FILES asks to keep the files tests write.
bool KeepTestFiles();

class ScratchDir {
 public:
  // `prefix` starts the folder's name (a random suffix follows, so parallel
  // test processes never share one). Aborts with a message if the folder
  // cannot be made: no test can run without it.
  explicit ScratchDir(std::string_view prefix = "shardscope_test");
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // The folder's absolute path.
  const std::string& path() const { return path_; }
  // `name` inside the folder (not created).
  std::string File(std::string_view name) const;

 private:
  std::string path_;
};

}  // namespace shardscope::testing

#endif  // SHARDSCOPE_TESTING_SCRATCH_DIR_H_
