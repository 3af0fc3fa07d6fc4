#!/usr/bin/env python3
"""Expected values for the NCCL profiler importers' golden tests on
../shared/testdata/nccl_profiler/, computed independently of the C++ code from the rules
of docs/trace_format.md ("Foreign traces: NCCL profiler"). Writes
nccl_profiler_expected.json beside this script.

Usage: python3 nccl_profiler_expected.py [path/to/shared/testdata/nccl_profiler]
"""
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "../../../../shared/testdata/nccl_profiler")
EXAMPLE = "nccl_example_plugin_point_to_point_1737594_12715772615376301750_1.json"
JSONL = ["minimal_plugin_allreduce_4rank_a.jsonl", "minimal_plugin_allreduce_4rank_b.jsonl"]
SIZES = {"ncclFloat32": 4, "ncclFloat16": 2, "ncclBfloat16": 2, "ncclInt32": 4, "ncclInt8": 1}


def us_to_ns(text):
    """Microseconds text -> ns: exact to three decimals, else the nearest ns of the double."""
    whole, _, frac = text.partition(".")
    if len(frac) <= 3:
        return int(whole) * 1000 + int((frac + "000")[:3])
    return int(math.floor(float(text) * 1000 + 0.5))


def example(path):
    text = open(path).read()
    # The plugin prints pointers and enum names bare; quote them.
    text = re.sub(r":\s*(0x[0-9a-fA-F]+|\(nil\)|nccl[A-Za-z0-9_]+)", r': "\1"', text)
    # Keep ts as text for exact ns.
    text = re.sub(r'"ts": ([0-9.]+)', r'"ts": "\1"', text)
    events = [e for e in json.loads(text) if e]
    opened, calls = {}, []
    for e in events:
        if e["cat"] not in ("P2P", "COLL"):
            continue
        key = (e["cat"], e["id"])
        if e["ph"] == "b":
            opened[key] = e
        else:
            b = opened.pop(key)
            calls.append((b, e))
    ranks = {}
    for b, e in calls:
        a = b["args"]
        r = ranks.setdefault(str(a["Rank"]), {"ops": 0, "send_bytes_to": {}, "dur_ns": []})
        r["ops"] += 1
        r["dur_ns"].append(us_to_ns(e["ts"]) - us_to_ns(b["ts"]))
        if b["name"] == "Send":
            peer = str(a["Peer"])
            r["send_bytes_to"][peer] = r["send_bytes_to"].get(peer, 0) + a["Count"] * SIZES[a["Datatype"]]
    return {"ranks": ranks, "events": len(events)}


def jsonl(path):
    recs = [json.loads(line) for line in open(path) if line.strip()]
    nranks = {r["commId"]: r["details"]["nranks"] for r in recs
              if r.get("type") == "ProfilerLifecycle" and r.get("func") == "ProfilerInit"}
    api_parent, launch, kernels, stop_timer, channels = {}, {}, {}, {}, {}
    colls = []
    for r in recs:
        t = r.get("type")
        if r.get("recordType") == "state" and r.get("name") == "KernelChStop":
            stop_timer[r["eventAddr"]] = r["pTimer"]
        elif t == "ncclProfileCollApi":
            api_parent[r["eventAddr"]] = r["parentObj"]
        elif t == "ncclProfileKernelLaunch":
            launch[(r["commId"], r["rank"], r["parentObj"])] = r["extCorrId"]
        elif t == "ncclProfileColl":
            colls.append(r)
        elif t == "ncclProfileKernelCh":
            channels.setdefault(r["parentObj"], []).append(
                (r["details"]["pTimer"], stop_timer[r["eventAddr"]]))
        elif t == "KERNEL":
            kernels[r["extCorrId"]] = r
    raw = open(path).read()
    ranks = {}
    for c in colls:
        corr = launch[(c["commId"], c["rank"], api_parent[c["parentObj"]])]
        # Exact start from the text: the KERNEL record of that extCorrId.
        m = re.search(r'"extCorrId":%d,[^\n]*?"start":\{"ts":([0-9.]+)' % corr, raw)
        ts = us_to_ns(m.group(1))
        ch = channels[c["eventAddr"]]
        dur = max(s for _, s in ch) - min(a for a, _ in ch)
        d = c["details"]
        n = nranks[c["commId"]]
        nbytes = d["count"] * SIZES[d["dtype"]]
        r = ranks.setdefault(str(c["rank"]), {"ops": 0, "ts_ns": [], "dur_ns": [], "bytes": [],
                                              "seq": [], "ring_bytes_to_next": 0})
        r["ops"] += 1
        r["ts_ns"].append(ts)
        r["dur_ns"].append(dur)
        r["bytes"].append(nbytes)
        r["seq"].append(d["seq"])
        r["ring_bytes_to_next"] += 2 * (n - 1) / n * nbytes  # ring all-reduce, group 0..n-1
    return {"ranks": ranks, "nranks": list(nranks.values())[0]}


def main():
    base = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    result = {"example": example(os.path.join(base, EXAMPLE))}
    for name in JSONL:
        result[name] = jsonl(os.path.join(base, name))
    out = os.path.join(HERE, "nccl_profiler_expected.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
