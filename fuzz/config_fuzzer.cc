// libFuzzer target for one configuration reader (SHARDSCOPE_FUZZ_CONFIG: the
// experiments YAML with its sweeps, a model YAML, a hardware YAML, a Hugging
// Face config.json): any bytes must load or be rejected with a Status — no
// crash, hang, leak, runaway allocation or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "cluster/cluster_yaml.h"
#include "config/experiment_loader.h"
#include "fuzz/fuzz_file.h"
#include "model/hf_config.h"
#include "model/model_yaml.h"

#define SHARDSCOPE_FUZZ_EXPERIMENTS 1
#define SHARDSCOPE_FUZZ_MODEL 2
#define SHARDSCOPE_FUZZ_HARDWARE 3
#define SHARDSCOPE_FUZZ_HF_CONFIG 4

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardscope;
#if SHARDSCOPE_FUZZ_CONFIG == SHARDSCOPE_FUZZ_HF_CONFIG
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)ModelFromHfConfigText(text, "fuzz/config.json").ok();
#else
  fuzz::FuzzFile file(data, size, "fuzz.yaml");
#if SHARDSCOPE_FUZZ_CONFIG == SHARDSCOPE_FUZZ_EXPERIMENTS
  LoaderOptions options;
  options.max_experiments = 256;  // the loader's own guard, smaller: fuzzing speed
  (void)LoadExperiments(file.path(), options).ok();
#elif SHARDSCOPE_FUZZ_CONFIG == SHARDSCOPE_FUZZ_MODEL
  (void)LoadModelFile(file.path()).ok();
#elif SHARDSCOPE_FUZZ_CONFIG == SHARDSCOPE_FUZZ_HARDWARE
  (void)LoadClusterFile(file.path()).ok();
#else
#error "SHARDSCOPE_FUZZ_CONFIG must name a reader"
#endif
#endif
  return 0;
}
