#!/usr/bin/env bash
# Installs the Debian packages ShardScope builds and tests with, when any is missing.
# Idempotent: prints nothing and touches nothing when everything is already installed.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libyaml-cpp-dev       # configs
  nlohmann-json3-dev    # small JSON output (plans, metadata)
  libcli11-dev          # command line
  libfmt-dev            # formatting
  libsimdjson-dev       # trace reading
  zlib1g-dev            # gzip traces
  libprotobuf-dev       # XSpace (xplane.pb) traces
  libopenmpi-dev openmpi-bin   # CPU ranks
  libopenblas-dev       # CPU GEMM
  libgtest-dev libgmock-dev libbenchmark-dev
  libjs-chart.js        # charts inlined into `shardscope report`
  python3               # `make run`'s summary
  python3-dev pybind11-dev   # the Python package's extension (docs/python.md)
  python3-pandas python3-pytest python3-matplotlib   # its DataFrames, tests, plots
  chromium              # the report's browser test (skipped without it)
  clang-format mypy     # `make lint` (CI): C++ formatting, Python types (no ruff in Debian 12)
  clang-tidy            # `make lint`: function size and a few bug checks (.clang-tidy)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "bootstrap: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
