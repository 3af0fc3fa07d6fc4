#!/usr/bin/env bash
# clang-tidy with the tree's .clang-tidy (function size, a few bugprone/modernize checks)
# on src/'s non-test C++: by default the files changed against the merge base with main
# (TIDY_BASE=REF for another), with --all every file (about 5 min on 2 cores). A changed
# header or .inc is checked through one source file that includes it. Fails naming each
# finding as `path:line:col: warning: … [check]`.
#   --since-clean  the files changed since the commit in .clang-tidy-clean, where the whole
#                  tree was last found clean (CI); every file when that commit is not in
#                  this clone's history or .clang-tidy or this script changed since.
#   --all --record after a clean run of every file, writes HEAD's commit there (commit it).
# Needs $BUILD/compile_commands.json (`make configure` writes it; BUILD defaults to build).
#
# Clang-tidy 14 (Debian 12) parses the GCC build's compile commands as they are, with two
# differences the tree and this script take care of:
#  * it cannot capture a structured binding in a lambda (C++20, clang 16): the sources
#    avoid that (`for (const auto& entry : m) { const auto& key = entry.first; … }`);
#  * its own warnings differ from GCC's, and -Werror would make them errors (an unused
#    private field in search/distributed_disabled.cc): --extra-arg=-Wno-error. Compiler
#    warnings are GCC's job (`make test WERROR=ON`); clang's are not shown at all.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}

# Function names exempt from the size limit while they are being shortened (empty: none).
ALLOWED_LONG_FUNCTIONS=()

all=0
record=0
since_clean=0
clean_file=.clang-tidy-clean
usage() { echo "usage: scripts/check_tidy.sh [--all [--record] | --since-clean]" >&2; exit 2; }
case "${1:-}" in
  --all) all=1 ;;
  --since-clean) since_clean=1 ;;
  "") ;;
  *) usage ;;
esac
case "${2:-}" in
  --record) [ "$all" = 1 ] || usage; record=1 ;;
  "") ;;
  *) usage ;;
esac
if [ "$record" = 1 ] && [ -n "$(git status --porcelain -- src .clang-tidy scripts/check_tidy.sh)" ]; then
  echo "check_tidy: --record needs src/ and the tidy configuration committed" >&2
  exit 2
fi
if [ "$since_clean" = 1 ]; then
  clean=$(cat "$clean_file" 2>/dev/null || true)
  if [ -z "$clean" ] || ! git cat-file -e "$clean^{commit}" 2>/dev/null ||
     ! git merge-base --is-ancestor "$clean" HEAD; then
    echo "check_tidy: $clean_file names no ancestor of HEAD: checking every file"
    all=1
  elif [ -n "$(git diff --name-only "$clean" -- .clang-tidy scripts/check_tidy.sh)" ]; then
    echo "check_tidy: the tidy configuration changed since $clean: checking every file"
    all=1
  else
    export TIDY_BASE=$clean
  fi
fi
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[ -n "$tidy" ] || { echo "check_tidy: clang-tidy not found (make bootstrap)" >&2; exit 2; }
db="$BUILD/compile_commands.json"
[ -f "$db" ] || { echo "check_tidy: $db not found (make configure)" >&2; exit 2; }

non_test() { grep -E '^src/.*\.cc$' | grep -v '_test\.cc$' || true; }
if [ "$all" = 1 ]; then
  mapfile -t candidates < <(git ls-files 'src/*.cc' | non_test)
else
  base_ref=${TIDY_BASE:-main}
  if ! base=$(git merge-base HEAD "$base_ref" 2>/dev/null); then
    echo "check_tidy: no merge base with '$base_ref' (TIDY_BASE=REF, or --all)" >&2
    exit 2
  fi
  # Committed, staged, unstaged and untracked changes; deleted files left out.
  mapfile -t changed < <({ git diff --name-only --diff-filter=d "$base" -- src;
                           git ls-files --others --exclude-standard -- src; } | sort -u)
  candidates=()
  for f in "${changed[@]}"; do
    case "$f" in
      *_test.cc | *_test.h) ;;
      *.cc) candidates+=("$f") ;;
      *.h | *.inc)
        # One non-test source that includes it: its own .cc first.
        inc=${f#src/}
        sibling="${f%.*}.cc"
        if [ -f "$sibling" ] && grep -q "\"$inc\"" "$sibling"; then
          candidates+=("$sibling")
        else
          user=$(grep -rlF --include='*.cc' "\"$inc\"" src | non_test | head -1)
          [ -n "$user" ] && candidates+=("$user")
        fi
        ;;
    esac
  done
fi
# Only what this build compiles (an option's "disabled" stand-ins may not be).
mapfile -t files < <(printf '%s\n' "${candidates[@]}" | sort -u |
  /usr/bin/python3 -c '
import json, os, sys
db = {os.path.realpath(e["file"]) for e in json.load(open(sys.argv[1]))}
for line in sys.stdin:
    f = line.strip()
    if f and os.path.realpath(f) in db:
        print(f)' "$db")
if [ ${#files[@]} -eq 0 ]; then
  echo "check_tidy: no changed C++ file under src/ to check"
  exit 0
fi

start=$(date +%s)
out=$(printf '%s\0' "${files[@]}" |
  xargs -0 -n 4 -P "$JOBS" "$tidy" -p "$BUILD" --quiet --extra-arg=-Wno-error 2>&1 || true)
allowed=$(IFS='|'; echo "${ALLOWED_LONG_FUNCTIONS[*]}")
# Findings (a header's once), less the allowed long functions.
findings=$(printf '%s\n' "$out" | grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error): ' |
  grep -vE "function '($allowed)' exceeds recommended size" | sort -u || true)
elapsed=$(($(date +%s) - start))
if [ -n "$findings" ]; then
  echo "check_tidy: clang-tidy findings in ${#files[@]} file(s) (.clang-tidy; ${elapsed} s):" >&2
  while IFS= read -r finding; do
    echo "$finding" >&2
    # A long function's size, from the note at the same place.
    if [[ "$finding" == *"[readability-function-size]" ]]; then
      loc=${finding%%: warning: *}
      printf '%s\n' "$out" | grep -F "$loc: note: " | grep -E 'note: [0-9]+ lines' |
        head -1 | sed 's/^/  /' >&2 || true
    fi
  done <<<"$findings"
  exit 1
fi
echo "check_tidy: ${#files[@]} file(s) clean (.clang-tidy; ${elapsed} s)"
if [ "$record" = 1 ]; then
  git rev-parse HEAD > "$clean_file"
  echo "check_tidy: recorded $(cat "$clean_file") in $clean_file"
fi
