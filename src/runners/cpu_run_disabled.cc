// The CPU backend of a build without MPI or OpenBLAS (SHARDSCOPE_WITH_MPI=OFF or
// SHARDSCOPE_WITH_BLAS=OFF): it says so instead of running. CMake compiles this
// file in place of cpu_run_worker.cc and cpu_run_launcher.cc.
#include "runners/cpu_run.h"

namespace shardscope::runtime {
namespace {

Status NotBuilt(const Experiment& experiment) {
  return Unimplemented(
      "experiment '{}': backend cpu needs MPI and OpenBLAS, and this build was configured "
      "without them (SHARDSCOPE_WITH_MPI / SHARDSCOPE_WITH_BLAS=OFF); use --backend sim or "
      "rebuild with both",
      experiment.name);
}

}  // namespace

Status CpuRunnerBuilt(const Experiment& experiment) { return NotBuilt(experiment); }

StatusOr<CpuRunResult> RunCpuExperiment(const Experiment& experiment, const CpuRunOptions&) {
  return NotBuilt(experiment);
}

StatusOr<CpuRunResult> RunCpuWorker(const Experiment& experiment, const CpuRunOptions&) {
  return NotBuilt(experiment);
}

}  // namespace shardscope::runtime
