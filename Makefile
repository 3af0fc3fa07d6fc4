# Two entry points for a fresh Debian machine: `make run` and `make test`.
# Each installs missing Debian packages, configures, builds, then does its job.
BUILD ?= build
JOBS ?= $(shell nproc)
CONFIG ?= configs/experiments.yaml
SHARDSCOPE := $(BUILD)/shardscope
# A sanitizer report exits with this code, so a test expecting a CLI's exit 1 or 2
# cannot mistake one for it.
SANITIZER_EXIT := exitcode=86
# WERROR=ON|OFF sets SHARDSCOPE_WERROR (the src/ layer libraries with -Werror; CI
# builds so); unset, the build directory keeps what it had (default OFF).
WERROR ?=

.PHONY: all bootstrap configure build build-cli run test test-minimal clean format lint

all: build

bootstrap:
	@bash scripts/bootstrap.sh

configure: bootstrap
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  $(if $(WERROR),-DSHARDSCOPE_WERROR=$(WERROR)) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# `make run` builds only the shardscope binary (no tests or benchmarks).
build-cli: configure
	@echo "Building $(SHARDSCOPE) (log: $(BUILD)/build-cli.log)..."
	@cmake --build $(BUILD) -j $(JOBS) --target shardscope > $(BUILD)/build-cli.log 2>&1 \
	  || { tail -40 $(BUILD)/build-cli.log; exit 1; }

run: build-cli
	@bash scripts/run_default.sh $(SHARDSCOPE) $(CONFIG)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The simulator, analyzer and importers without MPI, OpenBLAS and protobuf
# (docs/architecture.md), built with AddressSanitizer + UndefinedBehaviorSanitizer
# (no Python package: its extension would need the sanitizer runtime preloaded):
# builds in $(BUILD)-minimal and runs every test there; any sanitizer report fails
# its test. A compiler launcher such as ccache is taken from the environment
# (CMAKE_CXX_COMPILER_LAUNCHER=ccache), on the first configure only.
test-minimal: bootstrap
	@cmake -S . -B $(BUILD)-minimal -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSHARDSCOPE_WITH_MPI=OFF -DSHARDSCOPE_WITH_BLAS=OFF -DSHARDSCOPE_WITH_PROTOBUF=OFF \
	  -DSHARDSCOPE_BUILD_BENCH=OFF -DSHARDSCOPE_WITH_PYTHON=OFF -DSHARDSCOPE_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD)-minimal -j $(JOBS)
	@cd $(BUILD)-minimal && ASAN_OPTIONS=$(SANITIZER_EXIT) UBSAN_OPTIONS=print_stacktrace=1:$(SANITIZER_EXIT) \
	  ctest --output-on-failure -j $(JOBS)

format:
	@clang-format -i $$(git ls-files '*.h' '*.cc')

# Static checks: every tracked .h/.cc clang-formatted, mypy on python/ and the Python
# scripts (its configuration: pyproject.toml), docs/architecture.md's layers against
# CMakeLists.txt (seconds each), and clang-tidy (.clang-tidy) on the src/ files changed
# against main (seconds a file; TIDY=all: all of src/, about 5 min on 2 cores;
# TIDY=since-clean: those changed since the commit in .clang-tidy-clean, where all of src/
# was last clean, as CI does; `scripts/check_tidy.sh --all --record` moves it).
TIDY ?= changed
lint: configure
	@bash scripts/check_format.sh
	@mypy
	@/usr/bin/python3 tests/check_architecture_doc.py
	@BUILD=$(BUILD) JOBS=$(JOBS) bash scripts/check_tidy.sh $(if $(filter all,$(TIDY)),--all) \
	  $(if $(filter since-clean,$(TIDY)),--since-clean)

clean:
	@rm -rf $(BUILD)
