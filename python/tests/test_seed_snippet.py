"""The seed document's snippet (shared/seeds/000), unchanged but for the imports."""

import pytest

import shardscope as ss
from conftest import SMALL

SNIPPET = '''
collector = TraceCollector()
traces = collector.list_traces(model_name="deepseek-v2-lite")

calculator = MetricsCalculator()
for trace_info in traces:
    metrics = calculator.compute_all_metrics(trace_info['metadata'])
    print(metrics)
'''


def test_seed_snippet_prints_every_metric_of_each_trace(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # TraceCollector() reads ./traces, as `make run` writes it
    runs = [ss.simulate(name, config=SMALL, decode_steps=1, trace=True)
            for name in ("v2lite_tp2", "v2lite_tp4")]
    namespace = {}
    exec("from shardscope import MetricsCalculator, TraceCollector\n" + SNIPPET, namespace)
    printed = capsys.readouterr().out.strip().splitlines()
    assert len(printed) == 2
    for line, r in zip(printed, runs):
        metrics = eval(line)  # the printed dict
        assert metrics["ttft"] == pytest.approx(r["ttft_s"], rel=1e-6)
        assert len(metrics) == len(ss.analyze(r["trace"]))


def test_list_traces_filters(tmp_path):
    store = tmp_path / "traces"
    ss.simulate("v2lite_batch", config=SMALL, decode_steps=1, trace=True, out=store)
    c = ss.TraceCollector(store)
    assert len(c.list_traces()) == 2
    assert [t["batch_size"] for t in c.list_traces(batch_size=4)] == [4]
    assert c.list_traces(model_name="llama-3.1-8b") == []
    assert len(c.list_traces(sequence_length=128, backend="sim")) == 2
    assert c.list_traces(backend="cpu") == []
    t = c.list_traces()[0]
    assert set(t) >= {"trace", "metadata", "model", "strategy", "batch_size", "sequence_length",
                      "timestamp", "backend"}
    assert t["metadata"]["backend"] == "sim"


def test_collect_runs_and_records(tmp_path):
    c = ss.TraceCollector(tmp_path / "traces")
    got = c.collect("v2lite_tp2", config=SMALL, backend="sim", decode_steps=1)
    assert len(got) == 1 and got[0]["strategy"] == "tensor"
    assert c.list_traces() == got
