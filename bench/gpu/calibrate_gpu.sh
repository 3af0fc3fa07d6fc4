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

# fp8_quant_bytes_per_element and fp8_quant_fixed_us from the measured
# quantisation passes (fp8_quant.csv: the fp8_quant rows of gpu_ops.csv): the
# simulator charges elements × B at the elementwise class's rate, plus F per
# pass (src/sim/compute_model.cc, QuantSeconds). (B, F) minimise
# Σ ln(model / measured)² over every pass (m = 1 … 16 384), with the
# elementwise rate of the fitted file: a grid of 0.05 B/element × 0.1 µs, then
# 0.01 × 0.01 around its best.
quant_term() {
  /usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import csv, math, re, statistics, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kind"] == "fp8_quant"]
text = open(sys.argv[2]).read()
e = re.search(r"elementwise: \{[^}]*memory_efficiency: ([0-9.e+-]+)", text)
bw = {"h100-sxm": 3350e9, "h200": 4800e9}[sys.argv[3]]
rate = bw * float(e.group(1))
data = [(int(r["m"]) * int(r["n"]) / rate, float(r["median_us"]) * 1e-6) for r in rows]
def loss(b, f):
    return sum(math.log((x * b + f) / y) ** 2 for x, y in data)
def grid(bs, fs):
    return min(((b, f) for b in bs for f in fs), key=lambda p: loss(*p))
b, f = grid([1 + i * 0.05 for i in range(381)], [i * 0.1e-6 for i in range(101)])
b, f = grid([b + i * 0.01 for i in range(-10, 11) if b + i * 0.01 > 0],
            [f + i * 0.01e-6 for i in range(-20, 21) if f + i * 0.01e-6 >= 0])
err = [(x * b + f) / y - 1 for x, y in data]
large = [d for (x, y), d in zip(data, err) if x * rate >= 1 << 22]
small = [d for (x, y), d in zip(data, err) if x * rate < 1 << 22]
rms = lambda v: 100 * math.sqrt(statistics.mean([d * d for d in v]))
print(f"fp8_quant_bytes_per_element: {b:.3g}  # measured: {len(data)} per-tensor quantisation passes "
      f"(amax, then scale and cast: 5 bytes per element moved) at the elementwise rate, rms error "
      f"{rms(err):.1f} % ({len(large)} of >= 4 M elements: {rms(large):.1f} %; {len(small)} smaller: "
      f"{rms(small):.1f} %)")
print(f"fp8_quant_fixed_us: {f * 1e6:.3g}  # per pass: a memset and two kernels in a CUDA graph")
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
