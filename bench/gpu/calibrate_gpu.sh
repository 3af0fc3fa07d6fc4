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

# fp8_quant_bytes_per_element from the measured quantisation passes
# (fp8_quant.csv: the fp8_quant rows of gpu_ops.csv): the simulator charges
# elements × B at the elementwise class's rate plus its launch
# (src/sim/compute_model.cc, QuantSeconds); B is the value (0.01 steps, 1–20)
# minimising Σ ln(model / measured)² over the passes of ≥ 4 M elements, with
# the elementwise rate and launch of the fitted file. Smaller passes are
# bound by their fixed cost (a memset and two kernels, ~4.5 µs, against the
# one launch the term adds): the comment says by how much.
quant_term() {
  /usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import csv, math, re, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kind"] == "fp8_quant"]
text = open(sys.argv[2]).read()
e = re.search(r"elementwise: \{[^}]*memory_efficiency: ([0-9.e+-]+)[^}]*launch_us: ([0-9.e+-]+)", text)
bw = {"h100-sxm": 3350e9, "h200": 4800e9}[sys.argv[3]]
rate, launch = bw * float(e.group(1)), float(e.group(2)) * 1e-6
elements = lambda r: int(r["m"]) * int(r["n"])
large = [r for r in rows if elements(r) >= 1 << 22]
small = [r for r in rows if elements(r) < 1 << 22]
def err(r, b):
    return (elements(r) * b / rate + launch) / (float(r["median_us"]) * 1e-6)
best = min((i / 100 for i in range(100, 2001)), key=lambda b: sum(math.log(err(r, b)) ** 2 for r in large))
rms = 100 * math.sqrt(statistics.mean([(err(r, best) - 1) ** 2 for r in large]))
below = 100 * (statistics.median([err(r, best) for r in small]) - 1)
print(f"fp8_quant_bytes_per_element: {best:.3g}  # measured: {len(large)} per-tensor quantisation "
      f"passes of ≥ 4 M elements (amax, then scale and cast: 5 bytes per element moved) at the "
      f"elementwise rate, rms error {rms:.1f} %; {len(small)} smaller ones: median {below:+.0f} % "
      f"(their fixed cost)")
PY
}
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
    if [[ $dtype == fp8 && -f $dir/fp8_quant.csv ]]; then
      quant_term "$dir/fp8_quant.csv" "configs/calibration/$hw-$dtype.yaml" "$hw" \
        >> "configs/calibration/$hw-$dtype.yaml"
    fi
    echo "configs/calibration/$hw-$dtype.yaml  (table: bench/gpu/results/$hw/calibrate_$dtype.txt)"
  done
done
