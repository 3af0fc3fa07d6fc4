#!/bin/bash
# Fits the GPU calibration files from gpu_ops_bench results (docs/fidelity.md,
# "GPU"): for every bench/gpu/results/<hardware>/ and dtype, `shardscope
# calibrate --hardware <hardware>` writes configs/calibration/<hardware>-<dtype>.yaml,
# with async_launch on (the traces hold device times), and its table (each
# class's error under the default table and under the fitted one) goes to
# bench/gpu/results/<hardware>/calibrate_<dtype>.txt.
#   bench/gpu/calibrate_gpu.sh [BUILD_DIR]
set -euo pipefail
bin=$(realpath "${1:-build}")/shardscope
cd "$(dirname "$0")/../.."
mkdir -p configs/calibration
for dir in bench/gpu/results/*; do
  hw=$(basename "$dir")
  for dtype in bf16 fp8; do
    trace="$dir/gpu_ops_$dtype.trace.gz"
    [[ -f $trace ]] || continue
    "$bin" calibrate "$trace" --hardware "$hw" --force \
      -o "configs/calibration/$hw-$dtype.yaml" > "$dir/calibrate_$dtype.txt"
    # The traces hold device times (kernels replayed from CUDA graphs): launched
    # eagerly, the host's issue interval hides under longer kernels.
    printf '%s\n' "# Fitted on device times: eager launches hide under longer kernels (docs/fidelity.md, \"GPUs\")." \
      "async_launch: true" >> "configs/calibration/$hw-$dtype.yaml"
    echo "configs/calibration/$hw-$dtype.yaml  (table: bench/gpu/results/$hw/calibrate_$dtype.txt)"
  done
done
