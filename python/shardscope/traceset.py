"""``TraceSet``: a trace, a set of rank traces or a whole store read once, then asked
questions as DataFrames, the way Holistic Trace Analysis's ``TraceAnalysis`` is:

    ts = shardscope.TraceSet("traces/llama/tp4/batch_8_seq_512")
    ts.time_breakdown()        # per rank: compute, communication, idle, ...
    ts.comm_overlap()          # per rank: how much communication compute hides
    ts.metrics(names=["ttft", "tpot"])
    ts.compare(shardscope.TraceSet(other_trace))

The analyzer (C++) reads the traces when the TraceSet is made and keeps its results; every
method works on those, never reading a trace again. docs/python.md, "TraceSet".
"""

import math
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional, Union

import pandas as pd

from shardscope import _shardscope
from shardscope.api import (CHANGE_COLUMNS, PathArg, PathsArg, StringsArg,
                            _change, _metric_frame, _path, _paths, _strings, _text)
from shardscope.errors import InputError

# The columns of TraceSet.time_breakdown(): per rank (and phase), times in seconds as
# docs/metrics.md "Time breakdown" defines them; NaN where the trace cannot give one.
TIME_BREAKDOWN_METRICS = ["busy_time", "compute_time", "comm_time", "overlap_time",
                          "exposed_comm_time", "idle_time", "pipeline_bubble", "sync_wait"]
TIME_BREAKDOWN_COLUMNS = ["trace", "rank", "phase", "wall_time", *TIME_BREAKDOWN_METRICS]
# The columns of TraceSet.comm_overlap(): per rank, seconds and the overlap ratio.
COMM_OVERLAP_METRICS = ["comm_time", "overlap_time", "exposed_comm_time", "overlap"]
COMM_OVERLAP_COLUMNS = ["trace", "rank", *COMM_OVERLAP_METRICS]
# The columns of TraceSet.requests(): one row per request span of a served run's trace.
TRACE_REQUEST_COLUMNS = ["trace", "experiment", "replica", "id", "arrival_s", "prompt_tokens",
                         "output_tokens", "warmup", "preemptions", "decode_only",
                         "first_scheduled_s", "first_token_s", "last_token_s", "finish_s",
                         "kv_arrival_s", "queueing_delay_s", "ttft_s", "tpot_s",
                         "e2e_latency_s"]

# What TraceSet reads: paths, or what run() / simulate() returned (a dict or a list of them).
TraceSetSource = Union[PathsArg, Mapping[str, Any], Iterable[Mapping[str, Any]]]

_RANK = re.compile(r"rank (\d+)")
_RANK_PHASE = re.compile(r"rank (\d+) phase (\S+)")


def _trace_of(result: Mapping[str, Any]) -> str:
    trace = result.get("trace")
    if not isinstance(trace, str) or not trace:
        raise InputError(f"paths: the result of {result.get('experiment')!r} has no trace (run "
                         "or simulate it with trace=True)")
    return trace


def _source_paths(source: object) -> list[str]:
    """Paths from paths, or the traces of run() / simulate() results."""
    if isinstance(source, Mapping):
        return [_trace_of(source)]
    if isinstance(source, list) and source and all(isinstance(r, Mapping) for r in source):
        return [_trace_of(r) for r in source]
    return _paths(source)


