"""TraceSet (issue 31 item 8): a trace read once, answering DataFrames whose values are
checked against figures computed by hand from tiny traces written here; Cancelled is not an
Exception; the extension's stub matches the extension."""

import ast
import json
import math
import os

import pandas as pd
import pytest

import shardscope as ss
from shardscope import _shardscope
from conftest import SMALL


def _op(rank, tid, ts, dur, name, cat, **args):
    return {"ph": "X", "pid": rank, "tid": tid, "ts": ts, "dur": dur, "name": name, "cat": cat,
            "args": args}


def _comm(rank, ts, dur):
    return _op(rank, 1, ts, dur, "allreduce.tp", "comm", kind="all_reduce",
               collective="all_reduce", dim="tp", group=[0, 1], bytes=1024, phase="prefill")


def _write(path, events):
    path.write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}))
    return str(path)


# Two ranks, times in µs. The run window W = [0, 20).
#   rank 0: compute [0, 10) prefill and [16, 20) decode; all-reduce [8, 14) prefill
#           compute 14, comm 6, overlap |[8, 10)| = 2, exposed 4, busy |[0, 14) ∪ [16, 20)| = 18,
#           idle 2
#   rank 1: compute [0, 6) prefill; all-reduce [8, 14) prefill
#           compute 6, comm 6, overlap 0, exposed 6, busy 12, idle 8
def _two_ranks(path, rank0_first_compute_us=10):
    return _write(path, [
        _op(0, 0, 0, rank0_first_compute_us, "L0.mlp", "compute", kind="ffn_up",
            phase="prefill"),
        _op(0, 0, 16, 4, "L0.mlp", "compute", kind="ffn_up", phase="decode"),
        _comm(0, 8, 6),
        _op(1, 0, 0, 6, "L0.mlp", "compute", kind="ffn_up", phase="prefill"),
        _comm(1, 8, 6),
    ])


US = 1e-6


@pytest.fixture
def trace(tmp_path):
    return _two_ranks(tmp_path / "two_ranks.json")


def test_time_breakdown_is_the_hand_computed_one(trace):
    ts = ss.TraceSet(trace)
    assert len(ts) == 1 and ts.traces == [trace]
    df = ts.time_breakdown()
    assert list(df.columns) == ss.traceset.TIME_BREAKDOWN_COLUMNS
    assert list(df["rank"]) == [0, 1] and list(df["phase"]) == ["", ""]
    assert set(df["trace"]) == {trace}
    want = {
        0: dict(wall_time=20, busy_time=18, compute_time=14, comm_time=6, overlap_time=2,
                exposed_comm_time=4, idle_time=2),
        1: dict(wall_time=20, busy_time=12, compute_time=6, comm_time=6, overlap_time=0,
                exposed_comm_time=6, idle_time=8),
    }
    for row in df.itertuples():
        for column, us in want[row.rank].items():
            assert getattr(row, column) == pytest.approx(us * US, abs=1e-12), (row.rank, column)
        # No receive ops: no pipeline bubble to speak of.
        assert math.isnan(row.pipeline_bubble)
        # compute + exposed comm + idle = wall time on every rank.
        assert row.compute_time + row.exposed_comm_time + row.idle_time == pytest.approx(
            row.wall_time)


def test_time_breakdown_by_phase(trace):
    df = ss.TraceSet(trace).time_breakdown(phases=True)
    assert list(df.columns) == ss.traceset.TIME_BREAKDOWN_COLUMNS
    got = {(r.rank, r.phase): (r.compute_time, r.comm_time, r.overlap_time)
           for r in df.itertuples()}
    # rank 0 prefill: compute [0, 10), comm [8, 14); decode: compute [16, 20).
    assert got[(0, "prefill")] == pytest.approx((10 * US, 6 * US, 2 * US), abs=1e-12)
    assert got[(0, "decode")][0] == pytest.approx(4 * US, abs=1e-12)
    assert got[(1, "prefill")] == pytest.approx((6 * US, 6 * US, 0), abs=1e-12)
    assert df["wall_time"].isna().all()


def test_comm_overlap_is_the_hand_computed_one(trace):
    df = ss.TraceSet(trace).comm_overlap()
    assert list(df.columns) == ss.traceset.COMM_OVERLAP_COLUMNS
    assert list(df["rank"]) == [0, 1]
    assert list(df["comm_time"]) == pytest.approx([6 * US, 6 * US], abs=1e-12)
    assert list(df["overlap_time"]) == pytest.approx([2 * US, 0], abs=1e-12)
    assert list(df["exposed_comm_time"]) == pytest.approx([4 * US, 6 * US], abs=1e-12)
    assert list(df["overlap"]) == pytest.approx([2 / 6, 0.0])


