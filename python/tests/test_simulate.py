"""simulate and run (backend sim): the command line's results, the store, the trace."""

import os

import pytest

import shardscope as ss
from conftest import SMALL, cli_error, cli_json


def test_simulate_equals_cli_run_json():
    got = ss.simulate("v2lite_tp2", config=SMALL, decode_steps=2)
    want = cli_json("run", "--config", SMALL, "--experiment", "v2lite_tp2", "--backend", "sim",
                    "--decode-steps", "2", "--no-trace", "--json")[0]
    for key in ("ttft_s", "tpot_s", "decode_tokens_per_s", "bound_ttft_s", "bound_tpot_s"):
        assert got[key] == pytest.approx(want[key], rel=1e-12), key
    assert got["trace"] == ""


def test_simulated_latency_respects_the_physical_bounds():
    r = ss.simulate("v2lite_tp2", config=SMALL)
    assert r["ttft_s"] >= r["bound_ttft_s"] > 0
    assert r["tpot_s"] >= r["bound_tpot_s"] > 0


def test_simulate_a_sweep_gives_one_result_per_point():
    rs = ss.simulate("v2lite_batch", config=SMALL, decode_steps=1)
    assert [r["experiment"] for r in rs] == ["v2lite_batch_b1", "v2lite_batch_b4"]
    # Four requests in lock step take at least as long per step as one.
    assert rs[1]["tpot_s"] >= rs[0]["tpot_s"]


def test_simulate_with_a_trace_writes_the_store(tmp_path):
    store = tmp_path / "traces"
    r = ss.simulate("v2lite_tp2", config=SMALL, decode_steps=2, trace=True, out=store)
    assert r["trace"].startswith(str(store)) and os.path.getsize(r["trace"]) > 0
    traces = ss.TraceCollector(store).list_traces()
    assert [t["trace"] for t in traces] == [r["trace"]]
    assert traces[0]["backend"] == "sim"


def test_negative_decode_steps_is_an_input_error():
    with pytest.raises(ss.InputError, match="decode_steps"):
        ss.simulate("v2lite_tp2", config=SMALL, decode_steps=-1)


def test_unknown_backend_raises_the_cli_message():
    with pytest.raises(ss.InputError) as e:
        ss.run("v2lite_tp2", backend="tpu", config=SMALL, trace=False)
    assert str(e.value) == cli_error("run", "--config", SMALL, "--experiment", "v2lite_tp2",
                                     "--backend", "tpu", "--no-trace")


def test_cuda_backend_is_a_clear_not_built_error():
    with pytest.raises(ss.InputError) as e:
        ss.run("v2lite_tp2", backend="cuda", config=SMALL, trace=False)
    assert e.value.code == "unimplemented"


def test_a_file_as_the_store_is_an_input_error(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ss.InputError, match="exists and is not a directory"):
        ss.simulate("v2lite_tp2", config=SMALL, decode_steps=1, trace=True, out=f)


def test_ctrl_c_stops_a_simulation_and_leaves_nothing(tmp_path):
    import os
    import signal
    import threading
    cfg = tmp_path / "long.yaml"
    cfg.write_text("experiments:\n  - {name: long, model: deepseek-v3, hardware: h100-sxm,\n"
                   "     parallelism: {ep_size: 64, tp_size: 2}, batch_size: 64,\n"
                   "     sequence_length: 4096, tokens_to_generate: 400}\n")
    store = tmp_path / "store"

    def interrupt_once_writing():
        for _ in range(3000):
            if store.exists() and any(store.rglob("metadata_*")):
                break
            threading.Event().wait(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_once_writing, daemon=True).start()
    with pytest.raises(KeyboardInterrupt) as e:
        ss.simulate("long", config=str(cfg), trace=True, out=store)
    assert isinstance(e.value, ss.Cancelled), type(e.value)
    # Raised by the extension as shardscope.Cancelled: not an Exception, so `except
    # Exception:` in user code does not swallow Ctrl-C.
    assert not isinstance(e.value, Exception) and e.value.code == "cancelled"
    assert [p for p in store.rglob("*") if p.is_file()] == []


def test_simulate_forces_protocol_and_all_to_all_as_the_cli_does():
    got = ss.simulate("v2lite_tp2", config=SMALL, decode_steps=2, algorithm="ring",
                      protocol="simple", all_to_all="nccl")
    want = cli_json("run", "--config", SMALL, "--experiment", "v2lite_tp2", "--decode-steps", "2",
                    "--no-trace", "--json", "--algorithm", "ring", "--protocol", "simple",
                    "--all-to-all", "nccl")[0]
    assert got["tpot_s"] == pytest.approx(want["tpot_s"], rel=1e-12)
    with pytest.raises(ss.InputError, match="protocol 'fast'"):
        ss.simulate("v2lite_tp2", config=SMALL, decode_steps=1, protocol="fast")
