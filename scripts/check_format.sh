#!/usr/bin/env bash
# Fails when a tracked C++ file (*.h, *.cc) is not as clang-format (.clang-format)
# would write it, naming each such file. `make format` fixes them.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format not found (make bootstrap)" >&2; exit 2; }
mapfile -d '' files < <(git ls-files -z '*.h' '*.cc')
# One process per batch; each violation is reported as `path:line:col: error: …`.
bad=$({ printf '%s\0' "${files[@]}" | xargs -0 clang-format --dry-run --Werror 2>&1 || true; } \
  | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*clang-format-violations.*/\1/p' | sort -u)
if [ -n "$bad" ]; then
  echo "check_format: not clang-formatted (run \`make format\` or clang-format -i FILE):" >&2
  printf '  %s\n' $bad >&2
  exit 1
fi
echo "check_format: ${#files[@]} files clang-formatted"
