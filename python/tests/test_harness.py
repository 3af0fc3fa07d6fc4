"""python3 -m shardscope.harness: the seeds' command line, on the library."""

import os
import subprocess
import sys

import shardscope as ss
from conftest import ROOT, SMALL, cli_error


def harness(*args, cwd):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(ss.__file__)))
    return subprocess.run([sys.executable, "-m", "shardscope.harness", *args], cwd=cwd,
                          capture_output=True, text=True, env=env)


def test_harness_runs_and_records_like_shardscope_run(tmp_path):
    p = harness("--config", SMALL, "--experiment", "v2lite_tp2", "--decode-steps", "2",
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("v2lite_tp2 (sim): TTFT ")
    traces = ss.TraceCollector(tmp_path / "traces").list_traces()
    assert len(traces) == 1
    assert f"trace {os.path.relpath(traces[0]['trace'], tmp_path)}" in p.stdout
    want = ss.simulate("v2lite_tp2", config=SMALL, decode_steps=2)
    got = ss.MetricsCalculator().compute_all_metrics(traces[0]["trace"])
    assert abs(got["ttft"] - want["ttft_s"]) <= 1e-6 * want["ttft_s"]


def test_harness_bad_input_exits_2_with_the_cli_message(tmp_path):
    p = harness("--config", str(tmp_path / "none.yaml"), cwd=ROOT)
    assert p.returncode == 2
    assert p.stderr.strip() == "shardscope: error: " + cli_error(
        "run", "--config", str(tmp_path / "none.yaml"))


def test_collector_finds_and_reads_a_gzip_trace(tmp_path):
    collector = ss.TraceCollector(tmp_path / "traces")
    written = collector.collect("v2lite_tp2", config=SMALL, decode_steps=2,
                                trace_compression="gzip")
    assert len(written) == 1
    assert written[0]["trace"].endswith(".trace.gz")
    with open(written[0]["trace"], "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    assert written[0]["metadata"]["experiment"]["trace_compression"] == "gzip"
    plain = ss.run("v2lite_tp2", config=SMALL, decode_steps=2, out=tmp_path / "plain")
    got = ss.MetricsCalculator().compute_all_metrics(written[0]["trace"])
    want = ss.MetricsCalculator().compute_all_metrics(plain["trace"])
    assert got == want
