"""The store remembers what each run was: TraceCollector.list_traces, analyze and
compare_runs show experiment, hardware, dtype and backend, as the command line does."""

import io
import math

import pandas as pd
import pytest

import shardscope as ss
from conftest import cli, cli_error, cli_json

# Three runs of one model, strategy, batch and sequence length (one store folder) that
# differ only in hardware or dtype.
THREE_RUNS = """
defaults:
  model: deepseek-v2-lite
  parallelism: {strategy: tensor, tp_size: 2}
  batch_size: 2
  sequence_length: 128
  tokens_to_generate: 4
  seed: 0
experiments:
  - name: tp2_h100
    hardware: h100-sxm
  - name: tp2_a100
    hardware: a100-sxm
  - name: tp2_h100_fp32
    hardware: h100-sxm
    dtype: fp32
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = tmp_path_factory.mktemp("store")
    config = d / "experiments.yaml"
    config.write_text(THREE_RUNS)
    runs = ss.simulate(None, config=config, decode_steps=2, trace=True, out=d / "traces")
    return d / "traces", [r["trace"] for r in runs]


def test_runs_differing_only_in_hardware_are_listed_with_it(store):
    root, traces = store
    listed = ss.TraceCollector(root).list_traces()
    assert sorted(t["trace"] for t in listed) == sorted(traces)
    by_name = {t["experiment"]: t for t in listed}
    assert by_name["tp2_h100"]["hardware"] == "h100-sxm"
    assert by_name["tp2_a100"]["hardware"] == "a100-sxm"
    assert by_name["tp2_h100_fp32"]["dtype"] == "fp32"
    assert {t["backend"] for t in listed} == {"sim"}
    assert by_name["tp2_a100"]["nodes"] == 1 and by_name["tp2_a100"]["ranks"] == 2
    # The same fields as `shardscope traces list --json`.
    want = {t["trace"]: t for t in cli_json("traces", "list", "--json", "--root", str(root))}
    for t in listed:
        for k in ("experiment", "sweep", "hardware", "dtype", "backend", "nodes", "ranks"):
            assert t[k] == want[t["trace"]][k], k


def test_list_traces_filters_on_the_identity(store):
    root, _ = store
    c = ss.TraceCollector(root)
    assert [t["experiment"] for t in c.list_traces(hardware="a100-sxm")] == ["tp2_a100"]
    assert [t["experiment"] for t in c.list_traces(dtype="fp32")] == ["tp2_h100_fp32"]
    assert len(c.list_traces(hardware="h100-sxm")) == 2
    assert [t["experiment"] for t in c.list_traces(experiment="tp2_h100")] == ["tp2_h100"]
    assert c.list_traces(backend="cpu") == []
    # The seeds' positional form still works.
    assert len(c.list_traces("deepseek-v2-lite", "tensor", 2, 128, "sim")) == 3


def test_analyze_frame_names_the_run(store):
    _, traces = store
    df = ss.analyze(traces[1], metrics=["ttft"])
    assert list(df.columns) == ss.api.METRIC_COLUMNS
    assert set(df["hardware"]) == {"a100-sxm"}
    assert set(df["experiment"]) == {"tp2_a100"}
    assert set(df["backend"]) == {"sim"}


def _cli_csv(*args):
    return pd.read_csv(io.StringIO(cli(*args).stdout), keep_default_na=False,
                       na_values={"value": [""], "ratio": [""], "min": [""], "max": [""]})


def test_compare_runs_of_three_runs_equals_the_cli_and_the_hand_ratios(store):
    _, traces = store
    df = ss.compare_runs(traces, metrics=["ttft", "comm_time"])
    assert list(df.columns) == ss.api.COMPARISON_COLUMNS
    assert df.attrs["baseline"] == "tp2_h100"
    ttft = df[(df["metric"] == "ttft") & (df["scope"] == "")]
    assert list(ttft["run"]) == ["tp2_h100", "tp2_a100", "tp2_h100_fp32"]
    assert list(ttft["hardware"]) == ["h100-sxm", "a100-sxm", "h100-sxm"]
    want = [ss.analyze(t, metrics=["ttft"]).query("scope == ''")["value"].iloc[0]
            for t in traces]
    assert list(ttft["value"]) == pytest.approx(want, rel=1e-9)
    assert list(ttft["ratio"]) == pytest.approx([w / want[0] for w in want], rel=1e-9)
    per_rank = df[(df["metric"] == "comm_time") & (df["scope"] == "rank *")]
    assert list(per_rank["instances"]) == [2, 2, 2]
    assert (per_rank["min"] <= per_rank["value"]).all()
    assert (per_rank["value"] <= per_rank["max"]).all()

    # The command line's CSV has the same rows.
    got = _cli_csv("compare", "--format", "csv", "--metric", "ttft", "--metric", "comm_time",
                   *traces)
    assert list(got.columns) == list(df.columns)
    assert len(got) == len(df)
    for col in ("metric", "scope", "unit", "run", "trace", "experiment", "hardware", "dtype",
                "backend", "unavailable"):
        assert list(got[col].astype(str)) == list(df[col].astype(str)), col
    for col in ("value", "ratio", "min", "max"):
        for a, b in zip(got[col], df[col]):
            assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-8), col


def test_compare_runs_takes_a_store_and_a_baseline(store):
    root, traces = store
    df = ss.compare_runs(root, baseline=traces[1], metrics=["ttft"])
    assert df.attrs["baseline"] == "tp2_a100"
    assert len(df.attrs["runs"]) == 3
    assert df["ratio"].iloc[0] == 1.0
    fp32 = ss.compare_runs(root, baseline=traces[0], dtype="fp32", metrics=["ttft"])
    assert [r["experiment"] for r in fp32.attrs["runs"]] == ["tp2_h100", "tp2_h100_fp32"]
    full = ss.compare_runs(traces[:2], per_rank=True, metrics=["comm_time"])
    assert "rank 1" in set(full["scope"])
    assert full["instances"].isna().all()


def test_compare_runs_bad_input_raises_the_cli_message(store):
    _, traces = store
    with pytest.raises(ss.InputError) as e:
        ss.compare_runs([traces[0]])
    assert str(e.value) == cli_error("compare", traces[0])
