"""analyze, compare, MetricsCalculator: the analyzer's metrics, as `shardscope analyze`."""

import math

import pandas as pd
import pytest

import shardscope as ss
from conftest import SMALL, assert_same_metrics, cli, cli_error, cli_metrics, shared_testdata


def _as_dict(df):
    out = {}
    for r in df.itertuples():
        key = f"{r.name}[{r.scope}]" if r.scope else r.name
        out[key] = r.value if not math.isnan(r.value) else f"not available: {r.unavailable}"
    return out


@pytest.fixture(scope="module")
def sim_trace(tmp_path_factory):
    store = tmp_path_factory.mktemp("store")
    return ss.simulate("v2lite_tp2", config=SMALL, decode_steps=2, trace=True, out=store)["trace"]


def test_analyze_is_a_tidy_frame_equal_to_the_cli(sim_trace):
    df = ss.analyze(sim_trace)
    assert list(df.columns) == ss.api.METRIC_COLUMNS
    assert df["value"].dtype == "float64"
    assert set(df["scope_kind"]) >= {"run", "rank"}
    assert_same_metrics(_as_dict(df), cli_metrics(sim_trace))


def test_ttft_of_the_trace_is_the_simulated_ttft(sim_trace, tmp_path):
    r = ss.simulate("v2lite_tp2", config=SMALL, decode_steps=2)
    df = ss.analyze(sim_trace, metrics=["ttft"])
    ttft = df[(df["name"] == "ttft") & (df["scope_kind"] == "run")]["value"].iloc[0]
    assert ttft == pytest.approx(r["ttft_s"], rel=1e-6)


@pytest.mark.parametrize("parts", [
    ("kineto", "sglang_Qwen3-8B_decode.json.gz"),
    ("kineto", "graph_execution.json.gz"),
    ("nccl_profiler", "minimal_plugin_allreduce_4rank_a.jsonl"),
    ("kineto", "param_dlrm_8rank"),  # a directory: one 8-rank run
    ("xla", "tpu_inference_2.xplane.pb"),
])
def test_foreign_traces_match_the_cli(parts):
    path = shared_testdata(*parts)
    p = cli("analyze", path, "--format", "json", check=False)
    if p.returncode != 0:  # e.g. XSpace in a build without protobuf: the same error
        with pytest.raises(ss.InputError) as e:
            ss.analyze(path)
        assert "shardscope: error: " + str(e.value) == p.stderr.strip().splitlines()[-1]
        return
    assert_same_metrics(_as_dict(ss.analyze(path)), cli_metrics(path))


def test_metric_selection_takes_ccl_bench_names(sim_trace):
    df = ss.analyze(sim_trace, metrics=["ttft", "avg_step_time"])
    assert set(df["name"]) >= {"ttft", "avg_step_time"}
    with pytest.raises(ss.InputError) as e:
        ss.analyze(sim_trace, metrics=["no_such_metric"])
    assert str(e.value) == cli_error("analyze", sim_trace, "--metric", "no_such_metric")


def test_unreadable_trace_raises_the_cli_message(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"traceEvents": [{"ph": "X", ')
    with pytest.raises(ss.InputError) as e:
        ss.analyze(str(bad))
    assert str(e.value) == cli_error("analyze", str(bad))


def test_compare_ratio_and_change(tmp_path):
    a = ss.simulate("v2lite_tp2", config=SMALL, decode_steps=2, trace=True, out=tmp_path)
    b = ss.simulate("v2lite_tp4", config=SMALL, decode_steps=2, trace=True, out=tmp_path)
    c = ss.compare(a["trace"], b["trace"])
    row = c[(c["name"] == "ttft") & (c["scope_kind"] == "run")].iloc[0]
    assert row["baseline"] == pytest.approx(a["ttft_s"], rel=1e-6)
    assert row["proposed"] == pytest.approx(b["ttft_s"], rel=1e-6)
    assert row["ratio"] == pytest.approx(b["ttft_s"] / a["ttft_s"], rel=1e-6)
    assert row["change_percent"] == pytest.approx((row["ratio"] - 1) * 100, rel=1e-9)
    # A DataFrame from analyze() works as a side too.
    c2 = ss.compare(ss.analyze(a["trace"]), b["trace"])
    pd.testing.assert_frame_equal(c.reset_index(drop=True), c2.reset_index(drop=True))


def test_compute_all_metrics_takes_a_path(sim_trace):
    m = ss.MetricsCalculator().compute_all_metrics(sim_trace)
    assert_same_metrics(m, cli_metrics(sim_trace))


def test_compute_all_metrics_takes_a_plain_metadata_dict(sim_trace):
    import json
    import os
    meta_path = sim_trace.replace("trace_", "metadata_").replace(".trace", ".json")
    with open(meta_path) as f:
        meta = json.load(f)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(sim_trace))))
    m = ss.MetricsCalculator(root=root).compute_all_metrics(meta)
    assert m["ttft"] == pytest.approx(cli_metrics(sim_trace)["ttft"], rel=1e-6)


def test_compute_all_metrics_on_several_runs_says_so(tmp_path):
    ss.simulate("v2lite_tp2", config=SMALL, decode_steps=1, trace=True, out=tmp_path)
    ss.simulate("v2lite_tp4", config=SMALL, decode_steps=1, trace=True, out=tmp_path)
    with pytest.raises(ss.InputError, match="2 runs"):
        ss.MetricsCalculator().compute_all_metrics(str(tmp_path))
