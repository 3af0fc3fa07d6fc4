"""Shared fixtures: the source tree, the build tree (SHARDSCOPE_BUILD_DIR, default build/),
the shardscope binary as the independent reference, and the test configs."""

import json
import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
BUILD = os.environ.get("SHARDSCOPE_BUILD_DIR", os.path.join(ROOT, "build"))
TESTDATA = os.path.join(ROOT, os.pardir, "shared", "testdata")
SMALL = os.path.join(DATA, "small.yaml")
PROMPTS = os.path.join(DATA, "prompts.yaml")


def cli(*args, check=True):
    """Runs the shardscope binary; returns the CompletedProcess (text)."""
    binary = os.path.join(BUILD, "shardscope")
    p = subprocess.run([binary, *args], capture_output=True, text=True, cwd=ROOT)
    if check and p.returncode != 0:
        raise AssertionError(f"shardscope {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


def cli_json(*args):
    return json.loads(cli(*args).stdout)


def cli_error(*args):
    """The one-line message of a failing command (exit code 2)."""
    p = cli(*args, check=False)
    assert p.returncode == 2, (p.returncode, p.stderr)
    line = p.stderr.strip().splitlines()[-1]
    assert line.startswith("shardscope: error: "), line
    return line[len("shardscope: error: "):]


def shared_testdata(*parts):
    path = os.path.join(TESTDATA, *parts)
    if not os.path.exists(path):
        pytest.skip(f"{path} is not here (../shared/testdata)")
    return path


@pytest.fixture
def mpi_env(monkeypatch):
    """OpenMPI refuses root without these."""
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
    monkeypatch.setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    monkeypatch.setenv("OMPI_MCA_rmaps_base_oversubscribe", "1")


def cli_metrics(path, *extra):
    """{key: value or 'not available: …'} of the one run `shardscope analyze` prints (JSON
    values carry 9 significant digits)."""
    out = cli_json("analyze", path, "--format", "json", *extra)
    runs = out if isinstance(out, list) else [out]
    assert len(runs) == 1
    return {(m["name"] + (f"[{m['scope']}]" if m["scope"] else "")):
            (m["value"] if m.get("value") is not None
             else f"not available: {m.get('unavailable', '')}")
            for m in runs[0]["metrics"]}


def assert_same_metrics(got, want):
    """Same keys in the same order; numbers equal to 1e-6 relative, reasons equal."""
    assert list(got) == list(want)
    for k in want:
        if isinstance(want[k], str):
            assert got[k] == want[k], k
        else:
            assert got[k] == pytest.approx(want[k], rel=1e-6, abs=1e-12), k