def test_metrics_equal_analyze_and_select_by_name(trace):
    ts = ss.TraceSet(trace)
    df = ts.metrics()
    assert list(df.columns) == ss.api.METRIC_COLUMNS
    pd.testing.assert_frame_equal(df, ss.analyze(trace), check_like=False)
    run = df[df["scope"] == ""].set_index("name")["value"]
    assert run["wall_time"] == pytest.approx(20 * US)
    assert run["overlap"] == pytest.approx(2 / 12)  # Σ overlap / Σ comm over ranks
    assert run["comm_fraction"] == pytest.approx(12 / 32)  # Σ comm / Σ (comm + compute)
    one = ts.metrics(names="comm_fraction")
    assert set(one["name"]) == {"comm_fraction"}
    assert one[one["scope"] == ""]["value"].iloc[0] == pytest.approx(12 / 32)
    # A returned frame is the caller's: changing it leaves the TraceSet's alone.
    df.loc[:, "value"] = 0.0
    assert ts.metrics()[lambda d: d["name"] == "wall_time"]["value"].iloc[0] == pytest.approx(
        20 * US)
    with pytest.raises(ss.InputError, match="no_such_metric"):
        ts.metrics(names=["no_such_metric"])


def test_the_traces_are_read_once(tmp_path):
    path = _two_ranks(tmp_path / "t.json")
    ts = ss.TraceSet(path)
    os.remove(path)  # every answer comes from what was read when the TraceSet was made
    assert len(ts.time_breakdown()) == 2
    assert len(ts.comm_overlap()) == 2
    assert len(ts.metrics(names=["ttft"])) >= 1
    assert ts.runs[0]["trace_paths"] == [path]


def test_compare_two_runs(tmp_path):
    # The proposed run's rank 0 computes [0, 6) instead of [0, 10): compute 10 instead of 14.
    base = ss.TraceSet(_two_ranks(tmp_path / "base.json"))
    new = ss.TraceSet(_two_ranks(tmp_path / "new.json", rank0_first_compute_us=6))
    df = base.compare(new, names=["compute_time", "overlap_time"])
    assert list(df.columns) == ss.api.CHANGE_COLUMNS
    row = df[(df["name"] == "compute_time") & (df["scope"] == "rank 0")].iloc[0]
    assert row["baseline"] == pytest.approx(14 * US) and row["proposed"] == pytest.approx(10 * US)
    assert row["ratio"] == pytest.approx(10 / 14)
    assert row["change_percent"] == pytest.approx(-400 / 14)
    # rank 0's overlap vanishes (compute ends at 6, the all-reduce starts at 8).
    row = df[(df["name"] == "overlap_time") & (df["scope"] == "rank 0")].iloc[0]
    assert row["proposed"] == 0 and row["change_percent"] == pytest.approx(-100)
    # A zero baseline gives NaN, not inf.
    row = df[(df["name"] == "overlap_time") & (df["scope"] == "rank 1")].iloc[0]
    assert row["baseline"] == 0 and math.isnan(row["ratio"])
    # The same rows as shardscope.compare() of the two files.
    want = ss.compare(base.traces[0], new.traces[0], metrics=["compute_time", "overlap_time"])
    pd.testing.assert_frame_equal(df.reset_index(drop=True), want.reset_index(drop=True))


def test_compare_needs_one_run_a_side(tmp_path):
    a = _two_ranks(tmp_path / "a.json")
    b = _two_ranks(tmp_path / "b.json")
    both = ss.TraceSet([a, b])
    assert len(both) == 2
    # Per-rank frames cover both runs, in the order given.
    assert list(both.time_breakdown()["trace"]) == [a, a, b, b]
    with pytest.raises(ss.InputError, match="holds 2 runs"):
        both.compare(ss.TraceSet(a))
    with pytest.raises(ss.InputError, match="expected a TraceSet"):
        ss.TraceSet(a).compare(b)


