#!/usr/bin/env bash
# The decode-step benchmark of the CPU executor next to the simulator: runs each experiment
# of bench/cpu_decode.yaml on real ranks (shardscope run --backend cpu) REPEATS times and in
# the simulator on the local-cpu cluster description (--backend sim, default calibration and
# bench/local-cpu-calibration.yaml), takes TPOT from each trace with
# `shardscope analyze --format json`, and prints a Markdown table with the simulator's error
# and the dominant bound (`shardscope check`). Results: docs/BENCHMARKS.md.
#
#   bench/cpu_decode_bench.sh [BUILD_DIR] [REPEATS]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
repeats=${2:-3}
bin=$build/shardscope
config=$root/bench/cpu_decode.yaml
calibration=$root/bench/local-cpu-calibration.yaml
store=$(mktemp -d)
trap 'rm -rf "$store"' EXIT

# The trace path from `shardscope run --json` (one experiment).
trace_of() { python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["trace"])'; }
# TPOT (s) of a trace, as `shardscope analyze` defines it.
tpot_of() {
  "$bin" analyze --format json "$1" | python3 -c '
import json, sys
print(next(m["value"] for m in json.load(sys.stdin)["metrics"] if m["name"] == "tpot" and not m["scope"]))'
}

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo ' + working tree'), date: $(date -u +%Y-%m-%d)"
echo "command: bench/cpu_decode_bench.sh $build $repeats"
echo
echo "| experiment | measured TPOT (median of $repeats; min–max) | sim, default calibration | error | sim, measured calibration | error | bound TPOT (dominant) |"
echo "|---|---|---|---|---|---|---|"
for name in $(sed -n 's/^  - name: *//p' "$config"); do
  real=()
  for ((i = 0; i < repeats; i++)); do
    trace=$("$bin" run --backend cpu --json --config "$config" --experiment "$name" --out "$store" | trace_of)
    real+=("$(tpot_of "$trace")")
  done
  sim=$(tpot_of "$("$bin" run --backend sim --json --config "$config" --experiment "$name" --out "$store" | trace_of)")
  simcal=$(tpot_of "$("$bin" run --backend sim --json --calibration "$calibration" --config "$config" --experiment "$name" --out "$store" | trace_of)")
  bound=$("$bin" check --json --config "$config" --experiment "$name" |
          python3 -c 'import json, sys; t = json.load(sys.stdin)[0]["bounds"]["tpot"]; print(t["seconds"], t["dominant"])')
  python3 - "$name" "$sim" "$simcal" "$bound" "${real[@]}" <<'PY'
import statistics, sys
name, sim, simcal, bound = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4].split(" ", 1)
real = sorted(float(x) for x in sys.argv[5:])
med = statistics.median(real)
ms = lambda s: f"{s * 1e3:.1f} ms"
err = lambda s: f"{(s - med) / med * 100:+.0f} %"
print(f"| {name} | {ms(med)} ({ms(real[0])}–{ms(real[-1])}) | {ms(sim)} | {err(sim)} | "
      f"{ms(simcal)} | {err(simcal)} | {ms(float(bound[0]))} ({bound[1]}) |")
PY
done
