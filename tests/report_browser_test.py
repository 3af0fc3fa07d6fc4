#!/usr/bin/env python3
"""Opens `shardscope report` pages in headless Chromium and checks they draw.

Reports of a simulated run, a sweep, a served workload swept over its arrival
rate, a foreign Kineto trace, the real 8-rank Kineto set of ../shared/testdata
(which must get its breakdown, timeline, traffic and bus-bandwidth charts), a
128-rank simulated run (its page size and render time bounded below) and (when
the CPU backend is built) a real CPU run are loaded in headless Chromium; the test fails
on any console message (the page logs nothing when all is well) or when a chart
drew no marks (every <canvas> carries data-marks, the elements Chart.js made).
Exits 77 (ctest: skipped) with a message when Chromium or Chart.js is missing.

  report_browser_test.py SHARDSCOPE_BINARY SOURCE_DIR [--screenshots DIR]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
# The 128-rank page: its size and the time until every chart is drawn (the page's
# data-render-ms), bounded (docs/report.md, "Size and speed").
MAX_128_RANK_BYTES = 1_500_000
MAX_128_RANK_RENDER_MS = 15_000
# Sections a multi-rank foreign trace must draw (issue 35).
FOREIGN_SECTIONS = ("breakdown", "timeline", "traffic", "bandwidth")
CHART_JS = os.environ.get("SHARDSCOPE_CHART_JS", "/usr/share/javascript/chart.js/chart.min.js")

TINY = """
defaults: {{model: tiny-dense, hardware: h100-sxm, batch_size: 2, sequence_length: 32,
           tokens_to_generate: 5, trace_steps: 2, dtype: bf16}}
experiments:
  - name: tiny_tp2
    parallelism: {{strategy: tensor, tp_size: 2}}
  - name: tiny_moe_ep_sweep
    model: tiny-moe-mla
    parallelism: {{strategy: expert, ep_size: [2, 4]}}
    batch_size: 4
    sequence_length: [16, 32]
  - name: tiny_served
    parallelism: {{strategy: tensor, tp_size: 2}}
    workload:
      arrivals: {{process: poisson, rate_per_s: [50, 200]}}
      prompt_tokens: 16
      output_tokens: 4
      requests: 20
  - name: tiny_128_ranks
    parallelism: {{strategy: hybrid, tp_size: 4, pp_size: 2, dp_size: 16}}
    batch_size: 32
  - name: tiny_cpu_tp2
    model: tiny-dense
    hardware: local-cpu
    parallelism: {{strategy: tensor, tp_size: 2}}
    batch_size: 2
    sequence_length: 16
    tokens_to_generate: 4
    dtype: fp32
    backend: cpu
    warmup_iterations: 0
    measured_iterations: 1
