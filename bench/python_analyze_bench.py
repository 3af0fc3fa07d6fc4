#!/usr/bin/python3
"""shardscope.analyze (Python) against `shardscope analyze` (command line) on the same
trace: the median wall time of each over N runs, and their ratio (the Python issue's floor:
within 10 %). Usage:

    PYTHONPATH=build/python /usr/bin/python3 bench/python_analyze_bench.py [BUILD] [RUNS]

The trace is the benchmarks' synthetic one (build/bench: write_synthetic_trace;
$SHARDSCOPE_BENCH_TRACE_MB, default 1100 MB), or $SHARDSCOPE_BENCH_TRACE when set.
"""

import os
import statistics
import subprocess
import sys
import time

build = sys.argv[1] if len(sys.argv) > 1 else "build"
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
sys.path.insert(0, os.path.join(build, "python"))
import shardscope  # noqa: E402

trace = os.environ.get("SHARDSCOPE_BENCH_TRACE") or subprocess.run(
    [os.path.join(build, "bench", "write_synthetic_trace")], check=True, capture_output=True,
    text=True).stdout.strip()
size = os.path.getsize(trace)


def cli():
    subprocess.run([os.path.join(build, "shardscope"), "analyze", trace, "--format", "json"],
                   check=True, stdout=subprocess.DEVNULL)


def python():
    df = shardscope.analyze(trace)
    assert len(df) > 0


times = {"cli": [], "python": []}
for i in range(runs):  # interleaved, so drift in the machine's load hits both alike
    for name, f in (("cli", cli), ("python", python)):
        t0 = time.perf_counter()
        f()
        times[name].append(time.perf_counter() - t0)
med = {k: statistics.median(v) for k, v in times.items()}
print(f"trace {trace}: {size / 1e9:.2f} GB, {runs} runs each")
for k in ("cli", "python"):
    print(f"  {k:7s} median {med[k]:.3f} s ({size / med[k] / 1e9:.2f} GB/s); "
          f"all: {', '.join(f'{t:.3f}' for t in times[k])}")
print(f"  python / cli = {med['python'] / med['cli']:.3f}")
