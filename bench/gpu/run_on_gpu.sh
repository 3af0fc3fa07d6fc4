#!/bin/bash
# Runs on the GPU machine (the device tool, or any host with an NVIDIA GPU):
# the device's facts, then gpu_ops_bench over the Programs' GEMM shapes.
# Everything goes into OUT: nvidia-smi before/after, gpu_ops.csv, device.json,
# gpu_ops_bf16.trace.gz, gpu_ops_fp8.trace.gz, stderr.txt.
#   bench/gpu/run_on_gpu.sh OUT [BINARY] [BUDGET_S]
set -u
out=${1:?usage: run_on_gpu.sh OUT [BINARY] [BUDGET_S]}
bin=${2:-build-gpu/bench/gpu_ops_bench}
budget=${3:-240}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,TEMPERATURE > "$out/nvidia-smi-before.txt" 2>&1
start=$(date +%s)
"$bin" --shapes bench/gpu/shapes.csv --out "$out" --budget-s "$budget" 2> >(tee "$out/stderr.txt" >&2)
rc=$?
echo "gpu_ops_bench: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$out/stderr.txt"
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,TEMPERATURE > "$out/nvidia-smi-after.txt" 2>&1
gzip -9 -f "$out"/gpu_ops_*.trace  # what calibrate_gpu.sh reads (bench/gpu/results/<hardware>/)
exit $rc
