#!/usr/bin/env bash
# `make run`: checks and plans the default experiments and says where the
# reports went. Usage: run_default.sh SHARDSCOPE_BINARY CONFIG
set -euo pipefail
bin=$1
config=$2
out=${SHARDSCOPE_OUT:-out}
mkdir -p "$out"
tmp=$(mktemp -d "$out/.run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Write into a temporary folder first so a failure leaves no half-written report.
"$bin" check --config "$config" > "$tmp/check.txt"
"$bin" check --config "$config" --json > "$tmp/check.json"
"$bin" plan --config "$config" > "$tmp/plan.txt"
"$bin" plan --config "$config" --json > "$tmp/plan.json"
for f in check.txt check.json plan.txt plan.json; do mv "$tmp/$f" "$out/$f"; done

cat "$out/check.txt"
echo
echo "Reports written:"
for f in check.txt check.json plan.txt plan.json; do echo "  $out/$f"; done

# The simulator over the same experiments. All of them with every decode step
# would write ~1.5 GB per EP=128 experiment and take far over two minutes on a
# small machine, so `make run` simulates prefill + the first decode step only
# (--decode-steps, stated again in the summary); TPOT is that step's, and run
# time / TPS extrapolate it. Run `shardscope run` without the flag for all steps.
traces=${SHARDSCOPE_TRACES:-traces}
decode_steps=${SHARDSCOPE_DECODE_STEPS:-1}
echo
echo "Simulating every experiment (prefill + ${decode_steps} decode step(s); SHARDSCOPE_DECODE_STEPS to change)..."
"$bin" run --config "$config" --out "$traces" --decode-steps "$decode_steps" > "$tmp/run.txt"
mv "$tmp/run.txt" "$out/run.txt"
cat "$out/run.txt"
echo
echo "Simulation summary: $out/run.txt; traces under $traces/ (listed above)."
