"""ShardScope's functions for notebooks and scripts: experiments, plans, runs and metrics
as pandas DataFrames and plain dicts. Every function calls the C++ library (no per-event
work in Python) and raises ``shardscope.InputError`` on bad input. docs/python.md.
"""

import math
import os
import warnings
from collections.abc import Mapping

import pandas as pd

from shardscope import _shardscope
from shardscope._binary import shardscope_binary
from shardscope.errors import InputError

# What identifies a run ShardScope recorded (empty for foreign traces).
IDENTITY_COLUMNS = ["experiment", "hardware", "dtype", "backend"]
# The columns of analyze(): one row per metric and scope.
METRIC_COLUMNS = ["trace", *IDENTITY_COLUMNS, "name", "scope_kind", "scope", "value", "unit",
                  "aggregation", "unavailable"]
# The columns of compare_runs(): one row per metric and run, as `shardscope compare
# --format csv` prints them.
COMPARISON_COLUMNS = ["metric", "scope", "unit", "run", "trace", *IDENTITY_COLUMNS, "value",
                      "ratio", "min", "max", "instances", "unavailable"]


def _warn_skipped(skipped):
    for message in skipped:
        warnings.warn(f"skipped: {message}", stacklevel=3)


def _path(value, name, optional=False):
    """``value`` as a path string; InputError naming ``name`` for anything else (pybind's
    TypeError otherwise) and for "" (an empty path would mean the current directory)."""
    if value is None and optional:
        return ""
    if not isinstance(value, (str, os.PathLike)):
        raise InputError(f"{name}: expected a path, got {type(value).__name__}")
    path = os.fspath(value)
    if not isinstance(path, str):
        raise InputError(f"{name}: expected a text path, got {type(path).__name__}")
    if path == "":
        raise InputError(f"{name}: an empty path")
    return path


def _text(value, name):
    """``value`` (a str, or None for "") for a string argument; InputError otherwise."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{name}: expected a string, got {type(value).__name__}")
    return value


def _strings(values, name):
    """A list of strings from one string (never split into characters), None or an
    iterable of strings; InputError for anything else."""
    if values is None:
        return []
    if isinstance(values, str):
        return [values]
    try:
        out = list(values)
    except TypeError:
        raise InputError(f"{name}: expected a string or a list of strings, got "
                         f"{type(values).__name__}") from None
    for v in out:
        if not isinstance(v, str):
            raise InputError(f"{name}: expected strings, got {type(v).__name__} ({v!r})")
    return out


def _reference(experiment, config):
    """(config path, experiment name) of ``experiment``: a name with ``config=``, a row or
    dict from load_experiments() (its ``config``), a load_experiments() DataFrame of one
    row, or None for every experiment of config."""
    if isinstance(experiment, pd.DataFrame):
        if len(experiment) != 1:
            raise InputError(f"experiment: a DataFrame of {len(experiment)} experiments; pass "
                             "one row (df.iloc[i]), a name, or None with config= for all")
        experiment = experiment.iloc[0]
    if isinstance(experiment, str) and experiment == "":
        raise InputError("experiment: an empty name (None selects every experiment)")
    if experiment is None or isinstance(experiment, str):
        if config is None:
            what = f"experiment '{experiment}'" if experiment else "no experiment"
            raise InputError(f"{what}: pass config= (the experiments YAML file)")
        return _path(config, "config"), experiment or ""
    if isinstance(experiment, (Mapping, pd.Series)):
        name = experiment.get("name")
        path = config or experiment.get("config") or experiment.get("source_file")
        if not name or not path:
            raise InputError("experiment: a mapping needs 'name' and 'config' (as the rows of "
                             "load_experiments() have)")
        return _path(path, "config"), str(name)
    raise InputError(f"experiment: expected a name, a row of load_experiments() or None, got "
                     f"{type(experiment).__name__}")


def _one_or_list(results):
    """One experiment's result as itself; a sweep's or a whole file's as a list."""
    return results[0] if len(results) == 1 else results


