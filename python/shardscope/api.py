"""ShardScope's functions for notebooks and scripts: experiments, plans, runs and metrics
as pandas DataFrames and plain dicts. Every function calls the C++ library (no per-event
work in Python) and raises ``shardscope.InputError`` on bad input. docs/python.md.
"""

import math
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional, Union

import pandas as pd

from shardscope import _shardscope
from shardscope._binary import shardscope_binary
from shardscope.errors import InputError

# A path argument: a string or an os.PathLike of one.
PathArg = Union[str, "os.PathLike[str]"]
# One or several paths (trace files, run folders, store roots).
PathsArg = Union[PathArg, Iterable[PathArg]]
# An experiment: its name (with config=), a row or dict of load_experiments(), a
# load_experiments() DataFrame of one row, or None for every experiment of config.
ExperimentArg = Union[str, Mapping[str, Any], "pd.Series", "pd.DataFrame", None]
# What plan, check, run and simulate return: one experiment's dict, or a list of them for
# a sweep or a whole file (_one_or_list).
Result = dict[str, Any]
Results = Union[Result, list[Result]]
# One string or several.
StringsArg = Union[str, Iterable[str], None]

# What identifies a run ShardScope recorded (empty for foreign traces).
IDENTITY_COLUMNS = ["experiment", "hardware", "dtype", "backend"]
# The columns of analyze(): one row per metric and scope.
METRIC_COLUMNS = ["trace", *IDENTITY_COLUMNS, "name", "scope_kind", "scope", "value", "unit",
                  "aggregation", "unavailable"]
# The columns of compare_runs(): one row per metric and run, as `shardscope compare
# --format csv` prints them.
COMPARISON_COLUMNS = ["metric", "scope", "unit", "run", "trace", *IDENTITY_COLUMNS, "value",
                      "ratio", "min", "max", "instances", "unavailable"]


def _warn_skipped(skipped: Sequence[str]) -> None:
    for message in skipped:
        warnings.warn(f"skipped: {message}", stacklevel=3)


def _path(value: object, name: str, optional: bool = False) -> str:
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


