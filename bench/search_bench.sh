#!/usr/bin/env bash
# Times `shardscope search` (docs/search.md) on the searches of bench/search_bench.yaml:
# each full search in one process, DeepSeek-V3 at device budgets 32/64/128 (how time grows
# with the number of candidates), and under mpirun on 2 ranks when MPI is built. Prints a
# Markdown table: candidates enumerated, simulated, CPU seconds (user + sys of every rank:
# the fair figure on a shared machine) and wall seconds. Results: docs/BENCHMARKS.md.
#
#   bench/search_bench.sh [BUILD_DIR]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
bin=$build/shardscope
config=$root/bench/search_bench.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "commit: $(git -C "$root" rev-parse --short HEAD), $(date -u +%Y-%m-%d)"
echo
echo "| search | ranks | candidates | simulated | CPU s | wall s |"
echo "|---|---|---|---|---|---|"

# run LABEL RANKS EXPERIMENT [FLAGS...]
run() {
  local label=$1 ranks=$2 exp=$3
  shift 3
  local launcher=()
  if [[ $ranks -gt 1 ]]; then launcher=(mpirun --oversubscribe -np "$ranks"); fi
  /usr/bin/time -f "%e %U %S" -o "$tmp/time.txt" \
    "${launcher[@]}" "$bin" search --config "$config" --experiment "$exp" --json "$tmp/r.json" "$@" \
    >"$tmp/out.txt"
  python3 - "$tmp/r.json" "$label" "$ranks" "$tmp/time.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
wall, user, sys_s = (float(v) for v in open(sys.argv[4]).read().split()[-3:])
print(f"| {sys.argv[2]} | {sys.argv[3]} | {r['enumerated']} | {r['counts']['simulated']} | "
      f"{user + sys_s:.1f} | {wall:.1f} |")
PY
}

run "DeepSeek-V3, 128 H100" 1 deepseek_v3_128xh100
run "Llama-3.1-70B, 16 H100" 1 llama_70b_16xh100
run "DeepSeek-V3, budget 32" 1 deepseek_v3_128xh100 --devices 32
run "DeepSeek-V3, budget 64" 1 deepseek_v3_128xh100 --devices 64
if grep -q "SHARDSCOPE_WITH_MPI:BOOL=ON" "$build/CMakeCache.txt"; then
  run "DeepSeek-V3, 128 H100" 2 deepseek_v3_128xh100
  run "Llama-3.1-70B, 16 H100" 2 llama_70b_16xh100
fi