"""


def find_browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def traces_of(run_json):
    return [r["trace"] for r in json.loads(run_json) if r.get("trace")]


def load_in_browser(browser, html, workdir):
    """The live DOM after the page's scripts ran, and the console lines."""
    profile = tempfile.mkdtemp(dir=workdir, prefix="profile")
    p = run([browser, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
             "--disable-extensions", "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
             "--virtual-time-budget=5000", "--dump-dom", "file://" + os.path.abspath(html)])
    console = [l for l in p.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    return p.returncode, p.stdout, console, p.stderr


def check_page(browser, html, workdir, sections=(), info=None):
    """Errors of the page; `sections` must each draw a chart; `info` gets render_ms."""
    errors = []
    embedded = open(html, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', embedded, re.S)
    data = json.loads(m.group(1))
    expected = sum(len(s["charts"]) for s in data["sections"])
    for want in sections:
        got = [s for s in data["sections"] if s["id"] == want]
        if not got or not got[0]["charts"]:
            errors.append(f"section {want} has no chart: " + (got[0].get("note", "") if got else "absent"))
    rc, dom, console, stderr = load_in_browser(browser, html, workdir)
    if rc != 0:
        return [f"chromium exited {rc}: {stderr[-2000:]}"]
    for line in console:
        errors.append("console: " + line)
    drawn = re.search(r'data-charts-drawn="(\d+)"', dom)
    failed = re.search(r'data-charts-failed="(\d+)"', dom)
    if not drawn:
        errors.append("the page's script did not run (no data-charts-drawn on <body>)")
        return errors
    if int(failed.group(1)) != 0:
        errors.append(f"{failed.group(1)} charts failed")
    if int(drawn.group(1)) != expected:
        errors.append(f"{drawn.group(1)} charts drawn, {expected} in the data")
    canvases = re.findall(r'<canvas[^>]*>', dom)
    if len(canvases) != expected:
        errors.append(f"{len(canvases)} <canvas> in the DOM, {expected} charts in the data")
    for c in canvases:
        marks = re.search(r'data-marks="(\d+)"', c)
        if not marks or int(marks.group(1)) == 0:
            errors.append("a chart drew no marks: " + c)
    if expected == 0:
        errors.append("no chart at all")
    render = re.search(r'data-render-ms="(\d+)"', dom)
    if info is not None and render:
        info["render_ms"] = int(render.group(1))
    return errors


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    binary, source = argv[1], argv[2]
    shots = argv[argv.index("--screenshots") + 1] if "--screenshots" in argv else None
    browser = find_browser()
    if not browser:
        print("SKIPPED: no Chromium installed (apt-get install chromium; `make test` installs it)")
        return SKIP
    if not os.path.exists(CHART_JS):
        print(f"SKIPPED: Chart.js not at {CHART_JS} (apt-get install libjs-chart.js)")
        return SKIP
    work = tempfile.mkdtemp(prefix="shardscope_browser_")
    try:
        cfg = os.path.join(work, "tiny.yaml")
        with open(cfg, "w") as f:
            f.write(TINY.format())
        store = os.path.join(work, "traces")
        sim = run([binary, "run", "--config", cfg, "--backend", "sim", "--out", store, "--json"])
        if sim.returncode != 0:
            print("simulation failed:", sim.stderr)
            return 1
        runs = json.loads(sim.stdout)
        single = [r["trace"] for r in runs if r["experiment"] == "tiny_tp2"]
        sweep = [r["trace"] for r in runs if r["experiment"].startswith("tiny_moe_ep_sweep")]
        served = [r["trace"] for r in runs if r["experiment"].startswith("tiny_served")]
        ranks128 = [r["trace"] for r in runs if r["experiment"] == "tiny_128_ranks"]
        shared = os.environ.get("SHARDSCOPE_SHARED", os.path.join(source, "..", "shared"))
        kineto = os.path.join(shared, "testdata", "kineto")
        pages = {"sim": single, "sweep": sweep, "served": served, "ranks128": ranks128,
                 "kineto": [os.path.join(kineto, "sglang_Qwen3-8B_decode.json.gz")],
                 "kineto_set": [os.path.join(kineto, "param_dlrm_8rank")]}
        cpu = run([binary, "run", "--config", cfg, "--experiment", "tiny_cpu_tp2", "--out", store, "--json"])
        if cpu.returncode == 0:
            pages["cpu"] = traces_of(cpu.stdout) + [r["trace"] for r in runs if r["experiment"] == "tiny_cpu_tp2"]
        else:
            print("note: no CPU run (" + (cpu.stderr.strip().splitlines() or ["?"])[-1] + ")")
        for name in ("kineto", "kineto_set"):
            if not os.path.exists(pages[name][0]):
                print("note: no Kineto test trace at", pages[name][0], "(../shared is absent)")
                del pages[name]
        failures = 0
        for name, paths in pages.items():
            html = os.path.join(work, name + ".html")
            extra = ["--baseline", single[0]] if name == "sweep" else []
            r = run([binary, "report", *paths, *extra, "-o", html])
            if r.returncode != 0:
                print(f"FAIL {name}: report exited {r.returncode}: {r.stderr}")
                failures += 1
                continue
            info = {}
            errors = check_page(browser, html, work,
                                FOREIGN_SECTIONS if name == "kineto_set" else (), info)
            size = os.path.getsize(html)
            if name == "ranks128":
                if size > MAX_128_RANK_BYTES:
                    errors.append(f"128-rank page is {size} bytes, over {MAX_128_RANK_BYTES}")
                if info.get("render_ms", 0) > MAX_128_RANK_RENDER_MS:
                    errors.append(f"128-rank page took {info['render_ms']} ms to draw, over "
                                  f"{MAX_128_RANK_RENDER_MS}")
            status = "ok" if not errors else "FAIL"
            print(f"{status} {name}: {html} ({size / 1e3:.0f} kB, drawn at "
                  f"{info.get('render_ms', '?')} ms)")
            for e in errors:
                print("   ", e)
            failures += bool(errors)
            if shots and not errors:
                os.makedirs(shots, exist_ok=True)
                shutil.copy(html, os.path.join(shots, name + ".html"))
        return 1 if failures else 0
    finally:
        if not shots:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