def _text(value: object, name: str) -> str:
    """``value`` (a str, or None for "") for a string argument; InputError otherwise."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{name}: expected a string, got {type(value).__name__}")
    return value


def _strings(values: object, name: str) -> list[str]:
    """A list of strings from one string (never split into characters), None or an
    iterable of strings; InputError for anything else."""
    if values is None:
        return []
    if isinstance(values, str):
        return [values]
    if not isinstance(values, Iterable):
        raise InputError(f"{name}: expected a string or a list of strings, got "
                         f"{type(values).__name__}")
    out = list(values)
    for v in out:
        if not isinstance(v, str):
            raise InputError(f"{name}: expected strings, got {type(v).__name__} ({v!r})")
    return out


def _reference(experiment: ExperimentArg, config: Optional[PathArg]) -> tuple[str, str]:
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


def _experiment_name(result: Mapping[str, Any]) -> Any:
    """The experiment's name in a result: run's ``experiment``, or plan's and check's
    ``experiment.name`` (the resolved experiment)."""
    e = result.get("experiment")
    return e.get("name") if isinstance(e, Mapping) else e


def _one_or_list(results: list[Result], name: str) -> Results:
    """One type per call form, whatever the count: a list for every experiment of a file
    (``name`` "") or a sweep (``name`` not the one result's experiment), even of one; the
    dict itself for one experiment named (or given as a row)."""
    if name and len(results) == 1 and _experiment_name(results[0]) == name:
        return results[0]
    return results


def load_experiments(config: PathArg, experiment: Optional[str] = None, *,
                     skip_invalid: bool = False) -> pd.DataFrame:
    """The experiments of ``config`` (sweeps expanded, plans validated) as a DataFrame: one
    row per experiment with its main figures, ``config`` (the file) and ``spec`` (the whole
    resolved experiment as a dict, as trace metadata records it)."""
    if isinstance(experiment, str) and experiment == "":
        raise InputError("experiment: an empty name (None selects every experiment)")
    specs, skipped = _shardscope.load_experiments(config=_path(config, "config"),
                                                  experiment=_text(experiment, "experiment"),
                                                  skip_invalid=bool(skip_invalid))
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


def plan(experiment: ExperimentArg = None, *, config: Optional[PathArg] = None,
         skip_invalid: bool = False) -> Results:
    """What ``shardscope plan --json`` gives: placement, groups, memory per rank, op counts,
    FLOPs, bytes and traffic per phase. A dict for one experiment; a list for a sweep or a
    whole file (``experiment=None``), even of one."""
    path, name = _reference(experiment, config)
    reports, skipped = _shardscope.plan(config=path, experiment=name,
                                        skip_invalid=bool(skip_invalid))
    _warn_skipped(skipped)
    return _one_or_list(reports, name)


def check(experiment: ExperimentArg = None, *, config: Optional[PathArg] = None,
          skip_invalid: bool = False) -> Results:
    """What ``shardscope check --json`` gives: memory fit, physical bounds on TTFT, TPOT and
    throughput, and each claim's verdict. A dict for one experiment; a list for a sweep or a
    whole file, even of one."""
    path, name = _reference(experiment, config)
    reports, skipped = _shardscope.check(config=path, experiment=name,
                                         skip_invalid=bool(skip_invalid))
    _warn_skipped(skipped)
    return _one_or_list(reports, name)


def run(experiment: ExperimentArg = None, *, backend: Optional[str] = None,
        config: Optional[PathArg] = None, trace: bool = True, out: PathArg = "traces",
        trace_file: Optional[PathArg] = None, decode_steps: Optional[int] = None,
        calibration: Optional[PathArg] = None, algorithm: str = "auto",
        hostfile: Optional[PathArg] = None, mpirun_args: StringsArg = (),
        skip_invalid: bool = False, trace_compression: Optional[str] = None,
        protocol: str = "auto", all_to_all: str = "auto") -> Results:
    """Runs experiments as ``shardscope run --json`` does and returns its results: a dict for
    one experiment, a list for a sweep or a whole file (even of one). ``backend``: "sim",
    "cpu" (real ranks over MPI; the result holds the generated ``tokens`` of every request),
    or None for each experiment's own. Traces go to the store under ``out`` (or to
    ``trace_file``) unless ``trace=False``; ``trace_compression``: "none" or "gzip"
    (``trace_{timestamp}.trace.gz``), None for each experiment's own. ``algorithm``,
    ``protocol`` and ``all_to_all`` replace the experiment's ``communication:`` choices as
    ``run --algorithm/--protocol/--all-to-all`` do ("auto": keep them)."""
    path, name = _reference(experiment, config)
    if decode_steps is not None and (not isinstance(decode_steps, int) or decode_steps < 0):
        raise InputError(f"decode_steps: expected an integer ≥ 0 or None, got {decode_steps!r}")
    hostfile_path = _path(hostfile, "hostfile", optional=True)
    if hostfile_path and not os.path.isfile(hostfile_path):
        raise InputError(f"hostfile: no such file: {hostfile_path}")
    # A string is split at spaces as `run --mpirun-args` does, never into characters.
    mpirun = (mpirun_args.split() if isinstance(mpirun_args, str)
              else _strings(mpirun_args, "mpirun_args"))
    results, skipped = _shardscope.run(
        config=path, experiment=name, skip_invalid=bool(skip_invalid),
        backend=_text(backend, "backend"), trace_root=_path(out, "out"),
        trace_file=_path(trace_file, "trace_file", optional=True), write_trace=bool(trace),
        decode_steps=-1 if decode_steps is None else decode_steps,
        calibration=_path(calibration, "calibration", optional=True),
        algorithm=_text(algorithm, "algorithm"),
        protocol=_text(protocol, "protocol") or "auto",
        all_to_all=_text(all_to_all, "all_to_all") or "auto", hostfile=hostfile_path, mpirun_args=mpirun,
        worker_binary=shardscope_binary(),
        trace_compression=_text(trace_compression, "trace_compression"))
    _warn_skipped(skipped)
    return _one_or_list(results, name)


def simulate(experiment: ExperimentArg = None, *, decode_steps: Optional[int] = None,
             trace: bool = False, config: Optional[PathArg] = None, out: PathArg = "traces",
             trace_file: Optional[PathArg] = None, calibration: Optional[PathArg] = None,
             algorithm: str = "auto", skip_invalid: bool = False,
             protocol: str = "auto", all_to_all: str = "auto") -> Results:
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


def requests(result: Union[Mapping[str, Any], Iterable[Mapping[str, Any]]]) -> pd.DataFrame:
    """The requests of served runs as a DataFrame, one row per request (warm-up and rejected
    ones too, flagged): ``result`` is what run() or simulate() returned for served
    experiments (a dict, or a list of them). Figures are seconds; NaN where one does not
    exist (a rejected request's times, TPOT of fewer than 2 output tokens). docs/metrics.md,
    "Serving". TraceSet.requests() gives the same rows from a served run's trace."""
    results: list[Any] = [result] if isinstance(result, Mapping) else list(result)
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


def _paths(paths: object) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [_path(paths, "paths")]
    if paths is None:
        raise InputError("paths: expected a trace path or a list of them, got None")
    if not isinstance(paths, Iterable):
        raise InputError(f"paths: expected a trace path or a list of them, got "
                         f"{type(paths).__name__}")
    items = list(paths)
    if not items:
        raise InputError("paths: an empty list (give a trace file, a run directory or a store)")
    return [_path(p, "paths") for p in items]


def _scope_kind(scope: str) -> str:
    """"" is the run; otherwise the scope's first word: rank, group, phase, collective, ..."""
    return "run" if not scope else scope.split(" ", 1)[0]


def _frame(run: Mapping[str, Any], columns: Mapping[str, list[Any]]) -> pd.DataFrame:
    """One run's metric ``columns`` (the extension's) as rows of METRIC_COLUMNS."""
    c = columns
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


def _metric_frame(runs: Sequence[Mapping[str, Any]],
                  columns: Sequence[Mapping[str, list[Any]]]) -> pd.DataFrame:
    """Every run's metrics in one frame of METRIC_COLUMNS (empty without runs)."""
    frames = [_frame(r, c) for r, c in zip(runs, columns)]
    return (pd.concat(frames, ignore_index=True) if frames
            else pd.DataFrame(columns=METRIC_COLUMNS))


def analyze_runs(paths: PathsArg, metrics: StringsArg = None, *, trace_format: str = "auto",
                 align_clocks: str = "as-recorded",
                 workload_card: Optional[PathArg] = None) -> list[dict[str, Any]]:
    """The raw analyses behind analyze(): one dict per run (trace, trace_paths, format,
    identity, metadata_path, warnings, skipped_events, read_summary, columns)."""
    runs: list[dict[str, Any]] = _shardscope.analyze(
        paths=_paths(paths), metrics=_strings(metrics, "metrics"),
        trace_format=_text(trace_format, "trace_format"),
        align_clocks=_text(align_clocks, "align_clocks"),
        workload_card=_path(workload_card, "workload_card", optional=True))
    return runs


def _warn_run_warnings(runs: Iterable[Mapping[str, Any]], stacklevel: int) -> None:
    for r in runs:
        for w in r["warnings"]:
            warnings.warn(f"{r['trace']}: {w}", stacklevel=stacklevel + 1)


def analyze(paths: PathsArg, metrics: StringsArg = None, *, trace_format: str = "auto",
            align_clocks: str = "as-recorded",
            workload_card: Optional[PathArg] = None) -> pd.DataFrame:
    """Every metric of docs/metrics.md for the traces under ``paths`` (a trace file, a run
    directory, a whole store; ours or foreign: Kineto, XLA, NCCL profiler) as one tidy
    DataFrame: one row per run, metric and scope, with ``value`` NaN and ``unavailable``
    saying why where the trace cannot support a metric; ``experiment``, ``hardware``,
    ``dtype`` and ``backend`` say which run (empty for foreign traces). ``metrics`` selects as ``analyze
    --metric`` does (our names, a name's .suffixes and scopes, CCL-Bench names).
    ``df.attrs["runs"]`` holds each run's files, format and warnings. TraceSet reads the
    traces once and answers several questions."""
    runs = analyze_runs(paths, metrics, trace_format=trace_format, align_clocks=align_clocks,
                        workload_card=workload_card)
    _warn_run_warnings(runs, stacklevel=2)
    df = _metric_frame(runs, [r["columns"] for r in runs])
    df.attrs["runs"] = [{k: v for k, v in r.items() if k != "columns"} for r in runs]
    return df


def _one_run(x: Any, metrics: list[str], side: str) -> pd.DataFrame:
    if isinstance(x, pd.DataFrame):
        df = x if not metrics else x[x["name"].isin(metrics)]
    else:
        df = analyze(x, metrics)
    if df["trace"].nunique() > 1:
        raise InputError(f"compare: the {side} holds {df['trace'].nunique()} runs; pass one "
                         "trace file (or one run's DataFrame)")
    return df


# The columns of compare() and TraceSet.compare(): one row per metric and scope.
CHANGE_COLUMNS = ["name", "scope_kind", "scope", "unit", "baseline", "proposed", "ratio",
                  "change_percent"]


def _change(b: pd.DataFrame, p: pd.DataFrame) -> pd.DataFrame:
    """Two runs' metric rows (METRIC_COLUMNS) side by side as CHANGE_COLUMNS."""
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


def compare(baseline: Any, proposed: Any, *, metrics: StringsArg = None) -> pd.DataFrame:
    """Two runs' metrics side by side, as ``shardscope compare``: baseline, proposed,
    ratio = proposed / baseline and change_percent = (proposed − baseline) / baseline · 100
    (NaN where the baseline is 0 or either value is missing). Each side is a trace path or
    an analyze() DataFrame of one run. Every scope is a row of its own (as ``shardscope
    compare --per-rank``); compare_runs() takes more runs and summarises ranks."""
    names = _strings(metrics, "metrics")
    return _change(_one_run(baseline, names, "baseline"), _one_run(proposed, names, "proposed"))


def _optional(values: Iterable[Optional[float]]) -> Any:
    return pd.array([math.nan if v is None else v for v in values], dtype="float64")


def compare_runs(paths: PathsArg, *, baseline: Optional[PathArg] = None,
                 metrics: StringsArg = None, per_rank: bool = False,
                 experiment: Optional[str] = None, hardware: Optional[str] = None,
                 dtype: Optional[str] = None, backend: Optional[str] = None) -> pd.DataFrame:
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
    c = _shardscope.compare(paths=_paths(paths),
                            baseline=_path(baseline, "baseline", optional=True),
                            metrics=_strings(metrics, "metrics"), per_rank=bool(per_rank),
                            experiment=_text(experiment, "experiment"),
                            hardware=_text(hardware, "hardware"), dtype=_text(dtype, "dtype"),
                            backend=_text(backend, "backend"))
    runs = c["runs"]
    rows: dict[str, list[Any]] = {k: [] for k in COMPARISON_COLUMNS}
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
    columns: dict[str, Any] = dict(rows)
    for k in ("value", "ratio", "min", "max"):
        columns[k] = _optional(rows[k])
    columns["instances"] = pd.array(rows["instances"], dtype="Int64")
    df = pd.DataFrame(columns, columns=COMPARISON_COLUMNS)
    df.attrs["runs"] = runs
    df.attrs["baseline"] = c["baseline"]
    return df
