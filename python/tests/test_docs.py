"""docs/python.md's walkthrough and README.md's Python lines run as they stand (in a scratch
folder that sees configs/)."""

import os
import re

import pytest

from conftest import ROOT


def test_walkthrough_runs(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    text = open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8").read()
    section = text[text.index("## A notebook walkthrough"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    os.symlink(os.path.join(ROOT, "configs"), tmp_path / "configs")
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "docs/python.md", "exec"), namespace)
    assert len(namespace["runs"]) == 2
    assert set(namespace["busy"]["plan"]) == set(namespace["plans"])


# issue 35: README's block simulated without a trace, so its analyze("traces") found nothing.
def test_readme_python_lines_run_in_a_fresh_folder(tmp_path, monkeypatch):
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    section = text[text.index("## Python"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    code = "\n".join(line[4:] for line in block.splitlines()
                     if line.startswith(">>> ") or line.startswith("... "))
    os.symlink(os.path.join(ROOT, "configs"), tmp_path / "configs")
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)
    df = namespace["df"]
    assert len(df) > 0 and set(df["experiment"]) == {"tp4_deepseek_v2_lite"}


def test_traceset_example_runs(tmp_path, monkeypatch):
    text = open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8").read()
    section = text[text.index("## TraceSet"):text.index("## Functions")]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    os.symlink(os.path.join(ROOT, "configs"), tmp_path / "configs")
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "docs/python.md", "exec"), namespace)
    tb = namespace["tb"]
    assert list(tb["rank"]) == list(range(16))
    assert (tb["pipeline_bubble"] > 0).any()  # tp8 × pp2: the second stage waits
    change = namespace["change"]
    assert set(change[change.scope_kind == "run"]["name"]) == {"ttft", "comm_fraction"}
