#!/usr/bin/env python3
"""Summaries for `make run` (scripts/run_default.sh) from `shardscope run --json`.

  run_summary.py traced PLAN_JSON              runs to trace: non-sweep ones, each sweep's first
  run_summary.py untraced PLAN_JSON            the other runs, one a line
  run_summary.py merge PLAN_JSON A_JSON B_JSON the runs of A and B in the plan's order (JSON)
  run_summary.py traces RUN_JSON CPU_JSON      the trace files the runs wrote, one a line
  run_summary.py summary RUN_JSON CPU_JSON OUT TRACES TRACED_JSON [NOTE_FILE]
      writes OUT/run.txt (one line per run) and prints a short summary: one line
      per experiment (a sweep's runs folded into one), the claims' verdicts, and
      where the files went.
"""
import json
import re
import os
import sys


def fmt_s(v):
    if v is None or v != v or v == 0:
        return "-"
    v = float(f"{v:.3g}")  # round first, so 0.9996 s reads "1 s", not "1e+03 ms"
    for div, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
        if abs(v) >= div:
            return f"{v / div:.3g} {unit}"
    return f"{v * 1e9:.3g} ns"


def fmt_si(v, unit=""):
    if v is None or v != v:
        return "-"
    for div, p in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g} {p}{unit}"
    return f"{v:.3g} {unit}".rstrip()


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return []


def stripped(name):
    return re.sub(r"(_(seq|ep|tp|pp|sp|dp|batch)\d+)+$", "", name)


def group_runs(runs):
    """Runs by experiment as the config names it: a sweep's points ("x_seq128_ep8") share one."""
    counts = {}
    for r in runs:
        counts[stripped(r["experiment"])] = counts.get(stripped(r["experiment"]), 0) + 1
    groups = {}
    for r in runs:
        key = stripped(r["experiment"])
        groups.setdefault(key if counts[key] > 1 else r["experiment"], []).append(r)
    return groups


def du(paths):
    total = 0
    for p in paths:
        try:
            total += os.path.getsize(p)
            meta = os.path.join(os.path.dirname(p), os.path.basename(p).replace("trace_", "metadata_").rsplit(".", 1)[0] + ".json")
            if os.path.exists(meta):
                total += os.path.getsize(meta)
        except OSError:
            pass
    return total


def served_summary(path):
    """One line per served run of `shardscope run`'s text output, and its traces."""
    if not path or not os.path.exists(path):
        return [], []
    lines, traces, name, fig = [], [], None, {}

    def flush():
        if name:
            lines.append(f"  {name[:40]:40} TTFT p50 {fig.get('TTFT', ('-', '-'))[0]:>8} "
                         f"p99 {fig.get('TTFT', ('-', '-'))[1]:>8}   TPOT p50 "
                         f"{fig.get('TPOT', ('-', '-'))[0]:>8} p99 {fig.get('TPOT', ('-', '-'))[1]:>8}"
                         f"   {fig.get('rate', '-')}")

    with open(path) as f:
        for line in f:
            if not line.startswith(" ") and "(served" in line:
                flush()
                name, fig = line.split(" (served")[0], {}
            elif line.startswith("  TTFT ") or line.startswith("  TPOT "):
                # "  TTFT             35.2 ms / 32.3 ms / 54.2 ms / 77.1 ms": mean / p50 / p90 / p99
                parts = [p.strip() for p in line[6:].split("/")]
                if len(parts) == 4:
                    fig[line.split()[0]] = (parts[1], parts[3])
            elif line.startswith("  throughput "):
                fig["rate"] = line.split(",")[0].replace("  throughput ", "")
            elif line.startswith("  trace "):
                traces.append(line[len("  trace "):].strip())
    flush()
    return lines, traces


