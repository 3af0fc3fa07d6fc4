#include "testing/scratch_dir.h"

#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace shardscope::testing {

bool KeepTestFiles() {
  const char* keep = std::getenv("SHARDSCOPE_KEEP_TEST_FILES");
  return keep != nullptr && *keep != '\0' && std::strcmp(keep, "0") != 0;
}

ScratchDir::ScratchDir(std::string_view prefix) {
  std::error_code ec;
  // temp_directory_path() reads TMPDIR, falling back to /tmp.
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string tmpl = (base / (std::string(prefix) + "_XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "ScratchDir: cannot create %s: %s\n", tmpl.c_str(), std::strerror(errno));
    std::abort();
  }
  path_ = std::filesystem::absolute(tmpl).string();
}

ScratchDir::~ScratchDir() {
  if (KeepTestFiles()) {
    std::fprintf(stderr, "SHARDSCOPE_KEEP_TEST_FILES: kept %s\n", path_.c_str());
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string ScratchDir::File(std::string_view name) const {
  return path_ + "/" + std::string(name);
}

}  // namespace shardscope::testing
