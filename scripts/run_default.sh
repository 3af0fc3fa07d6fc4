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
echo "(The simulator, which will write traces under traces/, is not built yet.)"
