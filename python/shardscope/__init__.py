"""ShardScope from Python: plan, simulate, run and analyse parallel LLM inference.

    import shardscope as ss
    exps = ss.load_experiments("configs/experiments.yaml")   # DataFrame
    ss.simulate(exps.iloc[0], decode_steps=2)                 # dict
    df = ss.analyze("traces")                                 # tidy DataFrame of metrics
    ts = ss.TraceSet("traces")                                # read once, then ask:
    ts.time_breakdown(); ts.comm_overlap(); ts.metrics(names=["ttft"])

and the seeds' classes, ``TraceCollector`` and ``MetricsCalculator``. docs/python.md.
"""

from shardscope._shardscope import __version__
from shardscope.api import (analyze, analyze_runs, check, compare, compare_runs, load_experiments,
                            plan, requests, run, simulate)
from shardscope.collective import collective
from shardscope.collector import TraceCollector, TraceMetadata
from shardscope.errors import Cancelled, Error, InputError, RunError
from shardscope.metrics import MetricsCalculator
from shardscope.traceset import TraceSet

__all__ = [
    "Cancelled", "Error", "InputError", "MetricsCalculator", "RunError", "TraceCollector",
    "TraceMetadata", "TraceSet", "__version__", "analyze", "analyze_runs", "check", "collective",
    "compare", "compare_runs", "load_experiments", "plan", "requests", "run", "simulate",
]