def load_experiments(config, experiment=None, skip_invalid=False):
    """The experiments of ``config`` (sweeps expanded, plans validated) as a DataFrame: one
    row per experiment with its main figures, ``config`` (the file) and ``spec`` (the whole
    resolved experiment as a dict, as trace metadata records it)."""
    if isinstance(experiment, str) and experiment == "":
        raise InputError("experiment: an empty name (None selects every experiment)")
    specs, skipped = _shardscope.load_experiments(_path(config, "config"),
                                                  _text(experiment, "experiment"),
                                                  bool(skip_invalid))
    _warn_skipped(skipped)
    rows = []
    for s in specs:
        p, w = s["parallelism"], s["workload"]
        rows.append({
            "name": s["name"], "sweep": s["sweep"], "config": s["source_file"],
            "model": s["model"]["name"], "hardware": s["cluster"]["name"],
            "backend": s["backend"], "strategy": p["strategy"],
            "tp": p["tp_size"], "sp": p["seq_parallel_size"], "ep": p["ep_size"],
            "dp": p["dp_size"], "pp": p["pp_size"], "world_size": p["world_size"],
            "batch_size": w["batch_size"], "sequence_length": w["sequence_length"],
            "tokens_to_generate": w["tokens_to_generate"], "dtype": w["dtype"],
            "description": s["description"], "spec": s,
        })
    columns = ["name", "sweep", "config", "model", "hardware", "backend", "strategy", "tp", "sp",
               "ep", "dp", "pp", "world_size", "batch_size", "sequence_length",
               "tokens_to_generate", "dtype", "description", "spec"]
    return pd.DataFrame(rows, columns=columns)


def plan(experiment=None, config=None, skip_invalid=False):
    """What ``shardscope plan --json`` gives: placement, groups, memory per rank, op counts,
    FLOPs, bytes and traffic per phase. A dict (a list for a sweep or a whole file)."""
    path, name = _reference(experiment, config)
    reports, skipped = _shardscope.plan(path, name, skip_invalid)
    _warn_skipped(skipped)
    return _one_or_list(reports)


def check(experiment=None, config=None, skip_invalid=False):
    """What ``shardscope check --json`` gives: memory fit, physical bounds on TTFT, TPOT and
    throughput, and each claim's verdict. A dict (a list for several experiments)."""
    path, name = _reference(experiment, config)
    reports, skipped = _shardscope.check(path, name, skip_invalid)
    _warn_skipped(skipped)
    return _one_or_list(reports)


def run(experiment=None, backend=None, config=None, trace=True, out="traces", trace_file=None,
        decode_steps=None, calibration=None, algorithm="auto", hostfile=None, mpirun_args=(),
        skip_invalid=False, trace_compression=None, protocol="auto", all_to_all="auto"):
    """Runs experiments as ``shardscope run --json`` does and returns its results: a dict
    (a list for several). ``backend``: "sim", "cpu" (real ranks over MPI; the result holds
    the generated ``tokens`` of every request), or None for each experiment's own. Traces go
    to the store under ``out`` (or to ``trace_file``) unless ``trace=False``;
    ``trace_compression``: "none" or "gzip" (``trace_{timestamp}.trace.gz``), None for each
    experiment's own. ``algorithm``, ``protocol`` and ``all_to_all`` replace the
    experiment's ``communication:`` choices as ``run --algorithm/--protocol/--all-to-all`` do
    ("auto": keep them)."""
    path, name = _reference(experiment, config)
    if decode_steps is not None and (not isinstance(decode_steps, int) or decode_steps < 0):
        raise InputError(f"decode_steps: expected an integer ≥ 0 or None, got {decode_steps!r}")
    hostfile = _path(hostfile, "hostfile", optional=True)
    if hostfile and not os.path.isfile(hostfile):
        raise InputError(f"hostfile: no such file: {hostfile}")
    # A string is split at spaces as `run --mpirun-args` does, never into characters.
    mpirun_args = (mpirun_args.split() if isinstance(mpirun_args, str)
                   else _strings(mpirun_args, "mpirun_args"))
    results, skipped = _shardscope.run(
        path, name, bool(skip_invalid), _text(backend, "backend"), _path(out, "out"),
        _path(trace_file, "trace_file", optional=True), bool(trace),
        -1 if decode_steps is None else decode_steps,
        _path(calibration, "calibration", optional=True), _text(algorithm, "algorithm"),
        _text(protocol, "protocol") or "auto", _text(all_to_all, "all_to_all") or "auto", hostfile, mpirun_args, shardscope_binary(), _text(trace_compression, "trace_compression"))
    _warn_skipped(skipped)
    return _one_or_list(results)


def simulate(experiment=None, decode_steps=None, trace=False, config=None, out="traces",
             trace_file=None, calibration=None, algorithm="auto", skip_invalid=False,
             protocol="auto", all_to_all="auto"):
    """Simulates experiments (``run`` with backend "sim"); no trace unless ``trace=True``.
    ``decode_steps``: simulate only the first N decode steps (None: all, up to 1024; a longer
    generation simulates 1024 and the last and interpolates, as ``shardscope run`` does)."""
    return run(experiment, backend="sim", config=config, trace=trace, out=out,
               trace_file=trace_file, decode_steps=decode_steps, calibration=calibration,
               algorithm=algorithm, skip_invalid=skip_invalid, protocol=protocol,
               all_to_all=all_to_all)


