"""load_experiments, plan, check: the same as the command line's --json."""

import pandas as pd
import pytest

import shardscope as ss
from conftest import SMALL, cli_error, cli_json


def test_load_experiments_expands_sweeps_into_rows():
    df = ss.load_experiments(SMALL)
    assert isinstance(df, pd.DataFrame)
    assert list(df["name"]) == ["v2lite_tp2", "v2lite_tp4", "v2lite_batch_b1", "v2lite_batch_b4"]
    row = df.set_index("name").loc["v2lite_tp4"]
    assert (row["tp"], row["world_size"], row["batch_size"]) == (4, 4, 2)
    assert row["model"] == "deepseek-v2-lite"
    assert row["spec"]["parallelism"]["tp_size"] == 4
    assert df.set_index("name").loc["v2lite_batch_b4", "batch_size"] == 4


def test_load_one_experiment_or_sweep():
    assert list(ss.load_experiments(SMALL, "v2lite_batch")["name"]) == [
        "v2lite_batch_b1", "v2lite_batch_b4"]


def test_plan_equals_cli_json():
    assert ss.plan("v2lite_tp2", config=SMALL) == cli_json(
        "plan", "--config", SMALL, "--experiment", "v2lite_tp2", "--json")[0]


def test_plan_takes_a_row_of_load_experiments():
    row = ss.load_experiments(SMALL).iloc[1]
    p = ss.plan(row)
    assert p == ss.plan("v2lite_tp4", config=SMALL)


def test_check_equals_cli_json_and_a_sweep_gives_a_list():
    got = ss.check("v2lite_batch", config=SMALL)
    assert isinstance(got, list) and len(got) == 2
    assert got == cli_json("check", "--config", SMALL, "--experiment", "v2lite_batch", "--json")


def test_more_tensor_parallel_ranks_hold_less_weight_each():
    m2 = ss.plan("v2lite_tp2", config=SMALL)
    m4 = ss.plan("v2lite_tp4", config=SMALL)
    assert m4 != m2


def test_bad_config_raises_the_cli_message(tmp_path):
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(ss.InputError) as e:
        ss.load_experiments(missing)
    assert str(e.value) == cli_error("plan", "--config", missing)
    assert isinstance(e.value, ValueError) and e.value.code == "not_found"


def test_unknown_experiment_raises_the_cli_message():
    with pytest.raises(ss.InputError) as e:
        ss.plan("no_such_experiment", config=SMALL)
    assert str(e.value) == cli_error("plan", "--config", SMALL, "--experiment",
                                     "no_such_experiment")


def test_invalid_field_names_file_experiment_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("experiments:\n  - name: x\n    model: tiny-dense\n    hardware: h100-sxm\n"
                   "    parallelism: {tp_size: 1}\n    batch_size: two\n    sequence_length: 8\n")
    with pytest.raises(ValueError) as e:
        ss.check("x", config=str(bad))
    msg = str(e.value)
    assert str(bad) in msg and "experiment 'x'" in msg and "batch_size" in msg


def test_skip_invalid_warns_and_keeps_the_rest(tmp_path):
    cfg = tmp_path / "mixed.yaml"
    cfg.write_text("experiments:\n"
                   "  - {name: ok, model: tiny-dense, hardware: h100-sxm, batch_size: 1,"
                   " sequence_length: 8, parallelism: {tp_size: 1}}\n"
                   "  - {name: bad, model: tiny-dense, hardware: h100-sxm, batch_size: 1,"
                   " sequence_length: 8, parallelism: {tp_size: 3}}\n")
    with pytest.raises(ss.InputError):
        ss.load_experiments(str(cfg))
    with pytest.warns(UserWarning, match="bad"):
        df = ss.load_experiments(str(cfg), skip_invalid=True)
    assert list(df["name"]) == ["ok"]


def test_a_name_needs_a_config():
    with pytest.raises(ss.InputError, match="config="):
        ss.plan("v2lite_tp2")
