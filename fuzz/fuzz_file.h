// The fuzz input as a file, for readers that take a path: written to a
// per-process temporary file (one input at a time: libFuzzer runs inputs one
// after another in a process) and removed when done.
#ifndef SHARDSCOPE_FUZZ_FUZZ_FILE_H_
#define SHARDSCOPE_FUZZ_FUZZ_FILE_H_

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>

namespace shardscope::fuzz {

class FuzzFile {
 public:
  // `name` is the file name within a per-process directory (its suffix picks
  // the reader where readers look at names).
  FuzzFile(const uint8_t* data, size_t size, const std::string& name) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("shardscope-fuzz-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    path_ = (dir / name).string();
    if (FILE* f = std::fopen(path_.c_str(), "wb")) {
      if (size > 0) std::fwrite(data, 1, size, f);
      std::fclose(f);
    }
  }
  ~FuzzFile() { std::remove(path_.c_str()); }
  FuzzFile(const FuzzFile&) = delete;
  FuzzFile& operator=(const FuzzFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace shardscope::fuzz

#endif  // SHARDSCOPE_FUZZ_FUZZ_FILE_H_
