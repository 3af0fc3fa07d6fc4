"""``shardscope.collective()``: one collective timed on its own, as ``shardscope collective``.

The sweep in nccl-tests' columns, or the MoE dispatch/combine in DeepEP's, as a DataFrame
whose ``attrs`` carry the title and the columns' definitions (docs/sim.md "Collectives").
"""

import json
import subprocess
from typing import Union

import pandas as pd

from shardscope._binary import shardscope_binary
from shardscope.errors import InputError, RunError

_OPTIONS = ("nodes", "ranks", "sizes", "algorithm", "protocol", "type", "calibration", "kernel",
            "tokens", "hidden", "topk", "experts", "groups", "group_limit")


def collective(hardware: str, op: str = "all_reduce",
               **options: Union[str, int, float, None]) -> pd.DataFrame:
    """Times ``op`` on the cluster ``hardware`` (a zoo name or a hardware YAML file).

    Keyword options are the command's flags: nodes, ranks, sizes ("8:8G:x2"), algorithm,
    protocol, type, calibration; for op "dispatch" / "combine": kernel ("normal" or
    "low_latency"), tokens, hidden, topk, experts, groups, group_limit. Bad input raises
    InputError with the command's message.
    """
    if not isinstance(hardware, str) or not hardware:
        raise InputError("hardware: expected a zoo name or a hardware YAML file")
    if not isinstance(op, str):
        raise InputError("op: expected a collective name such as 'all_reduce'")
    binary = shardscope_binary()
    if not binary:
        raise RunError("the shardscope executable was not found (set SHARDSCOPE_BINARY)")
    args = [binary, "collective", "--hardware", hardware, "--op", op, "--format", "json"]
    for key, value in options.items():
        if key not in _OPTIONS:
            raise InputError(f"collective: unknown option '{key}' (one of {', '.join(_OPTIONS)})")
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise InputError(f"{key}: expected a string or a number, not {type(value).__name__}")
        args += ["--" + key.replace("_", "-"), str(value)]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        message = done.stderr.strip().removeprefix("shardscope: error: ")
        raise (InputError if done.returncode == 2 else RunError)(message)
    table = json.loads(done.stdout)
    frame = pd.DataFrame(table["rows"], columns=table["columns"])
    frame.attrs["title"] = table["title"]
    frame.attrs["notes"] = table["notes"]
    return frame
