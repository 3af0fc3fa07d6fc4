// Experiments built in code for plan/program tests: a zoo model on a zoo
// cluster with the given plan, no YAML involved beyond the zoo files.
#ifndef SHARDSCOPE_PLAN_TEST_EXPERIMENTS_H_
#define SHARDSCOPE_PLAN_TEST_EXPERIMENTS_H_

#include <string>

#include "cluster/cluster_yaml.h"
#include "config/experiment.h"
#include "model/model_yaml.h"

namespace shardscope::testing {

// Aborts the test binary on a broken zoo file (a bug, not an input error).
inline Experiment ZooExperiment(const std::string& model, const std::string& cluster,
                                ParallelSpec parallel, int64_t batch, int64_t prompt,
                                int64_t generate = 4) {
  Experiment e;
  e.name = "test";
  auto m = LoadZooModel(model, DefaultModelsDir());
  auto c = LoadClusterFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/configs/hardware/" + cluster +
                           ".yaml");
  if (!m.ok() || !c.ok()) std::abort();
  e.model = *m;
  e.cluster = *c;
  e.parallel = parallel;
  e.workload.batch_size = batch;
  e.workload.sequence_length = prompt;
  e.workload.tokens_to_generate = generate;
  return e;
}

}  // namespace shardscope::testing

#endif  // SHARDSCOPE_PLAN_TEST_EXPERIMENTS_H_
