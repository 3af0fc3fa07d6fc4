#!/usr/bin/env python3
"""Judges served and fixed-batch simulations against published end-to-end results.

Reads bench/serving/published.csv (engines' published benchmarks; sources in
SOURCES.md beside it), runs every experiment of validation.yaml once with
`shardscope run --json --no-trace`, and prints one Markdown table: source,
engine, case, metric, measured, simulated and the signed error
(simulated - measured) / measured. Summary: median and largest |error|, over
all rows and per metric family (TTFT, TPOT/ITL, throughput, speedup), then per
source (so that one source with many rows cannot hide another; printed only,
--check does not read them). With --check, exits 1 when an overall or family
median exceeds --median (default 0.10) or a row exceeds --max.

A row whose `known_off` column gives a reason (an understood defect of the
model, named in SOURCES.md) is printed with that reason and counted in every
median, but --max does not apply to it; --check fails instead when such a row
comes back within --max, so the reason is removed once the defect is fixed.

    bench/serving/validate.py --binary build/shardscope [--check] [--max 0.5]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILY = {"ttft_ms": "TTFT", "itl_ms": "TPOT", "latency_ms": "TPOT",
          "ttft_ms_p50": "TTFT", "itl_ms_p50": "TPOT", "e2e_ms": "TPOT",
          "output_tok_s": "tokens/s", "output_tok_s_per_node": "tokens/s",
          "input_tok_s_per_node": "tokens/s", "output_tok_s_per_gpu": "tokens/s",
          "speedup_output_tok_s_per_gpu": "speedup"}
# A ratio metric compares two experiments, written `ON/OFF` in the experiment
# column: the row's metric of ON divided by the same metric of OFF (e.g.
# speculative decoding on and off, for a source that publishes both).
RATIO_PREFIX = "speedup_"


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def simulate(binary, config, extra):
    out = subprocess.run([binary, "run", "--config", config, "--json", "--no-trace", *extra],
                         check=True, capture_output=True, text=True).stdout
    return {e["experiment"]: e for e in json.loads(out)}


def fixed_batch_metric(result, name):
    if name == "latency_ms":
        return result["run_s"] * 1e3
    if name == "ttft_ms":
        return result["ttft_s"] * 1e3
    if name == "output_tok_s":
        # A fixed batch's generated tokens per second over the whole run (prefill
        # included), as static-batch benchmarks report it: batch × tokens / run.
        # The batch is decode_tokens_per_s × tpot_s (= batch / tpot × tpot).
        if result["decode_steps"] == 0:
            raise ValueError("output_tok_s of a fixed batch needs tokens_to_generate > 1")
        batch = round(result["decode_tokens_per_s"] * result["tpot_s"])
        return batch * (result["decode_steps"] + 1) / result["run_s"]
    raise ValueError(f"metric {name} needs a served experiment")


def metric(result, name):
    served = result.get("served", False)
    if not served:
        return fixed_batch_metric(result, name)
    m = result["metrics"]
    if name == "ttft_ms":
        return m["ttft_s"]["mean"] * 1e3
    if name == "itl_ms":
        return m["tpot_s"]["mean"] * 1e3
    # Medians as sglang.bench_serving prints them: TTFT over requests; ITL over every
    # gap between two streamed tokens of any request, pooled (np.median of all ITLs).
    if name == "ttft_ms_p50":
        return m["ttft_s"]["p50"] * 1e3
    if name == "itl_ms_p50":
        return m["itl_s"]["p50"] * 1e3
    if name == "e2e_ms":
        return m["e2e_latency_s"]["mean"] * 1e3
    if name == "output_tok_s":
        return m["output_tokens_per_s"]
    if name == "output_tok_s_per_gpu":
        return m["output_tokens_per_s_per_device"]
    if name == "output_tok_s_per_node":
        return m["output_tokens_per_s_per_device"] * 8
    if name == "input_tok_s_per_node":
        return m["prompt_tokens_per_s"] / result["ranks"] * 8
    raise ValueError(f"unknown metric {name}")


def simulated(row, results):
    """The simulated figure of one published row. KeyError(name): an experiment
    the results lack; ValueError: the row's experiment column does not fit its
    metric."""
    ratio = row["metric"].startswith(RATIO_PREFIX)
    names = row["experiment"].split("/")
    if len(names) != (2 if ratio else 1):
        raise ValueError(f"metric {row['metric']} needs "
                         f"{'two experiments, ON/OFF' if ratio else 'one experiment'}, "
                         f"got {row['experiment']!r}")
    for name in names:
        if name not in results:
            raise KeyError(name)
    if not ratio:
        return metric(results[names[0]], row["metric"])
    base = row["metric"][len(RATIO_PREFIX):]
    return metric(results[names[0]], base) / metric(results[names[1]], base)


def summary(errors):
    """(name, rows, median, max) of |error| lists keyed by name, sorted by name."""
    return [(name, len(errs), statistics.median(errs), max(errs))
            for name, errs in sorted(errors.items())]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default="build/shardscope")
    ap.add_argument("--rows", default=os.path.join(HERE, "published.csv"))
    ap.add_argument("--config", default=os.path.join(HERE, "validation.yaml"))
    ap.add_argument("--calibration", help="passed to `shardscope run`")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--median", type=float, default=0.10)
    ap.add_argument("--max", type=float, default=0.25)
    args = ap.parse_args()
    extra = ["--calibration", args.calibration] if args.calibration else []
    results = simulate(args.binary, args.config, extra)
    rows = read_rows(args.rows)
    errors = {}
    by_source = {}
    failed = False
    print("| source | engine | case | metric | measured | simulated | error | known off |")
    print("|---|---|---|---|---:|---:|---:|---|")
    for row in rows:
        try:
            sim = simulated(row, results)
        except KeyError as e:
            sys.exit(f"{args.rows}: row {row['id']}: experiment {e.args[0]!r} "
                     f"is not in {args.config}")
        except ValueError as e:
            sys.exit(f"{args.rows}: row {row['id']}: {e}")
        measured = float(row["measured"])
        err = sim / measured - 1
        errors.setdefault(FAMILY[row["metric"]], []).append(abs(err))
        by_source.setdefault(row["source"], []).append(abs(err))
        known_off = (row.get("known_off") or "").strip()
        if known_off and abs(err) <= args.max:
            print(f"{args.rows}: row {row['id']} is listed as known off but is within "
                  f"{args.max:.0%}: remove its known_off reason", file=sys.stderr)
            failed = True
        if not known_off and abs(err) > args.max:
            failed = True
        print(f"| {row['source']} | {row['engine']} | {row['case']} | {row['metric']} | "
              f"{measured:.4g} | {sim:.4g} | {err:+.1%} | {known_off} |")
    every = [e for v in errors.values() for e in v]
    print()
    for name, n, med, worst in summary({"all": every}) + summary(errors):
        print(f"{name}: {n} rows, median |error| {med:.1%}, max {worst:.1%}")
        failed |= med > args.median
    print()
    for name, n, med, worst in summary(by_source):
        print(f"source {name}: {n} rows, median |error| {med:.1%}, max {worst:.1%}")
    if args.check and failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