# A served run's two requests on replica 0 (µs):
#   id 0: arrival 0, scheduled 10, first token 30, last token 90, response 100, 4 output tokens
#         queueing 10, TTFT 30, TPOT (90 − 30) / 3 = 20, e2e 100
#   id 1: warm-up, arrival 20, scheduled 20, first token 50, response 80, 1 output token, no
#         last_token_us (the span's end stands in): queueing 0, TTFT 30, no TPOT, e2e 60
def _served(path):
    def request(ts, dur, lane, **req):
        return _op(0, lane, ts, dur, f"request {req['id']}", "other", kind="request",
                   request=req)
    return _write(path, [
        request(0, 100, 1, id=0, prompt_tokens=16, output_tokens=4, scheduled_us=10,
                first_token_us=30, last_token_us=90),
        request(20, 60, 2, id=1, prompt_tokens=8, output_tokens=1, scheduled_us=20,
                first_token_us=50, warmup=True),
        _op(0, 0, 10, 20, "iteration", "other", kind="iteration"),
    ])


def test_requests_of_a_served_trace_are_the_hand_computed_ones(tmp_path):
    ts = ss.TraceSet(_served(tmp_path / "served.json"))
    df = ts.requests()
    assert list(df.columns) == ss.traceset.TRACE_REQUEST_COLUMNS
    assert list(df["id"]) == [0, 1]
    assert list(df["replica"]) == [0, 0]
    assert list(df["warmup"]) == [False, True]
    assert list(df["prompt_tokens"]) == [16, 8] and list(df["output_tokens"]) == [4, 1]
    r0, r1 = df.iloc[0], df.iloc[1]
    for column, us in dict(arrival_s=0, first_scheduled_s=10, first_token_s=30,
                           last_token_s=90, finish_s=100, queueing_delay_s=10, ttft_s=30,
                           tpot_s=20, e2e_latency_s=100).items():
        assert r0[column] == pytest.approx(us * US, abs=1e-12), column
    for column, us in dict(arrival_s=20, queueing_delay_s=0, ttft_s=30, last_token_s=80,
                           e2e_latency_s=60).items():
        assert r1[column] == pytest.approx(us * US, abs=1e-12), column
    assert math.isnan(r1["tpot_s"]) and df["kv_arrival_s"].isna().all()
    # The analyzer's statistics over the measured request are the row's own.
    run = ts.metrics(names=["request"]).set_index("name")["value"]
    assert run["request.ttft.mean"] == pytest.approx(r0["ttft_s"])
    assert run["request.tpot.mean"] == pytest.approx(r0["tpot_s"])


def test_requests_without_request_spans_is_an_input_error(trace):
    with pytest.raises(ss.InputError, match="no request spans"):
        ss.TraceSet(trace).requests()


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


def test_requests_of_a_simulated_served_trace_equal_its_results(tmp_path):
    cfg = tmp_path / "served.yaml"
    cfg.write_text(SERVED)
    r = ss.simulate("served_tiny", config=str(cfg), trace=True, out=tmp_path / "store")
    want = ss.requests(r)
    got = ss.TraceSet(r["trace"]).requests()
    assert got["experiment"].eq("served_tiny").all()
    assert list(got["id"]) == sorted(want["id"]) or sorted(got["id"]) == sorted(want["id"])
    got = got.set_index("id").sort_index()
    want = want[~want["rejected"]].set_index("id").sort_index()
    assert list(got.index) == list(want.index)
    for column in ["arrival_s", "first_scheduled_s", "first_token_s", "finish_s",
                   "queueing_delay_s", "ttft_s", "tpot_s", "e2e_latency_s"]:
        assert got[column].to_numpy() == pytest.approx(want[column].to_numpy(), abs=1e-9,
                                                       nan_ok=True), column
    for column in ["prompt_tokens", "output_tokens", "warmup", "preemptions"]:
        assert list(got[column]) == list(want[column]), column


def test_a_store_folder_is_one_trace_set_with_the_runs_identity(tmp_path):
    for name in ("v2lite_tp2", "v2lite_tp4"):
        ss.simulate(name, config=SMALL, decode_steps=1, trace=True, out=tmp_path)
    ts = ss.TraceSet(tmp_path)
    assert len(ts) == 2
    assert sorted(r["identity"]["experiment"] for r in ts.runs) == ["v2lite_tp2", "v2lite_tp4"]
    assert all(r["metadata"]["experiment"]["name"] == r["identity"]["experiment"]
               for r in ts.runs)
    df = ts.time_breakdown()
    # tp2 has 2 ranks, tp4 has 4.
    assert sorted(df.groupby("trace")["rank"].count()) == [2, 4]
    assert (df["compute_time"] + df["exposed_comm_time"] + df["idle_time"]).to_numpy() == \
        pytest.approx(df["wall_time"].to_numpy(), rel=1e-9)


