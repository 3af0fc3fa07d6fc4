#!/usr/bin/env python3
"""Judges `shardscope collective` against published measurements.

Reads bench/collectives/published.csv (nccl-tests tables and DeepEP's
dispatch/combine tables; sources in SOURCES.md beside it), runs the model for
each row and prints one Markdown table: source, case, measured, simulated and
the signed error of the time (a bandwidth figure is turned into time: the error
of time is measured bandwidth / simulated bandwidth - 1). Summary over the
held-out rows (role held_out): median and largest |error|. With --check, exits
1 when the median exceeds 10 % or any held-out row 25 % (the targets of
docs/fidelity.md "Collectives").

    bench/collectives/validate.py --binary build/shardscope [--check]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MEDIAN_TARGET = 0.10
MAX_TARGET = 0.25


def read_rows(path: str) -> list:
    with open(path, newline="") as f:
        lines = [line for line in f if not line.startswith("#")]
    return list(csv.DictReader(lines))


def simulate(binary, row):
    args = [binary, "collective", "--hardware", row["hardware"], "--nodes", row["nodes"],
            "--ranks", row["ranks"], "--op", row["op"], "--format", "json"]
    if row["op"] in ("dispatch", "combine"):
        args += ["--kernel", row["kernel"], "--tokens", row["tokens"]]
        if row["group_limit"]:
            args += ["--group-limit", row["group_limit"]]
    else:
        args += ["--sizes", f"{row['size']}:{row['size']}", "--algorithm", row["algorithm"]]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["rows"][0]


def case_text(row, sim):
    if row["op"] in ("dispatch", "combine"):
        return f"{row['op']} {row['kernel']} EP{row['ranks']}, {row['tokens']} tokens"
    size = int(row["size"])
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            size_text = f"{size / scale:g} {unit}"
            break
    else:
        size_text = f"{size} B"
    return (f"{row['op']} {row['ranks']} GPUs ({row['nodes']} nodes), {size_text}, "
            f"{row['algorithm']} → {sim['algorithm']}/{sim['protocol']}")


def judge(binary, rows):
    results = []
    for row in rows:
        sim = simulate(binary, row)
        measured = float(row["measured"])
        if row["unit"] == "us":
            simulated = sim["time_us"]
            error = simulated / measured - 1
        else:
            simulated = sim[row["unit"]]
            error = measured / simulated - 1
        results.append((row, sim, measured, simulated, error))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="the shardscope binary")
    parser.add_argument("--data", default=os.path.join(HERE, "published.csv"))
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--max", type=float, default=MAX_TARGET,
                        help="largest |error| a held-out row may have with --check")
    a = parser.parse_args()
    results = judge(a.binary, read_rows(a.data))
    print("| source | case | role | measured | simulated | error of time |")
    print("|---|---|---|---:|---:|---:|")
    for row, sim, measured, simulated, error in results:
        unit = "µs" if row["unit"] == "us" else row["unit"].replace("_gb_s", " GB/s")
        print(f"| {row['source']} | {case_text(row, sim)} | {row['role']} | "
              f"{measured:.4g} {unit} | {simulated:.4g} {unit} | {error:+.1%} |")
    held = [abs(e) for row, _, _, _, e in results if row["role"] == "held_out"]
    fit = [abs(e) for row, _, _, _, e in results if row["role"] == "fit"]
    median, worst = statistics.median(held), max(held)
    print(f"\nheld-out rows: {len(held)}, median |error| {median:.1%}, max {worst:.1%} "
          f"(targets {MEDIAN_TARGET:.0%}, {MAX_TARGET:.0%}); fitted rows: {len(fit)}, "
          f"median |error| {statistics.median(fit):.1%}")
    if a.check and (median > MEDIAN_TARGET or worst > a.max):
        print("collective validation: target missed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
