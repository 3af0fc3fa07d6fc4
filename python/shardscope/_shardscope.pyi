# Type stub of the pybind11 extension `shardscope._shardscope` (src/python/): what
# python/shardscope calls. Every argument is keyword-only. Failures raise the exceptions of
# shardscope.errors (InputError, RunError, Cancelled). Results are plain dicts and lists as
# the command line's --json prints them.
from typing import Any

__version__: str

# Experiments of a YAML file (experiment_bindings.cc); each returns (results, messages of
# the experiments skip_invalid left out).
def load_experiments(*, config: str, experiment: str = "",
                     skip_invalid: bool = False) -> tuple[list[dict[str, Any]], list[str]]: ...
def plan(*, config: str, experiment: str = "",
         skip_invalid: bool = False) -> tuple[list[dict[str, Any]], list[str]]: ...
def check(*, config: str, experiment: str = "",
          skip_invalid: bool = False) -> tuple[list[dict[str, Any]], list[str]]: ...
def run(*, config: str, experiment: str = "", skip_invalid: bool = False, backend: str = "",
        trace_root: str = "traces", trace_file: str = "", write_trace: bool = True,
        decode_steps: int = -1, calibration: str = "", algorithm: str = "auto",
        protocol: str = "auto", all_to_all: str = "auto",
        hostfile: str = "", mpirun_args: list[str] = ..., worker_binary: str = "",
        trace_compression: str = "") -> tuple[list[dict[str, Any]], list[str]]: ...

# The analyzer's results of the runs under some paths, read once (analysis_bindings.cc).
class Analyses:
    # One dict per run: trace, trace_paths, metadata_path, format, identity, warnings,
    # skipped_events, read_summary, and metadata unless with_metadata is False.
    def runs(self, *, with_metadata: bool = True) -> list[dict[str, Any]]: ...
    # Per run, its metrics selected as `analyze --metric` (all when names is empty) as
    # parallel columns: name, scope, value (None: unavailable), unit, aggregation,
    # unavailable.
    def metrics(self, *, names: list[str] = ...) -> list[dict[str, list[Any]]]: ...
    # Per run, its request spans as parallel columns (traceset.TRACE_REQUEST_COLUMNS less
    # trace and experiment; None where a figure does not exist).
    def requests(self) -> list[dict[str, list[Any]]]: ...
    def __len__(self) -> int: ...

def open_traces(*, paths: list[str], trace_format: str = "auto",
                align_clocks: str = "as-recorded", workload_card: str = "") -> Analyses: ...
# One dict per run: Analyses.runs(with_metadata=False) with "columns", its selected metrics.
def analyze(*, paths: list[str], metrics: list[str] = ..., trace_format: str = "auto",
            align_clocks: str = "as-recorded", workload_card: str = "") -> list[dict[str, Any]]: ...

# Comparisons and the store (trace_bindings.cc).
def compare(*, paths: list[str], baseline: str = "", metrics: list[str] = ...,
            per_rank: bool = False, experiment: str = "", hardware: str = "", dtype: str = "",
            backend: str = "") -> dict[str, Any]: ...
def list_traces(*, root: str = "traces", model: str = "", strategy: str = "",
                experiment: str = "", hardware: str = "", dtype: str = "",
                backend: str = "") -> list[dict[str, Any]]: ...