# The columns of requests(): one row per request of a served run, as `run --json` lists them.
REQUEST_COLUMNS = ["experiment", "id", "arrival_s", "prompt_tokens", "output_tokens", "replica",
                   "warmup", "rejected", "preemptions", "decode_only", "cached_prompt_tokens",
                   "first_scheduled_s", "first_token_s",
                   "last_token_s", "finish_s", "kv_arrival_s", "queueing_delay_s", "ttft_s",
                   "tpot_s", "e2e_latency_s"]


def requests(result):
    """The requests of served runs as a DataFrame, one row per request (warm-up and rejected
    ones too, flagged): ``result`` is what run() or simulate() returned for served
    experiments (a dict, or a list of them). Figures are seconds; NaN where one does not
    exist (a rejected request's times, TPOT of fewer than 2 output tokens). docs/metrics.md,
    "Serving"."""
    results = [result] if isinstance(result, Mapping) else list(result)
    rows = []
    for r in results:
        if not isinstance(r, Mapping) or not r.get("served"):
            name = r.get("experiment") if isinstance(r, Mapping) else type(r).__name__
            raise InputError(f"requests: {name!r} is not a served run's result (run() or "
                             "simulate() of an experiment with a served workload)")
        for row in r.get("requests", []):
            rows.append({"experiment": r["experiment"], **row})
    df = pd.DataFrame(rows, columns=REQUEST_COLUMNS)
    floats = [c for c in REQUEST_COLUMNS if c.endswith("_s")]
    df[floats] = df[floats].astype(float)
    return df


def _paths(paths):
    if isinstance(paths, (str, os.PathLike)):
        return [_path(paths, "paths")]
    if paths is None:
        raise InputError("paths: expected a trace path or a list of them, got None")
    try:
        items = list(paths)
    except TypeError:
        raise InputError(f"paths: expected a trace path or a list of them, got "
                         f"{type(paths).__name__}") from None
    if not items:
        raise InputError("paths: an empty list (give a trace file, a run directory or a store)")
    return [_path(p, "paths") for p in items]


def _scope_kind(scope):
    """"" is the run; otherwise the scope's first word: rank, group, phase, collective, ..."""
    return "run" if not scope else scope.split(" ", 1)[0]


def _frame(run):
    c = run["columns"]
    n = len(c["name"])
    identity = {k: [run["identity"][k]] * n for k in IDENTITY_COLUMNS}
    return pd.DataFrame({
        "trace": [run["trace"]] * n,
        **identity,
        "name": c["name"],
        "scope_kind": [_scope_kind(s) for s in c["scope"]],
        "scope": c["scope"],
        "value": pd.array([math.nan if v is None else v for v in c["value"]], dtype="float64"),
        "unit": c["unit"],
        "aggregation": c["aggregation"],
        "unavailable": c["unavailable"],
    }, columns=METRIC_COLUMNS)


def analyze_runs(paths, metrics=None, trace_format="auto", align_clocks="as-recorded",
                 workload_card=None):
    """The raw analyses behind analyze(): one dict per run (trace, trace_paths, format,
    identity, metadata_path, warnings, read_summary, columns)."""
    return _shardscope.analyze(_paths(paths), _strings(metrics, "metrics"),
                               _text(trace_format, "trace_format"),
                               _text(align_clocks, "align_clocks"),
                               _path(workload_card, "workload_card", optional=True))


def analyze(paths, metrics=None, trace_format="auto", align_clocks="as-recorded",
            workload_card=None):
    """Every metric of docs/metrics.md for the traces under ``paths`` (a trace file, a run
    directory, a whole store; ours or foreign: Kineto, XLA, NCCL profiler) as one tidy
    DataFrame: one row per run, metric and scope, with ``value`` NaN and ``unavailable``
    saying why where the trace cannot support a metric; ``experiment``, ``hardware``,
    ``dtype`` and ``backend`` say which run (empty for foreign traces). ``metrics`` selects as ``analyze
    --metric`` does (our names, a name's .suffixes and scopes, CCL-Bench names).
    ``df.attrs["runs"]`` holds each run's files, format and warnings."""
    runs = analyze_runs(paths, metrics, trace_format, align_clocks, workload_card)
    for r in runs:
        for w in r["warnings"]:
            warnings.warn(f"{r['trace']}: {w}", stacklevel=2)
    frames = [_frame(r) for r in runs]
    df = (pd.concat(frames, ignore_index=True) if frames
          else pd.DataFrame(columns=METRIC_COLUMNS))
    df.attrs["runs"] = [{k: v for k, v in r.items() if k != "columns"} for r in runs]
    return df


