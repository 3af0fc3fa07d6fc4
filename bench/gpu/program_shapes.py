#!/usr/bin/env python3
"""The GEMM shapes our Programs produce, for bench/gpu/gpu_ops_bench.

Simulates the experiments of a config for one decode step (`shardscope run
--decode-steps 1`), reads rank 0's compute ops from each trace and recovers every
GEMM's n × k from its FLOPs and bytes (the Program's convention, src/program:
flops 2mnk (+mn bias), bytes read (mk + kn)·s (+n·s bias), written mn·s):
k = flops / (2 · written / s), m + n = read / (s · k), m · n = written / s; n is
the larger root. Routed-expert GEMMs (gate_up) take their token count from
`expert_tokens`; their down projection is the transposed GLU half (n = h, k = f).
Writes one CSV row per distinct (kind, n, k): kind,n,k,source.

Usage: program_shapes.py SHARDSCOPE CONFIG OUT.csv
"""
import csv
import glob
import json
import math
import os
import subprocess
import sys
import tempfile

GEMM_KINDS = {"qkv_proj", "q_proj", "kv_proj", "kv_up_proj", "out_proj", "router",
              "shared_expert", "ffn_up", "ffn_down", "lm_head", "expert_gemm"}
BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}


def plain_gemm(flops, read, written, s):
    q = written / s  # m·n
    if q <= 0 or flops <= 0:
        return None
    k = flops / 2 / q
    total = read / (s * k)  # m + n (the bias adds < 1 row)
    disc = max(total * total - 4 * q, 0.0)
    n = round((total + math.sqrt(disc)) / 2)
    k = round(k)
    # Keep only figures that are exactly a GEMM's (ops whose FLOPs or bytes also
    # count other work, e.g. a router's softmax, are not).
    m = round(q / n) if n > 0 else 0
    if m < 1 or m * n * s != written or flops - 2 * m * n * k not in (0, m * n):
        return None
    if read - (m * k + n * k) * s not in (0, n * s):
        return None
    return n, k


def expert_gemm(args, s):
    tokens = sum(args.get("expert_tokens", []))
    experts = len([t for t in args.get("expert_tokens", []) if t > 0])
    if tokens <= 0 or experts <= 0:
        return None
    nk = args["flops"] / 2 / tokens
    # read = tokens·k·s + experts·n·k·s (weights of the experts that got tokens)
    k = (args["bytes_read"] - experts * nk * s) / (tokens * s)
    if k <= 0:
        return None
    return round(nk / k), round(k)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    binary, config, out = sys.argv[1:]
    shapes = {}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([binary, "run", "--config", config, "--decode-steps", "1", "--out", tmp],
                       check=True, stdout=subprocess.DEVNULL)
        for path in sorted(glob.glob(os.path.join(tmp, "**", "*.trace"), recursive=True)):
            with open(path) as f:
                trace = json.load(f)
            source = trace["otherData"]["experiment"]["name"]
            for e in trace["traceEvents"]:
                args = e.get("args", {})
                kind = args.get("kind")
                if e.get("pid") != 0 or e.get("cat") != "compute" or kind not in GEMM_KINDS:
                    continue
                s = BYTES.get(args.get("dtype", "bf16"), 2)
                if kind == "expert_gemm" and "expert_tokens" in args:
                    nk = expert_gemm(args, s)
                    if nk:  # gate_up (n = 2f, k = h) and its down (n = h, k = f)
                        shapes.setdefault(("expert_gemm", nk[0], nk[1]), source)
                        shapes.setdefault(("expert_gemm", nk[1], nk[0] // 2), source)
                    continue
                if kind == "expert_gemm":
                    continue
                nk = plain_gemm(args.get("flops", 0), args.get("bytes_read", 0),
                                args.get("bytes_written", 0), s)
                if nk and nk[0] > 1 and nk[1] > 1:
                    shapes.setdefault((kind, nk[0], nk[1]), source)
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kind", "n", "k", "source"])
        for (kind, n, k), source in sorted(shapes.items()):
            w.writerow([kind, n, k, source])
    print(f"{len(shapes)} GEMM shapes -> {out}")


if __name__ == "__main__":
    main()
