"""The seeds' inference harness, on the library:

    python3 -m shardscope.harness --config configs/experiments.yaml [--experiment NAME]

runs the experiments (each on its own backend unless --backend says otherwise), records
their traces in the store (default ./traces, as ``shardscope run``) and prints one line per
experiment: TTFT, TPOT, throughput and the trace. Bad input exits with 2 and one message.
"""

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from shardscope import api
from shardscope.errors import Cancelled, InputError, RunError


def _seconds(s: Optional[float]) -> str:
    if s is None:
        return "—"
    return f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.3f} s"


def summary_line(r: Mapping[str, Any]) -> str:
    """One line for a run result (a dict of shardscope.run)."""
    tps = r.get("decode_tokens_per_s")
    head = (f"{r['experiment']} (cpu, {r['ranks']} ranks)" if r["backend"] == "cpu"
            else f"{r['experiment']} ({r['backend']})")
    line = f"{head}: TTFT {_seconds(r.get('ttft_s'))}, TPOT {_seconds(r.get('tpot_s'))}"
    if tps:
        line += f", decode {tps:,.0f} tokens/s"
    if r.get("trace"):
        line += f"\n  trace {r['trace']}"
    for i, tokens in enumerate(r.get("tokens") or []):
        line += f"\n  request {i} generated: {' '.join(map(str, tokens))}"
    return line


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m shardscope.harness", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True, help="experiments YAML file")
    p.add_argument("--experiment", help="only this experiment (or sweep)")
    p.add_argument("--backend", help="sim or cpu (default: each experiment's own)")
    p.add_argument("--out", default="traces", help="trace store root (default: traces)")
    p.add_argument("--decode-steps", type=int, help="simulate only the first N decode steps")
    p.add_argument("--no-trace", action="store_true", help="do not write traces")
    p.add_argument("--skip-invalid", action="store_true",
                   help="leave out experiments whose plan is invalid")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    a = p.parse_args(argv)
    try:
        results = api.run(a.experiment, backend=a.backend, config=a.config,
                          trace=not a.no_trace, out=a.out, decode_steps=a.decode_steps,
                          skip_invalid=a.skip_invalid)
    except InputError as e:
        print(f"shardscope: error: {e}", file=sys.stderr)
        return 2
    except Cancelled as e:
        print(f"shardscope: error: {e}", file=sys.stderr)
        return 130
    except RunError as e:
        print(f"shardscope: error: {e}", file=sys.stderr)
        return 1
    results = results if isinstance(results, list) else [results]
    if a.json:
        print(json.dumps(results, indent=2))
    else:
        for r in results:
            print(summary_line(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
