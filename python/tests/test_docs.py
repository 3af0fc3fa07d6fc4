"""docs/python.md's walkthrough runs as it stands (in a scratch folder that sees configs/)."""

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
