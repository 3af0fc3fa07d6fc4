// Whole-file reads and writes shared by the trace, importer and analysis tests
// (their scratch directory is testing/scratch_dir.h).
#ifndef SHARDSCOPE_TRACE_TEST_UTIL_H_
#define SHARDSCOPE_TRACE_TEST_UTIL_H_

#include <fstream>
#include <sstream>
#include <string>

namespace shardscope::trace {

inline void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_TEST_UTIL_H_