def main(argv):
    mode = argv[1]
    if mode in ("traced", "untraced"):
        plans = [{"experiment": p["experiment"]["name"]} for p in load(argv[2])]
        traced = {rs[0]["experiment"] for rs in group_runs(plans).values()}
        for p in plans:
            if (p["experiment"] in traced) == (mode == "traced"):
                print(p["experiment"])
        return 0
    if mode == "merge":
        order = {p["experiment"]["name"]: i for i, p in enumerate(load(argv[2]))}
        runs = load(argv[3]) + load(argv[4])
        json.dump(sorted(runs, key=lambda r: order.get(r["experiment"], len(order))), sys.stdout)
        return 0
    runs, cpu = load(argv[2]), load(argv[3])
    if mode == "traces":
        for r in runs + cpu:
            if r.get("trace"):
                print(r["trace"])
        return 0
    out, traces, traced = argv[4], argv[5], load(argv[6])
    trace_of = {r["experiment"]: r.get("trace") for r in traced}
    for r in runs:
        r["trace"] = trace_of.get(r["experiment"])
    note = ""
    if len(argv) > 7 and os.path.exists(argv[7]):
        with open(argv[7]) as f:
            note = f.read().strip()

    # The full table: one line per run.
    lines = [f"{'run':44} {'TTFT':>10} {'TPOT':>10} {'tokens/s':>12} {'mem/device':>11} "
             f"{'comm':>5} {'TTFT/bound':>10} {'steps':>7}"]
    for r in runs:
        bound = r.get("bound_ttft_s") or 0
        ratio = f"{r['ttft_s'] / bound:.2f}" if bound else "-"
        steps = f"{r.get('decode_steps_simulated', 0)}/{r.get('decode_steps', 0)}"
        lines.append(f"{r['experiment'][:44]:44} {fmt_s(r['ttft_s']):>10} {fmt_s(r['tpot_s']):>10} "
                     f"{fmt_si(r['tps']):>12} {fmt_si(r['memory_peak_bytes'], 'B'):>11} "
                     f"{r['comm_fraction'] * 100:4.0f}% {ratio:>10} {steps:>7}")
        lines.append(f"  trace {r.get('trace') or '-'}")
    for r in cpu:
        lines.append(f"{r['experiment'] + ' (cpu, measured)':44} {fmt_s(r['ttft_s']):>10} "
                     f"{fmt_s(r['tpot_s']):>10}")
        lines.append(f"  trace {r.get('trace') or '-'}")
    with open(os.path.join(out, "run.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")

    # The short summary: one line per experiment.
    groups = group_runs(runs)
    print(f"{len(runs)} simulated runs of {len(groups)} experiments"
          + (f", {len(cpu)} measured on CPU ranks" if cpu else "") + ":")
    print(f"  {'experiment':30} {'TTFT':>10} {'TPOT':>10} {'tokens/s':>10} {'mem/device':>10} {'TTFT/bound':>10}")

    def span(vals, f):
        vals = [v for v in vals if v is not None]
        if not vals:
            return "-"
        lo, hi = min(vals), max(vals)
        return f(lo) if lo == hi else f"{f(lo)}-{f(hi)}".replace(" ", "")

    for name, rs in groups.items():
        label = name if len(rs) == 1 else f"{name} ({len(rs)} runs)"
        ratios = [r["ttft_s"] / r["bound_ttft_s"] for r in rs if r.get("bound_ttft_s")]
        print(f"  {label[:30]:30} {span([r['ttft_s'] for r in rs], fmt_s):>10} "
              f"{span([r['tpot_s'] for r in rs], fmt_s):>10} {span([r['tps'] for r in rs], fmt_si):>10} "
              f"{span([r['memory_peak_bytes'] for r in rs], lambda v: fmt_si(v, 'B')):>10} "
              f"{span(ratios, lambda v: f'{v:.2f}'):>10}")
    for r in cpu:
        sim = next((s for s in runs if s["experiment"] == r["experiment"]), None)
        print(f"  {r['experiment'] + ' measured':30} {fmt_s(r['ttft_s']):>10} {fmt_s(r['tpot_s']):>10}"
              + (f"   (simulated: TTFT {fmt_s(sim['ttft_s'])}, TPOT {fmt_s(sim['tpot_s'])})" if sim else ""))
    if note:
        print("  " + note)

    verdicts = []
    for name, rs in groups.items():
        seen = set()
        for r in rs:
            for c in r.get("claims", []):
                key = (c["claim"], c["claimed"], c["possible"])
                if key in seen:
                    continue
                seen.add(key)
                verdict = "possible" if c["possible"] else "IMPOSSIBLE"
                sim = c.get("simulated")
                verdicts.append(f"  {name[:30]:30} {c['claim']:18} claimed {c['claimed']:<9.4g} {verdict:10} "
                                f"bound {c['bound']:<9.4g} simulated {'-' if sim is None else f'{sim:.4g}'}")
    if verdicts:
        print("Claims (claimed vs the physical bound and the simulation):")
        print("\n".join(verdicts[:40]))
        if len(verdicts) > 40:
            print(f"  ... {len(verdicts) - 40} more in {out}/check.txt")
    served, served_traces = served_summary(argv[8] if len(argv) > 8 else "")
    if served:
        print(f"Served workloads ({len(served)} runs; TTFT from arrival; every percentile in "
              f"{out}/serving.txt):")
        print("\n".join(served))
    written = [r["trace"] for r in runs + cpu if r.get("trace")] + served_traces
    print("Files:")
    print(f"  {out}/check.txt, {out}/plan.txt   full check and plan text (.json beside them)")
    print(f"  {out}/run.txt                  every run with its trace path")
    print(f"  {traces}/                       {len(written)} traces, {du(written) / 1e6:.0f} MB (open in ui.perfetto.dev)")
    if os.path.exists(os.path.join(out, "report.html")):
        print(f"Report: {os.path.abspath(os.path.join(out, 'report.html'))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
