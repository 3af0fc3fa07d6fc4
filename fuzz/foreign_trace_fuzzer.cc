// libFuzzer target for one foreign-trace importer and the analyzer behind it,
// end to end as `shardscope analyze --trace-format F` runs them: any bytes
// must be read or rejected with a Status — no crash, hang, leak or sanitizer
// report — and whatever is delivered must analyse cleanly. Built once per
// format (SHARDSCOPE_FUZZ_FORMAT, SHARDSCOPE_FUZZ_FILE_NAME; fuzz/CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "analysis/analyzer.h"
#include "fuzz/fuzz_file.h"
#include "importers/format_detect.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardscope;
  fuzz::FuzzFile file(data, size, SHARDSCOPE_FUZZ_FILE_NAME);
  analysis::AnalyzeOptions options;
  options.format = importers::TraceFormat::SHARDSCOPE_FUZZ_FORMAT;
  auto result = analysis::AnalyzeTraceFile(file.path(), options);
  if (result.ok()) (void)result->metrics.ToJson().dump();
  return 0;
}
