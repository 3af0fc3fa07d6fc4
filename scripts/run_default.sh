#!/usr/bin/env bash
# `make run`: checks, plans and simulates the default experiments, runs the small
# CPU experiment for real when the CPU backend is built, and writes one HTML report.
# The terminal gets a short summary; the full check/plan/run text goes to $out/.
# Usage: run_default.sh SHARDSCOPE_BINARY CONFIG
set -euo pipefail
bin=$1
config=$2
out=${SHARDSCOPE_OUT:-out}
traces=${SHARDSCOPE_TRACES:-traces}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
tmp=$(mktemp -d "$out/.run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Everything is written into a temporary folder first and moved into $out at the
# end, so a failure leaves no half-written report.
"$bin" check --config "$config" > "$tmp/check.txt"
"$bin" check --config "$config" --json > "$tmp/check.json"
"$bin" plan --config "$config" > "$tmp/plan.txt"
"$bin" plan --config "$config" --json > "$tmp/plan.json"

# The simulator over every experiment (the CPU one too, on its local-cpu hardware
# model). Each trace holds the first `trace_steps` decode steps in full (configs/
# experiments.yaml); TTFT, TPOT and throughput cover every step.
# Simulating every decode step of all 49 runs takes well over ten minutes on a
# 2-core machine, so by default only the first 2 decode steps are simulated (as many
# as are traced) and run time / throughput extrapolate them (the "steps" column of
# run.txt says how many); SHARDSCOPE_DECODE_STEPS=all simulates every step.
decode_steps=${SHARDSCOPE_DECODE_STEPS:-2}
decode_args=()
[ "$decode_steps" != all ] && decode_args=(--decode-steps "$decode_steps")
echo "Simulating the experiments of $config (a few minutes)..." >&2
# Traces: every experiment that is not a sweep, and the first point of each sweep
# (a sweep's 128-rank points write ~180 MB each even with trace_steps: 2); the
# other runs without a trace. Each run is simulated once.
/usr/bin/python3 "$here/run_summary.py" traced "$tmp/plan.json" > "$tmp/traced.list"
/usr/bin/python3 "$here/run_summary.py" untraced "$tmp/plan.json" > "$tmp/untraced.list"
append() {  # append() LIST_JSON ONE_JSON
  /usr/bin/python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); a+=json.load(open(sys.argv[2])); json.dump(a,open(sys.argv[1],"w"))' \
    "$1" "$2"
}
echo '[]' > "$tmp/traced.json"
while read -r name; do
  "$bin" run --config "$config" --backend sim --experiment "$name" --out "$traces" "${decode_args[@]}" \
    --json > "$tmp/one.json"
  append "$tmp/traced.json" "$tmp/one.json"
done < "$tmp/traced.list"
echo '[]' > "$tmp/untraced.json"
while read -r name; do
  "$bin" run --config "$config" --backend sim --experiment "$name" --no-trace "${decode_args[@]}" \
    --json > "$tmp/one.json"
  append "$tmp/untraced.json" "$tmp/one.json"
done < "$tmp/untraced.list"
/usr/bin/python3 "$here/run_summary.py" merge "$tmp/plan.json" "$tmp/traced.json" \
  "$tmp/untraced.json" > "$tmp/run.json"

# Served workloads (configs/serving.yaml beside the config, ~20 s): per-request
# TTFT/TPOT/ITL distributions, throughput and goodput of requests arriving over time.
serving_config="$(dirname "$config")/serving.yaml"
if [ -f "$serving_config" ]; then
  echo "Serving the requests of $serving_config..." >&2
  # Traced (request spans per replica, a few hundred kB each) so the report shows them.
  "$bin" run --config "$serving_config" --backend sim --out "$traces" > "$tmp/serving.txt"
fi

# The real CPU run of the same plan, when the CPU backend (MPI + OpenBLAS) is built.
cpu_experiment=cpu_tiny_tp2
echo '[]' > "$tmp/cpu.json"
if grep -q "name: $cpu_experiment" "$config"; then
  if "$bin" run --config "$config" --experiment "$cpu_experiment" --out "$traces" --json \
      > "$tmp/cpu.json" 2> "$tmp/cpu.err"; then
    :
  elif grep -q "not built\|was built without" "$tmp/cpu.err"; then
    echo '[]' > "$tmp/cpu.json"
    echo "CPU backend not built: $cpu_experiment simulated only ($(head -1 "$tmp/cpu.err"))" > "$tmp/cpu.note"
  else
    cat "$tmp/cpu.err" >&2
    exit 1
  fi
fi

# One report over exactly the traces this run wrote.
/usr/bin/python3 "$here/run_summary.py" traces "$tmp/traced.json" "$tmp/cpu.json" > "$tmp/traces.list"
mapfile -t written < "$tmp/traces.list"
if [ -f "$tmp/serving.txt" ]; then
  mapfile -t -O "${#written[@]}" written < <(sed -n 's/^  trace //p' "$tmp/serving.txt")
fi
if [ ${#written[@]} -gt 0 ]; then
  "$bin" report "${written[@]}" -o "$tmp/report.html" --title "ShardScope: the default experiments" > /dev/null
fi

for f in check.txt check.json plan.txt plan.json run.json traced.json cpu.json report.html serving.txt; do
  [ -f "$tmp/$f" ] && mv "$tmp/$f" "$out/$f"
done
# Writes $out/run.txt (every run) and prints the short summary.
/usr/bin/python3 "$here/run_summary.py" summary "$out/run.json" "$out/cpu.json" "$out" "$traces" \
  "$out/traced.json" \
  "$tmp/cpu.note" "$out/serving.txt"
