#!/usr/bin/env python3
"""Expected values for the Kineto importer's golden tests (kineto_importer_test.cc).

Reads the real Kineto traces under ../shared/testdata/kineto with Python's json module (times
as exact decimals) and applies the import rules of docs/trace_format.md ("Foreign traces:
Kineto") independently of the C++ code: GPU activities become ops of the rank in
distributedInfo; communication kernels are recognised by name or args; their collective comes
from the kernel's args, else from the host op that launched them (by External id, else the
innermost enclosing collective call on the launching thread), else from the kernel name; bytes
are elements x dtype size in the nccl-tests convention. Steps are ProfilerStep#N annotations,
else vLLM execute_* annotations, else SGLang run_batch, numbered by start. Busy, compute and
comm times are the lengths of interval unions, as the analyzer defines them.

Run from the repository root:  python3 tests/data/real_traces/kineto_expected.py
It writes tests/data/real_traces/kineto_expected.json.
"""
import decimal
import glob
import gzip
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("SHARDSCOPE_SHARED", os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "shared"))) + "/testdata/kineto"

DTYPE = {'Float': 4, 'BFloat16': 2, 'Half': 2, 'Double': 8, 'Byte': 1, 'Char': 1, 'Short': 2,
         'Int': 4, 'Long': 8, 'Bool': 1, 'long': 8,
         # "Input type" of a host op recorded with shapes: C++ type names
         'float': 4, 'c10::BFloat16': 2, 'c10::Half': 2, 'double': 8, 'long int': 8, 'int': 4}
GPU_CATS = {'kernel': 'kernel', 'Kernel': 'kernel', 'gpu_memcpy': 'other', 'gpu_memset': 'other',
            'Memcpy': 'other', 'Memset': 'other'}
RUNTIME_CATS = {'cuda_runtime', 'cuda_driver', 'Runtime', 'Driver'}


def ns(us):
    """Microseconds (a Decimal or int from the JSON) to integer nanoseconds."""
    return int((decimal.Decimal(us) * 1000).to_integral_value(decimal.ROUND_HALF_EVEN))


def collective_of_pytorch_name(name):
    n = name.strip()
    for p in ('nccl:', 'c10d::', 'gloo:', 'rccl:'):
        if n.startswith(p):
            n = n[len(p):]
            break
    n = re.split(r'[ (]', n)[0].lower().strip('_')
    changed = True
    while changed:
        changed = False
        for suffix in ('_coalesced', '_into_tensor', '_tensor', '_base', '_single'):
            if n.endswith(suffix) and len(n) > len(suffix):
                n = n[:-len(suffix)]
                changed = True
    n = n.replace('_', '')
    table = {'allreduce': 'all_reduce', 'allgather': 'all_gather', 'reducescatter': 'reduce_scatter',
             'alltoall': 'all_to_all', 'alltoallv': 'all_to_all', 'broadcast': 'broadcast',
             'send': 'send', 'recv': 'recv', 'recvanysource': 'recv'}
    if n in table:
        return table[n]
    if n in ('reduce', 'gather', 'scatter', 'barrier', 'wait', 'coalesced', 'monitoredbarrier'):
        return 'none'
    return None


def kernel_name_collective(name):
    """(is a comm kernel, collective the name says or None)."""
    n = name[5:] if name.startswith('void ') else name
    for k in ('cross_device_reduce_1stage', 'cross_device_reduce_2stage', 'quickreduce::allreduce',
              'allreduce_fusion_kernel', 'oneShotAllReduceKernel', 'twoShotAllReduceKernel'):
        if k in n:
            return True, 'all_reduce'
    m = re.match(r'(ncclKernel_|ncclDevKernel_|mscclKernel_|rcclKernel_|ncclDevFunc_)([A-Za-z]+)', n)
    if m:
        op = m.group(2)
        return True, {'AllReduce': 'all_reduce', 'AllGather': 'all_gather',
                      'ReduceScatter': 'reduce_scatter', 'Broadcast': 'broadcast',
                      'AllToAll': 'all_to_all', 'AlltoAll': 'all_to_all', 'Send': 'send',
                      'Recv': 'recv'}.get(op)
    return n.startswith('nccl') or n.startswith('rccl'), None


def rank_list(s):
    if not isinstance(s, str):
        return None
    s = s.strip()
    if not (s.startswith('[') and s.endswith(']')) or '...' in s:
        return None
    inner = [t.strip() for t in s[1:-1].split(',')]
    inner = [t for t in inner if t]
    return [int(t) for t in inner]


def shape_elems(args):
    """Elements of the host op's first input ("Input Dims"), or -1 (scalar, none)."""
    dims = args.get('Input Dims') or []
    if not dims or not dims[0]:
        return -1
    if not all(isinstance(d, int) for d in dims[0]):
        return -1  # a tensor list: not one message
    n = 1
    for d in dims[0]:
        n *= d
    return n