def test_bad_input_is_an_input_error_naming_the_argument(tmp_path):
    with pytest.raises(ss.InputError, match="paths"):
        ss.TraceSet(None)  # type: ignore[arg-type]
    with pytest.raises(ss.InputError):
        ss.TraceSet(tmp_path / "missing.json")
    with pytest.raises(ss.InputError, match="trace_format"):
        ss.TraceSet(_two_ranks(tmp_path / "t.json"), trace_format=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # keyword-only
        ss.TraceSet(_two_ranks(tmp_path / "t.json"), "auto")  # type: ignore[misc]


def test_cancelled_is_not_caught_by_except_exception():
    assert issubclass(ss.Cancelled, KeyboardInterrupt)
    assert not issubclass(ss.Cancelled, Exception)
    assert ss.Cancelled("stopped").code == "cancelled"
    with pytest.raises(ss.Cancelled):
        try:
            raise ss.Cancelled("stopped")
        except Exception:  # noqa: BLE001 - the point: it must not catch Cancelled
            pytest.fail("except Exception caught Cancelled")
    for cls in (ss.InputError, ss.RunError):
        assert issubclass(cls, ss.Error) and issubclass(cls, Exception)


def test_one_type_per_call_form(tmp_path):
    # A file of one experiment, every experiment (None): still a list.
    cfg = tmp_path / "one.yaml"
    cfg.write_text("experiments:\n  - {name: only, model: tiny-dense, hardware: h100-sxm,\n"
                   "     parallelism: {tp_size: 2}, batch_size: 1, sequence_length: 16,\n"
                   "     tokens_to_generate: 2}\n")
    assert isinstance(ss.plan(None, config=cfg), list)
    assert isinstance(ss.check(None, config=cfg), list)
    runs = ss.simulate(None, config=cfg, decode_steps=1)
    assert isinstance(runs, list) and len(runs) == 1
    # One experiment named: the dict itself.
    assert isinstance(ss.simulate("only", config=cfg, decode_steps=1), dict)
    assert isinstance(ss.plan("only", config=cfg), dict)


def test_functions_take_keywords_only_after_the_experiment():
    with pytest.raises(TypeError):
        ss.simulate("v2lite_tp2", 2)  # type: ignore[misc]
    with pytest.raises(TypeError):
        _shardscope.plan(SMALL, "v2lite_tp2")  # type: ignore[misc]


def _stub_signatures():
    """{name: [keyword names]} of the functions and Analyses methods of _shardscope.pyi."""
    path = os.path.join(os.path.dirname(ss.__file__), "_shardscope.pyi")
    if not os.path.exists(path):  # an installed package without the stub next to it
        path = os.path.join(os.path.dirname(__file__), os.pardir, "shardscope",
                            "_shardscope.pyi")
    tree = ast.parse(open(path, encoding="utf-8").read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = [a.arg for a in node.args.kwonlyargs]
        elif isinstance(node, ast.ClassDef):
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and not f.name.startswith("__"):
                    out[f"{node.name}.{f.name}"] = [a.arg for a in f.args.kwonlyargs]
    return out


def test_the_stub_matches_the_extension():
    stub = _stub_signatures()
    public = {n for n in dir(_shardscope) if not n.startswith("_") and n != "Analyses"}
    public |= {f"Analyses.{n}" for n in dir(_shardscope.Analyses) if not n.startswith("_")}
    assert set(stub) == public
    for name, keywords in stub.items():
        obj = _shardscope
        for part in name.split("."):
            obj = getattr(obj, part)
        signature = obj.__doc__.splitlines()[0]  # pybind: "name(self, *, a: T = d, ...) -> R"
        if keywords:
            assert "*, " in signature, name
        for k in keywords:
            assert f"{k}: " in signature, (name, k)


def test_a_run_result_is_its_trace(tmp_path):
    r = ss.simulate("v2lite_tp2", config=SMALL, decode_steps=1, trace=True, out=tmp_path)
    assert ss.TraceSet(r).traces == [r["trace"]]
    assert ss.TraceSet([r]).traces == [r["trace"]]
    untraced = ss.simulate("v2lite_tp2", config=SMALL, decode_steps=1)
    with pytest.raises(ss.InputError, match="trace=True"):
        ss.TraceSet(untraced)
