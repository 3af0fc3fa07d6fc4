"""MetricsCalculator: every metric of docs/metrics.md for one run, as a dict."""

import os
from collections.abc import Mapping
from typing import Any, Optional, Union

from shardscope import api
from shardscope.collector import TraceCollector, TraceMetadata
from shardscope.errors import InputError


class MetricsCalculator:
    """Computes a run's metrics with the C++ analyzer. ``root`` is the store where a plain
    metadata dict's trace is looked up."""

    def __init__(self, root: Union[str, "os.PathLike[str]"] = "traces") -> None:
        self.root = os.fspath(root)

    def _trace_of(self, metadata: Mapping[str, Any]) -> str:
        """The trace file a metadata dict belongs to."""
        if isinstance(metadata, TraceMetadata) and metadata.trace_path:
            return metadata.trace_path
        run: Any = metadata.get("run")
        timestamp = run.get("timestamp") if isinstance(run, dict) else None
        if not timestamp:
            raise InputError("compute_all_metrics: a metadata dict needs the 'run' field "
                             "(model, strategy, batch_size, sequence_length, timestamp) a "
                             "stored trace's metadata has")
        for t in TraceCollector(self.root).list_traces(
                model_name=run.get("model"), strategy=run.get("strategy"),
                batch_size=run.get("batch_size"), sequence_length=run.get("sequence_length")):
            if t["timestamp"] == timestamp:
                return t["trace"]
        raise InputError(f"compute_all_metrics: no trace of {run.get('model')}/"
                         f"{run.get('strategy')} at {timestamp} under {self.root}")

    def compute_all_metrics(self, source: Union[Mapping[str, Any], str, "os.PathLike[str]"],
                            metrics: api.StringsArg = None) -> dict[str, Any]:
        """Every metric of one run: ``source`` is a stored trace's metadata (from
        TraceCollector.list_traces, or a metadata dict of a trace in this store), a trace
        file, a run directory (one run's rank files) or a foreign trace (Kineto, XLA, NCCL
        profiler). Returns {key: value} in the analyzer's order, key "name" or
        "name[scope]", value a float or "not available: <reason>", as ``shardscope analyze
        --format json`` prints them."""
        if isinstance(source, dict):
            path = self._trace_of(source)
        elif isinstance(source, (str, os.PathLike)):
            path = os.fspath(source)
        else:
            raise InputError(f"compute_all_metrics: expected a metadata dict or a path, got "
                             f"{type(source).__name__}")
        runs = api.analyze_runs(path, metrics)
        if len(runs) != 1:
            raise InputError(f"compute_all_metrics: {path} holds {len(runs)} runs; pass one "
                             "of them, or use shardscope.analyze() for all")
        c = runs[0]["columns"]
        out = {}
        for name, scope, value, why in zip(c["name"], c["scope"], c["value"], c["unavailable"]):
            key = f"{name}[{scope}]" if scope else name
            out[key] = value if value is not None else f"not available: {why}"
        return out