def message_bytes(args, coll, group_size):
    inn = args.get('In msg nelems', -1)
    out = args.get('Out msg nelems', -1)
    dtype = args.get('dtype')
    if inn < 0 and out < 0 and shape_elems(args) >= 0:  # sized by the host op's shapes
        inn = shape_elems(args)
        if dtype is None:
            dtype = (args.get('Input type') or [None])[0]
    size = DTYPE.get(dtype, 0)
    if coll == 'all_gather':
        elems = out if out >= 0 else (inn * group_size if inn >= 0 and group_size > 0 else -1)
    elif coll == 'reduce_scatter':
        elems = inn if inn >= 0 else (out * group_size if out >= 0 and group_size > 0 else -1)
    elif coll == 'recv':
        elems = out if out >= 0 else inn
    else:
        elems = inn if inn >= 0 else out
    if size == 0 or elems < 0:
        return None
    return elems * size


def union_length(intervals):
    total, end = 0, None
    start = None
    for b, e in sorted(intervals):
        if e <= b:
            continue
        if end is None or b > end:
            if end is not None:
                total += end - start
            start, end = b, e
        else:
            end = max(end, e)
    if end is not None:
        total += end - start
    return total


def analyse(path):
    opener = gzip.open if path.endswith('.gz') else open
    with opener(path, 'rt') as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    dist = doc.get('distributedInfo', {})
    rank = dist.get('rank')
    world = dist.get('world_size')
    base = int(doc.get('baseTimeNanoseconds', 0))
    pg = {str(p['pg_name']): p['ranks'] for p in dist.get('pg_config', [])}
    events = doc['traceEvents']
    runtime = {}
    rpc_by_ext = {}
    host_comms = []  # (tid, ts, end, collective or None, args or None)
    steps = []  # (step, ts, dur): ProfilerStep#N
    vllm_steps, sglang_steps = [], []  # (ts, dur), numbered by start order
    gpu = []
    for e in events:
        if e.get('ph') != 'X':
            continue
        cat = e.get('cat', '')
        args = e.get('args', {})
        if cat in GPU_CATS:
            gpu.append(e)
        elif cat in RUNTIME_CATS and 'correlation' in args:
            runtime[args['correlation']] = e
        elif cat == 'python_function' and (e['name'].endswith(': run_batch') or e['name'] == 'run_batch'):
            sglang_steps.append((ns(e['ts']), ns(e['dur'])))
        elif cat in ('cpu_op', 'user_annotation', 'Operator'):
            name = e['name']
            if name.startswith('ProfilerStep#'):
                steps.append((int(name[len('ProfilerStep#'):]), ns(e['ts']), ns(e['dur'])))
            elif name.startswith('execute_') and cat == 'user_annotation':
                vllm_steps.append((ns(e['ts']), ns(e['dur'])))
            elif name.startswith('run_batch'):
                sglang_steps.append((ns(e['ts']), ns(e['dur'])))
            elif name == 'record_param_comms':
                has = any(k in args for k in ('Collective name', 'In msg nelems', 'Out msg nelems'))
                has = has or shape_elems(args) > 0
                if has:
                    rpc_by_ext[args.get('External id')] = (e['tid'], ns(e['ts']),
                                                           ns(e['ts']) + ns(e['dur']), args)
                    host_comms.append((e['tid'], ns(e['ts']), ns(e['ts']) + ns(e['dur']),
                                       collective_of_pytorch_name(args.get('Collective name', '')),
                                       args))
            elif name.startswith('nccl:') or name.startswith('c10d::'):
                c = collective_of_pytorch_name(name)
                if c is not None:
                    host_comms.append((e['tid'], ns(e['ts']), ns(e['ts']) + ns(e['dur']), c,
                                       args if shape_elems(args) > 0 else None))
    ops = []
    first_collective = None  # (ts, end, collective) of the earliest all-reduce/-gather, reduce-scatter
    by_coll = {}
    comm_bytes = 0
    comm_with_bytes = 0
    for e in gpu:
        args = e.get('args', {})
        kind = GPU_CATS[e['cat']]
        ts, dur = ns(e['ts']), ns(e['dur'])
        comm, name_coll = (False, None)
        if kind == 'kernel':
            comm, name_coll = kernel_name_collective(e['name'])
            comm = comm or 'Collective name' in args
        category = 'comm' if comm else ('compute' if kind == 'kernel' else 'other')
        ops.append((ts, ts + dur, category))
        if not comm:
            continue
        cargs = args if any(k in args for k in ('Collective name', 'In msg nelems')) else None
        coll = collective_of_pytorch_name(cargs['Collective name']) if cargs and 'Collective name' in cargs else None
        if cargs is None or 'Collective name' not in cargs:
            host_coll, host_args = None, None
            rt = runtime.get(args.get('correlation'))
            if rt is not None:
                ext = rt['args'].get('External id')
                t = ns(rt['ts'])
                by_ext = rpc_by_ext.get(ext)
                if by_ext is not None and by_ext[0] == rt['tid'] and by_ext[1] <= t <= by_ext[2]:
                    host_args = by_ext[3]
                    host_coll = collective_of_pytorch_name(host_args.get('Collective name', ''))
                else:
                    enclosing = [h for h in host_comms if h[0] == rt['tid'] and h[1] <= t <= h[2]]
                    enclosing.sort(key=lambda h: -h[1])  # innermost first
                    for h in enclosing:
                        if host_coll is None and h[3] is not None:
                            host_coll = h[3]
                        if host_args is None and h[4] is not None:
                            host_args = h[4]
            if cargs is None:
                cargs = host_args
            if coll is None and cargs is not None and 'Collective name' in cargs:
                coll = collective_of_pytorch_name(cargs['Collective name'])
            if coll is None:
                coll = host_coll
        if coll is None:
            coll = name_coll
        key = coll if coll is not None else 'unknown'
        by_coll[key] = by_coll.get(key, 0) + 1
        # Only collectives whose members finish together measure the clocks.
        if coll in ('all_reduce', 'all_gather', 'reduce_scatter'):
            if first_collective is None or ts < first_collective[0]:
                first_collective = (ts, ts + dur, coll)
        if coll in (None, 'none') or cargs is None:
            continue
        group = rank_list(cargs.get('Process Group Ranks'))
        if group is None and str(cargs.get('Process Group Name')) in pg:
            group = pg[str(cargs.get('Process Group Name'))]
        gs = cargs.get('Group size', len(group) if group else -1)
        b = message_bytes(cargs, coll, gs)
        if b is not None:
            comm_bytes += b
            comm_with_bytes += 1
    if not steps:
        marks = sorted(vllm_steps) or sorted(sglang_steps)
        steps = [(i, ts, dur) for i, (ts, dur) in enumerate(marks)]
    busy = union_length([(b, e) for b, e, _ in ops])
    compute = union_length([(b, e) for b, e, c in ops if c == 'compute'])
    comm_time = union_length([(b, e) for b, e, c in ops if c == 'comm'])
    starts = [b for b, _, _ in ops] + [s[1] for s in steps]
    ends = [e for _, e, _ in ops] + [s[1] + s[2] for s in steps]
    steps.sort(key=lambda s: s[1])
    return {
        'rank': rank,
        'world_size': world,
        'base_time_ns': base,
        'gpu_ops': len(ops),
        'comm_kernels': sum(1 for o in ops if o[2] == 'comm'),
        'comm_by_collective': by_coll,
        'comm_bytes': comm_bytes,
        'comm_ops_with_bytes': comm_with_bytes,
        'busy_ns': busy,
        'compute_ns': compute,
        'comm_ns': comm_time,
        'wall_ns': max(ends) - min(starts),
        'steps': [{'step': s[0], 'ts_ns': base + s[1], 'dur_ns': s[2]} for s in steps],
        'first_op_ts_ns': base + min(b for b, _, _ in ops),
        'first_collective': None if first_collective is None else
            {'end_ns': base + first_collective[1], 'collective': first_collective[2]},
    }


