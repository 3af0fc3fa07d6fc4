"""Served runs from Python: per-request rows (issue 33), with and without a trace."""

import math

import pytest

import shardscope as ss
from conftest import cli_json

SERVED = """
experiments:
  - name: served_tiny
    model: tiny-dense
    hardware: {base: h100-sxm, nodes: 1}
    parallelism: {tp_size: 2}
    batch_size: 1
    sequence_length: 64
    seed: 3
    workload:
      arrivals: {process: poisson, rate_per_s: 50}
      prompt_tokens: 64
      output_tokens: {distribution: uniform, min: 1, max: 6}
      requests: 12
      warmup_requests: 2
"""


@pytest.fixture
def served_config(tmp_path):
    path = tmp_path / "served.yaml"
    path.write_text(SERVED)
    return str(path)


def test_requests_dataframe_has_one_row_per_request(served_config):
    r = ss.simulate("served_tiny", config=served_config)
    df = ss.requests(r)
    assert list(df.columns) == ss.api.REQUEST_COLUMNS
    assert len(df) == 12
    assert list(df["id"]) == list(range(12))
    assert df["warmup"].sum() == 2
    measured = df[~df["warmup"]]
    # The rows' figures are the run's statistics' own.
    assert measured["ttft_s"].mean() == pytest.approx(r["metrics"]["ttft_s"]["mean"], rel=1e-12)
    assert measured["e2e_latency_s"].max() == pytest.approx(
        r["metrics"]["e2e_latency_s"]["max"], rel=1e-12)
    # TPOT only where there is a gap: output tokens > 1.
    for _, row in df.iterrows():
        assert math.isnan(row["tpot_s"]) == (row["output_tokens"] <= 1)
        assert row["ttft_s"] == pytest.approx(row["first_token_s"] - row["arrival_s"])


def test_requests_rows_equal_the_cli_json_with_and_without_a_trace(served_config, tmp_path):
    want = cli_json("run", "--config", served_config, "--no-trace", "--json")[0]["requests"]
    traced = ss.run("served_tiny", config=served_config, out=str(tmp_path / "store"))
    assert traced["trace"]
    assert traced["requests"] == want


def test_requests_of_a_fixed_batch_is_an_input_error():
    from conftest import SMALL
    r = ss.simulate("v2lite_tp2", config=SMALL, decode_steps=1)
    with pytest.raises(ss.InputError, match="not a served run"):
        ss.requests(r)


def test_decode_steps_on_a_served_experiment_is_an_input_error(served_config):
    with pytest.raises(ss.InputError, match="--decode-steps 2: experiment 'served_tiny'"):
        ss.simulate("served_tiny", config=served_config, decode_steps=2)
