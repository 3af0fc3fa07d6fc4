#!/usr/bin/env python3
"""Expected values for the XSpace importer's golden test on
../shared/testdata/xla/tpu_inference_2.xplane.pb, computed independently of the C++ code:
a minimal protobuf wire decoder and the rules of docs/trace_format.md ("Foreign traces:
XLA/TPU"). Writes xla_tpu_inference_2_expected.json beside this script.

Usage: python3 xla_tpu_inference_2_expected.py [path/to/tpu_inference_2.xplane.pb]
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "../../../../shared/testdata/xla/tpu_inference_2.xplane.pb")


def varint(b, i):
    r, s = 0, 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def fields(b):
    """(field number, value) pairs of one message; LEN values as bytes."""
    i = 0
    while i < len(b):
        tag, i = varint(b, i)
        f, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield f, v


def grouped(b):
    out = {}
    for f, v in fields(b):
        out.setdefault(f, []).append(v)
    return out


def to_ns(ps):
    """ps -> ns, rounding halves up (docs/trace_format.md)."""
    return (ps + 500) // 1000


def shape_bytes(shape):
    sizes = {"f32": 4, "bf16": 2, "f16": 2, "s32": 4, "u32": 4, "s8": 1, "u8": 1, "pred": 1}
    total = 0
    for t, dims in re.findall(r"([a-z0-9]+)\[([0-9,]*)\]", shape):
        n = 1
        for d in filter(None, dims.split(",")):
            n *= int(d)
        total += n * sizes[t]
    return total


def iota_groups(spec):
    """[G,S]<=[a,b]T(1,0) for two dims (all this trace uses)."""
    m = re.fullmatch(r"\[(\d+),(\d+)\]<=\[(\d+),(\d+)\]T\(1,0\)", spec)
    g, s, a, b = map(int, m.groups())
    transposed = [r * b + c for c in range(b) for r in range(a)]  # column-major read of a×b
    return [transposed[k * s:(k + 1) * s] for k in range(g)]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    space = grouped(open(path, "rb").read())
    result = {"devices": {}, "ignored_events": {}, "total_xevents": 0}
    for plane_bytes in space[1]:
        plane = grouped(plane_bytes)
        name = plane[2][0].decode()
        stat_names = {}
        for entry in plane.get(5, []):
            e = grouped(entry)
            stat_names[e[1][0]] = grouped(e[2][0])[2][0].decode()
        meta = {}
        for entry in plane.get(4, []):
            e = grouped(entry)
            m = grouped(e[2][0])
            stats = {}
            for st in m.get(5, []):
                s = grouped(st)
                key = stat_names[s[1][0]]
                if 4 in s:  # int64
                    v = s[4][0]
                    stats[key] = v - (1 << 64) if v >= 1 << 63 else v
                elif 3 in s:
                    stats[key] = s[3][0]
                elif 5 in s:
                    stats[key] = s[5][0].decode()
            meta[e[1][0]] = (m.get(2, [b""])[0].decode(), m.get(4, [b""])[0].decode(), stats)
        lines = {}
        for line_bytes in plane.get(3, []):
            line = grouped(line_bytes)
            base = line.get(3, [0])[0]
            evs = []
            for ev_bytes in line.get(4, []):
                ev = grouped(ev_bytes)
                start = base + to_ns(ev.get(2, [0])[0])
                end = base + to_ns(ev.get(2, [0])[0] + ev.get(3, [0])[0])
                evs.append((start, end, meta[ev[1][0]]))
            lines[line.get(2, [b""])[0].decode()] = evs
        n_events = sum(len(v) for v in lines.values())
        result["total_xevents"] += n_events
        m = re.fullmatch(r"/device:TPU:(\d+)", name)
        if not m:
            if n_events:
                result["ignored_events"]["XLA plane \"%s\"" % name] = n_events
            continue
        rank = int(m.group(1))
        for lname, evs in lines.items():
            if lname not in ("XLA Ops", "Async XLA Ops", "Steps") and evs:
                key = "XLA line \"%s\"" % lname
                result["ignored_events"][key] = result["ignored_events"].get(key, 0) + len(evs)
        dev = {"xla_ops": 0, "compute_ops": 0, "other_ops": 0, "all_reduce_ops": 0,
               "all_reduce_total_ns": 0, "all_reduce_bytes_total": 0, "all_reduce_groups": [],
               "flops_total": 0, "bytes_accessed_total": 0, "async_ops": 0, "steps": 0,
               "comm_intervals_ns": []}
        for start, end, (hlo, display, stats) in lines.get("XLA Ops", []):
            dev["xla_ops"] += 1
            opcode = re.match(r"%\S+ = (?:\([^=]*?\)|\S+) ([a-z][a-z0-9_-]*)\(", hlo).group(1)
            dev["flops_total"] += stats.get("flops", 0)
            dev["bytes_accessed_total"] += stats.get("bytes_accessed", 0)
            if opcode == "all-reduce":
                dev["all_reduce_ops"] += 1
                dev["all_reduce_total_ns"] += end - start
                operand = re.search(r"all-reduce\((.*?) %", hlo).group(1)
                dev["all_reduce_bytes_total"] += shape_bytes(operand)
                spec = re.search(r"replica_groups=(\[[^\]]*\]<=\[[^\]]*\]T\([^)]*\))", hlo).group(1)
                group = [g for g in iota_groups(spec) if rank in g][0]
                dev["all_reduce_groups"].append(group)
                dev["comm_intervals_ns"].append([start, end])
            elif opcode in ("copy-start", "copy-done"):
                dev["other_ops"] += 1
            else:
                dev["compute_ops"] += 1
        dev["async_ops"] = len(lines.get("Async XLA Ops", []))
        dev["steps"] = len(lines.get("Steps", []))
        result["devices"][str(rank)] = dev
    out = os.path.join(HERE, "xla_tpu_inference_2_expected.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
