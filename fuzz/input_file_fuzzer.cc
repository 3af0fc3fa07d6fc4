// libFuzzer target for one reader of a small input file (SHARDSCOPE_FUZZ_INPUT):
// a served workload's request file (CSV or JSONL), a prompts file, a simulator
// calibration (YAML) or a workload card (YAML): any bytes must load or be
// rejected with a Status — no crash, hang, leak, runaway allocation or
// sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_file.h"

#define SHARDSCOPE_FUZZ_REQUEST_FILE 1
#define SHARDSCOPE_FUZZ_PROMPTS 2
#define SHARDSCOPE_FUZZ_CALIBRATION 3
#define SHARDSCOPE_FUZZ_WORKLOAD_CARD 4

#if SHARDSCOPE_FUZZ_INPUT == SHARDSCOPE_FUZZ_REQUEST_FILE
#include "config/request_file.h"
#elif SHARDSCOPE_FUZZ_INPUT == SHARDSCOPE_FUZZ_PROMPTS
#include "config/prompts.h"
#elif SHARDSCOPE_FUZZ_INPUT == SHARDSCOPE_FUZZ_CALIBRATION
#include "cluster/cluster.h"
#include "sim/calibration.h"
#elif SHARDSCOPE_FUZZ_INPUT == SHARDSCOPE_FUZZ_WORKLOAD_CARD
#include "analysis/workload_card.h"
#else
#error "SHARDSCOPE_FUZZ_INPUT must name a reader"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardscope;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
#if SHARDSCOPE_FUZZ_INPUT == SHARDSCOPE_FUZZ_REQUEST_FILE
  // CSV or JSONL: the reader tells them apart by the first character.
  (void)ParseRequestFile(text, "fuzz.csv", /*max_context=*/131072).ok();
#elif SHARDSCOPE_FUZZ_INPUT == SHARDSCOPE_FUZZ_PROMPTS
  (void)ParsePromptsText(std::string(text), "fuzz.txt", /*vocab_size=*/32000).ok();
#elif SHARDSCOPE_FUZZ_INPUT == SHARDSCOPE_FUZZ_CALIBRATION
  fuzz::FuzzFile file(data, size, "calibration.yaml");
  static const sim::Calibration base = sim::DefaultCalibration(DeviceSpec{});
  (void)LoadCalibration(file.path(), base).ok();
#elif SHARDSCOPE_FUZZ_INPUT == SHARDSCOPE_FUZZ_WORKLOAD_CARD
  fuzz::FuzzFile file(data, size, "card.yaml");
  (void)analysis::ReadWorkloadCard(file.path()).ok();
#endif
  return 0;
}