def _one_run(x, metrics, side):
    if isinstance(x, pd.DataFrame):
        df = x if not metrics else x[x["name"].isin(metrics)]
    else:
        df = analyze(x, metrics)
    if df["trace"].nunique() > 1:
        raise InputError(f"compare: the {side} holds {df['trace'].nunique()} runs; pass one "
                         "trace file (or one run's DataFrame)")
    return df


def compare(baseline, proposed, metrics=None):
    """Two runs' metrics side by side, as ``shardscope compare``: baseline, proposed,
    ratio = proposed / baseline and change_percent = (proposed − baseline) / baseline · 100
    (NaN where the baseline is 0 or either value is missing). Each side is a trace path or
    an analyze() DataFrame of one run. Every scope is a row of its own (as ``shardscope
    compare --per-rank``); compare_runs() takes more runs and summarises ranks."""
    metrics = _strings(metrics, "metrics")
    b = _one_run(baseline, metrics, "baseline")
    p = _one_run(proposed, metrics, "proposed")
    keys = ["name", "scope_kind", "scope"]
    merged = pd.merge(b[keys + ["unit", "value"]], p[keys + ["unit", "value"]], on=keys,
                      how="outer", suffixes=("_baseline", "_proposed"), sort=False)
    out = merged[keys].copy()
    out["unit"] = merged["unit_baseline"].fillna(merged["unit_proposed"])
    out["baseline"] = merged["value_baseline"].astype("float64")
    out["proposed"] = merged["value_proposed"].astype("float64")
    base = out["baseline"].where(out["baseline"] != 0)
    out["ratio"] = out["proposed"] / base
    out["change_percent"] = (out["proposed"] - base) / base * 100.0
    return out


def _optional(values):
    return pd.array([math.nan if v is None else v for v in values], dtype="float64")


def compare_runs(paths, baseline=None, metrics=None, per_rank=False, experiment=None,
                 hardware=None, dtype=None, backend=None):
    """Several runs side by side, as ``shardscope compare PATH... [--baseline PATH]``: the
    runs under ``paths`` (trace files, run directories, store roots), the baseline first
    (``baseline``, else the first run). A tidy DataFrame with one row per metric and run:
    ``metric``, ``scope``, ``unit``, ``run`` (its label), ``trace``, ``experiment``,
    ``hardware``, ``dtype``, ``backend``, ``value``, ``ratio`` (value / the baseline's),
    and for metrics of each rank, group or layer (scope with ``*``) unless ``per_rank``:
    ``value`` the median over them, ``min``, ``max`` and ``instances``. The same rows as
    ``shardscope compare --format csv``; ``df.attrs["runs"]`` holds the runs (label, trace,
    metadata, identity) and ``df.attrs["baseline"]`` the baseline's label. ``experiment``
    (an experiment's or a sweep's name), ``hardware``, ``dtype``, ``backend`` keep only the
    stored runs under ``paths`` that match, as ``compare --experiment`` & co. do."""
    c = _shardscope.compare(_paths(paths), _path(baseline, "baseline", optional=True),
                            _strings(metrics, "metrics"), bool(per_rank),
                            _text(experiment, "experiment"), _text(hardware, "hardware"),
                            _text(dtype, "dtype"), _text(backend, "backend"))
    runs = c["runs"]
    rows = {k: [] for k in COMPARISON_COLUMNS}
    for m in c["metrics"]:
        unavailable = m.get("unavailable", [""] * len(runs))
        for i, r in enumerate(runs):
            rows["metric"].append(m["metric"])
            rows["scope"].append(m["scope"])
            rows["unit"].append(m["unit"])
            rows["run"].append(r["label"])
            rows["trace"].append(r["trace"])
            for k in IDENTITY_COLUMNS:
                rows[k].append(r.get(k, ""))
            rows["value"].append(m["values"][i])
            rows["ratio"].append(m["ratios"][i])
            rows["min"].append(m["min"][i] if m["summarised"] else None)
            rows["max"].append(m["max"][i] if m["summarised"] else None)
            rows["instances"].append(m["instances"][i] if m["summarised"] else None)
            rows["unavailable"].append(unavailable[i])
    for k in ("value", "ratio", "min", "max"):
        rows[k] = _optional(rows[k])
    rows["instances"] = pd.array(rows["instances"], dtype="Int64")
    df = pd.DataFrame(rows, columns=COMPARISON_COLUMNS)
    df.attrs["runs"] = runs
    df.attrs["baseline"] = c["baseline"]
    return df
