"""TraceCollector: the trace store as the seeds describe it,
``{root}/{model}/{strategy}/batch_{B}_seq_{S}/{trace,metadata}_{timestamp}.*``."""

import json
import os
from collections.abc import Mapping
from typing import Any, Optional, Union

from shardscope import _shardscope
from shardscope import api
from shardscope.errors import InputError


class TraceMetadata(dict):
    """A stored trace's parsed metadata (exactly the file's content), which also knows its
    files: ``trace_path`` and ``metadata_path``, so MetricsCalculator can find the trace."""

    def __init__(self, content: Mapping[str, Any], trace_path: str, metadata_path: str) -> None:
        super().__init__(content)
        self.trace_path = trace_path
        self.metadata_path = metadata_path


def _read_metadata(t: Mapping[str, Any]) -> dict[str, Any]:
    try:
        with open(t["metadata_path"], encoding="utf-8") as f:
            content: dict[str, Any] = json.load(f)
            return content
    except (OSError, ValueError) as e:
        raise InputError(f"{t['metadata_path']}: cannot read the trace metadata: {e}") from e


class TraceCollector:
    """The traces under ``root`` (default "traces", where ``shardscope run`` and ``make run``
    write), and the way to add one (collect)."""

    def __init__(self, root: Union[str, "os.PathLike[str]"] = "traces") -> None:
        self.root = os.fspath(root)

    def list_traces(self, model_name: Optional[str] = None, strategy: Optional[str] = None,
                    batch_size: Optional[int] = None, sequence_length: Optional[int] = None,
                    backend: Optional[str] = None, include_incomplete: bool = False, *,
                    experiment: Optional[str] = None, hardware: Optional[str] = None,
                    dtype: Optional[str] = None) -> list[dict[str, Any]]:
        """Stored traces matching every given filter, sorted by model, strategy, batch,
        sequence and timestamp; each a dict: trace, metadata (parsed, a TraceMetadata),
        metadata_path, model, strategy, batch_size, sequence_length, workload (a served
        run's, "" for a fixed batch), timestamp, what the
        run's metadata records of it — experiment, sweep, hardware, dtype, backend, nodes,
        ranks (as ``shardscope traces list --json``) — and trace_bytes. ``experiment``
        matches an experiment's name or its sweep's. A run still writing (no trace file
        yet) is left out unless ``include_incomplete``."""
        out = []
        for t in _shardscope.list_traces(root=self.root, model=model_name or "",
                                         strategy=strategy or "", experiment=experiment or "",
                                         hardware=hardware or "", dtype=dtype or "",
                                         backend=backend or ""):
            if not t["complete"] and not include_incomplete:
                continue
            if batch_size is not None and t["batch_size"] != batch_size:
                continue
            if sequence_length is not None and t["sequence_length"] != sequence_length:
                continue
            meta = _read_metadata(t) if t["metadata_path"] else {}
            identity = t["identity"]
            out.append({
                "trace": t["trace"],
                "metadata": TraceMetadata(meta, t["trace"], t["metadata_path"]),
                "metadata_path": t["metadata_path"],
                "model": t["model"],
                "strategy": t["strategy"],
                "batch_size": t["batch_size"],
                "sequence_length": t["sequence_length"],
                "workload": t["workload"],
                "timestamp": t["timestamp"],
                "experiment": identity["experiment"],
                "sweep": identity["sweep"],
                "hardware": identity["hardware"],
                "dtype": identity["dtype"],
                "backend": identity["backend"] or None,
                "nodes": identity["nodes"],
                "ranks": identity["ranks"],
                "trace_bytes": t["trace_bytes"],
            })
        return out

    def collect(self, experiment: api.ExperimentArg, config: Optional[api.PathArg] = None,
                backend: Optional[str] = None, decode_steps: Optional[int] = None,
                **options: Any) -> list[dict[str, Any]]:
        """Runs ``experiment`` (see shardscope.run) and records its trace in this store;
        returns the list_traces() entry of each trace written (one per experiment)."""
        results = api.run(experiment, backend=backend, config=config, trace=True, out=self.root,
                          decode_steps=decode_steps, **options)
        written = {r["trace"] for r in (results if isinstance(results, list) else [results])}
        return [t for t in self.list_traces() if t["trace"] in written]