class TraceSet:
    """The runs under ``paths`` — a trace file, a run folder of rank files, a store root, or
    a list of them; ours or foreign (Kineto, XLA, NCCL profiler); or what run() /
    simulate() returned with ``trace=True`` (a dict or a list): their traces — grouped into
    runs as ``shardscope analyze`` groups them, read and analysed once. ``trace_format`` ("auto" or
    a format's name), ``align_clocks`` and ``workload_card`` as ``analyze`` takes them.
    Every method returns a DataFrame (empty, with its columns, when there is nothing to
    show); each row names its run in ``trace``. Bad input raises InputError when the
    TraceSet is made; run warnings (missing ranks, skewed clocks) are UserWarnings."""

    def __init__(self, paths: TraceSetSource, *, trace_format: str = "auto",
                 align_clocks: str = "as-recorded",
                 workload_card: Optional[PathArg] = None) -> None:
        self._analyses = _shardscope.open_traces(
            paths=_source_paths(paths), trace_format=_text(trace_format, "trace_format"),
            align_clocks=_text(align_clocks, "align_clocks"),
            workload_card=_path(workload_card, "workload_card", optional=True))
        self._runs: list[dict[str, Any]] = self._analyses.runs(with_metadata=True)
        self._all_metrics: Optional[pd.DataFrame] = None
        for r in self._runs:
            for w in r["warnings"]:
                warnings.warn(f"{r['trace']}: {w}", stacklevel=2)

    def __len__(self) -> int:
        return len(self._runs)

    def __repr__(self) -> str:
        return f"TraceSet({self.traces!r})"

    @property
    def traces(self) -> list[str]:
        """Each run's label: its trace file, or "<folder> (N files)" for a set of rank files."""
        return [r["trace"] for r in self._runs]

    @property
    def runs(self) -> list[dict[str, Any]]:
        """Each run as a dict: trace, trace_paths, metadata_path, format, identity
        (experiment, sweep, hardware, dtype, backend, nodes, ranks), warnings,
        skipped_events, read_summary and metadata (the parsed metadata; {} without)."""
        return [dict(r) for r in self._runs]

    def metrics(self, *, names: StringsArg = None) -> pd.DataFrame:
        """Every metric of docs/metrics.md, or those ``names`` selects (as ``analyze
        --metric``: our names, a name's .suffixes and scopes, CCL-Bench names), in
        analyze()'s columns: trace, experiment, hardware, dtype, backend, name, scope_kind,
        scope, value (SI units; NaN when unavailable), unit, aggregation, unavailable."""
        selected = _strings(names, "names")
        if not selected:
            if self._all_metrics is None:
                self._all_metrics = _metric_frame(self._runs, self._analyses.metrics(names=[]))
            return self._all_metrics.copy()
        return _metric_frame(self._runs, self._analyses.metrics(names=selected))

    def _per_rank(self, names: Sequence[str], phases: bool) -> pd.DataFrame:
        """The metrics ``names`` of scope "rank R" (or "rank R phase P") as one row per run,
        rank (and phase) and one column per name; NaN where a rank lacks one."""
        df = self.metrics()
        pattern = _RANK_PHASE if phases else _RANK
        rows: dict[tuple[str, int, str], dict[str, float]] = {}
        for trace, name, scope, value in zip(df["trace"], df["name"], df["scope"], df["value"]):
            if name not in names:
                continue
            m = pattern.fullmatch(scope)
            if m is None:
                continue
            key = (trace, int(m.group(1)), m.group(2) if phases else "")
            rows.setdefault(key, {})[name] = value
        out = pd.DataFrame([{"trace": t, "rank": r, "phase": p, **v}
                            for (t, r, p), v in rows.items()],
                           columns=["trace", "rank", "phase", *names])
        out[list(names)] = out[list(names)].astype("float64")
        out["rank"] = out["rank"].astype("int64")
        order = {t: i for i, t in enumerate(self.traces)}
        out["_run"] = out["trace"].map(order)
        out = out.sort_values(["_run", "rank", "phase"], kind="stable").drop(columns="_run")
        return out.reset_index(drop=True)

    def _run_value(self, name: str) -> dict[str, float]:
        """The run-level metric ``name`` of each run (NaN where unavailable)."""
        df = self.metrics()
        rows = df[(df["name"] == name) & (df["scope"] == "")]
        return dict(zip(rows["trace"], rows["value"]))

    def time_breakdown(self, *, phases: bool = False) -> pd.DataFrame:
        """Where each rank's time went (docs/metrics.md, "Time breakdown"), one row per run
        and rank: ``trace``, ``rank``, ``phase`` ("" for the whole run), ``wall_time`` (the
        run window |W|), ``busy_time`` (|all ops|), ``compute_time``, ``comm_time`` (unions
        of the rank's compute and comm ops over its streams), ``overlap_time`` (|comm ∩
        compute|), ``exposed_comm_time`` (comm − overlap), ``idle_time`` (wall − busy),
        ``pipeline_bubble`` and ``sync_wait``, all seconds. On every rank of a trace whose
        ops are compute or comm, compute + exposed comm + idle = wall time.
        ``phases=True``: one row per rank and phase instead, from the ops with that
        ``args.phase``: ``compute_time``, ``comm_time`` and ``overlap_time`` (the analyzer
        gives no other per phase; the other columns are NaN)."""
        df = self._per_rank(TIME_BREAKDOWN_METRICS, phases)
        wall = self._run_value("wall_time")
        df.insert(3, "wall_time", math.nan if phases else df["trace"].map(wall))
        df["wall_time"] = df["wall_time"].astype("float64")
        return df[TIME_BREAKDOWN_COLUMNS]

    def comm_overlap(self) -> pd.DataFrame:
        """How much of each rank's communication compute hides, one row per run and rank:
        ``trace``, ``rank``, ``comm_time``, ``overlap_time`` (|comm ∩ compute|, s),
        ``exposed_comm_time`` (comm − overlap, s) and ``overlap`` = overlap_time / comm_time
        (0…1; NaN without communication). The run's figure, Σ overlap / Σ comm over ranks,
        is ``metrics(names=["overlap"])``'s run row."""
        return self._per_rank(COMM_OVERLAP_METRICS, phases=False).drop(columns="phase")

    def requests(self) -> pd.DataFrame:
        """The request spans of the served runs, one row per request in trace order:
        ``trace``, ``experiment``, ``replica`` (the span's process: a replica, a pipeline's
        virtual engine, or the decode instance its KV cache moved to), ``id``,
        ``arrival_s``, ``prompt_tokens``, ``output_tokens``, ``warmup``, ``preemptions``,
        ``decode_only``, the milestones ``first_scheduled_s``, ``first_token_s``,
        ``last_token_s`` (the span's end when the trace does not say), ``finish_s`` (the
        response), ``kv_arrival_s``, and ``queueing_delay_s``, ``ttft_s``, ``tpot_s``,
        ``e2e_latency_s`` as docs/metrics.md "Serving" defines them (seconds on the trace's
        clock; NaN where one does not exist). The rows of shardscope.requests() for the run
        that wrote the trace (rejected requests have no span). InputError when no run has
        request spans."""
        frames = []
        for run, c in zip(self._runs, self._analyses.requests()):
            n = len(c["id"])
            if n == 0:
                continue
            frames.append(pd.DataFrame({"trace": [run["trace"]] * n,
                                        "experiment": [run["identity"]["experiment"]] * n,
                                        **c}, columns=TRACE_REQUEST_COLUMNS))
        if not frames:
            raise InputError(f"requests: no request spans in {', '.join(self.traces)} (a "
                             "served run's trace has them)")
        df = pd.concat(frames, ignore_index=True)
        floats = [c for c in TRACE_REQUEST_COLUMNS if c.endswith("_s")]
        df[floats] = df[floats].astype("float64")
        return df

    def _one(self, side: str, names: list[str]) -> pd.DataFrame:
        if len(self._runs) != 1:
            raise InputError(f"compare: the {side} holds {len(self._runs)} runs "
                             f"({', '.join(self.traces)}); compare TraceSets of one run, or "
                             "use shardscope.compare_runs() for more")
        return self.metrics(names=names)

    def compare(self, other: "TraceSet", *, names: StringsArg = None) -> pd.DataFrame:
        """This run (the baseline) against ``other``'s (the proposed), both TraceSets of one
        run, as shardscope.compare(): one row per metric and scope, ``name``,
        ``scope_kind``, ``scope``, ``unit``, ``baseline``, ``proposed``, ``ratio`` =
        proposed / baseline, ``change_percent`` = (proposed − baseline) / baseline · 100
        (NaN where the baseline is 0 or a side lacks the metric). ``names`` selects as
        metrics() does."""
        if not isinstance(other, TraceSet):
            raise InputError(f"compare: expected a TraceSet, got {type(other).__name__}")
        selected = _strings(names, "names")
        return _change(self._one("baseline", selected), other._one("proposed", selected))

