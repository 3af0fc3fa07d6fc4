"""Issue 35's hostile inputs from Python: each raises InputError with the command line's
message (never a pandas or pybind TypeError), strings are never split into characters,
and Ctrl-C leaves nothing behind."""

import os
import signal
import threading

import pytest

import shardscope as ss
from conftest import SMALL, cli_error

TINY = ("experiments:\n  - {name: tiny, model: tiny-dense, hardware: h100-sxm,\n"
        "     parallelism: {tp_size: 1}, batch_size: 1, sequence_length: 8,\n"
        "     tokens_to_generate: 2}\n")


def _tiny(tmp_path, extra=""):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY.replace("tokens_to_generate: 2}", "tokens_to_generate: 2" + extra + "}"))
    return cfg


def test_out_empty_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ss.InputError, match="out: an empty path"):
        ss.simulate("tiny", config=_tiny(tmp_path), trace=True, out="")
    assert [p.name for p in tmp_path.iterdir()] == ["tiny.yaml"]


def test_huge_layers_and_requests_are_input_errors_with_the_cli_message(tmp_path):
    cfg = tmp_path / "layers.yaml"
    cfg.write_text(TINY.replace("model: tiny-dense", "model: {base: tiny-dense, num_layers: 1e8}"))
    with pytest.raises(ss.InputError) as e:
        ss.plan("tiny", config=cfg)
    assert str(e.value) == cli_error("plan", "--config", str(cfg))
    assert "at most 10000 layers" in str(e.value)
    served = _tiny(tmp_path, ", workload: {arrivals: {process: poisson, rate_per_s: 10},"
                             " prompt_tokens: 8, output_tokens: 2, requests: 1e9}")
    with pytest.raises(ss.InputError, match="field 'workload.requests': is 1000000000"):
        ss.simulate("tiny", config=served)


def test_dev_zero_as_config_is_an_input_error():
    with pytest.raises(ss.InputError, match="/dev/zero: file is a character device"):
        ss.load_experiments("/dev/zero")


def test_simulate_of_a_load_experiments_frame(tmp_path):
    cfg = _tiny(tmp_path)
    one = ss.simulate(ss.load_experiments(cfg))  # one row: that experiment
    assert one["experiment"] == "tiny"
    with pytest.raises(ss.InputError, match="a DataFrame of 4 experiments; pass one row"):
        ss.simulate(ss.load_experiments(SMALL).head(4))


def test_analyze_none_and_wrong_types_are_input_errors():
    with pytest.raises(ss.InputError, match="paths: expected a trace path or a list of them, "
                                            "got None"):
        ss.analyze(None)
    with pytest.raises(ss.InputError, match="paths: expected a path, got int"):
        ss.analyze([3])
    with pytest.raises(ss.InputError, match="config: expected a path, got int"):
        ss.plan("tiny", config=5)
    with pytest.raises(ss.InputError, match="backend: expected a string, got int"):
        ss.run("tiny", config=SMALL, backend=7)


def test_metrics_string_is_one_metric_not_characters(tmp_path):
    store = tmp_path / "store"
    ss.simulate("tiny", config=_tiny(tmp_path), trace=True, out=store)
    df = ss.analyze(store, metrics="ttft")
    assert set(df["name"]) == {"ttft"}, set(df["name"])
    with pytest.raises(ss.InputError, match="metrics: expected strings, got int"):
        ss.analyze(store, metrics=[1])


def test_mpirun_args_string_is_split_at_spaces_and_hostfile_must_exist(tmp_path):
    cfg = _tiny(tmp_path)
    with pytest.raises(ss.InputError, match="hostfile: no such file: nope"):
        ss.run("tiny", config=cfg, backend="cpu", hostfile="nope")
    # A list must hold strings ("abc" itself is split at spaces, as --mpirun-args is).
    with pytest.raises(ss.InputError, match="mpirun_args: expected strings, got int"):
        ss.run("tiny", config=cfg, mpirun_args=[1])


def test_empty_experiment_name_is_refused():
    with pytest.raises(ss.InputError, match="experiment: an empty name"):
        ss.load_experiments(SMALL, experiment="")


def test_ctrl_c_while_a_served_run_writes_its_trace_leaves_nothing(tmp_path):
    # A served run writes its whole trace at the end: Ctrl-C then let it finish and keep it.
    cfg = tmp_path / "served.yaml"
    cfg.write_text("experiments:\n  - {name: served, model: llama-3.1-8b, hardware: h100-sxm,\n"
                   "     parallelism: {tp_size: 2}, batch_size: 8, sequence_length: 512,\n"
                   "     workload: {arrivals: {process: poisson, rate_per_s: 50},\n"
                   "                prompt_tokens: 512, output_tokens: 64, requests: 100000}}\n")
    store = tmp_path / "store"

    def interrupt_once_writing():
        for _ in range(30000):
            if store.exists() and any(store.rglob("metadata_*")):
                break
            threading.Event().wait(0.002)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_writing, daemon=True).start()
    with pytest.raises(KeyboardInterrupt) as e:
        ss.simulate("served", config=cfg, trace=True, out=store)
    assert isinstance(e.value, ss.Cancelled), type(e.value)
    assert [p for p in store.rglob("*") if p.is_file()] == []