def main():
    out = {}
    files = sorted(glob.glob(os.path.join(DATA, '*.json.gz')))
    files += sorted(glob.glob(os.path.join(DATA, 'param_dlrm_8rank', '*.json')))
    for path in files:
        out[os.path.relpath(path, DATA)] = analyse(path)
    # The 8-rank set: the spread of the end of the first collective every rank ran.
    dlrm = [v for k, v in out.items() if k.startswith('param_dlrm_8rank/')]
    kinds = {v['first_collective']['collective'] for v in dlrm}
    ends = [v['first_collective']['end_ns'] for v in dlrm]
    out['sets'] = {'param_dlrm_8rank': {
        'ranks': sorted(v['rank'] for v in dlrm),
        'first_collective': kinds.pop() if len(kinds) == 1 else None,
        'collective_end_spread_ns': max(ends) - min(ends),
        'busy_ns_max': max(v['busy_ns'] for v in dlrm),
        'comm_ns_sum': sum(v['comm_ns'] for v in dlrm),
        'comm_bytes_sum': sum(v['comm_bytes'] for v in dlrm),
        'comm_ops_with_bytes': sum(v['comm_ops_with_bytes'] for v in dlrm),
    }}
    target = os.path.join(HERE, 'kineto_expected.json')
    with open(target, 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write('\n')
    print('wrote', target, len(out), 'files')


if __name__ == '__main__':
    main()
