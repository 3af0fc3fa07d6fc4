#!/usr/bin/env bash
# Seed corpora for the fuzzers (fuzz/CMakeLists.txt), from the repository's own
# test inputs and the public traces in ../shared/testdata:
#   bash fuzz/seeds.sh OUT_DIR      → OUT_DIR/<fuzzer>/…
set -euo pipefail
out=${1:?usage: seeds.sh OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SHARDSCOPE_TESTDATA:-$root/../shared/testdata}
mk() { mkdir -p "$out/$1"; }
for f in trace_reader kineto xla_json nccl_profiler nccl_jsonl xspace experiments_yaml \
         model_yaml hardware_yaml hf_config safetensors request_file prompts calibration \
         workload_card; do mk "${f}_fuzzer"; done

# Our traces: the golden ones.
for d in "$root"/tests/data/golden/*/; do
  cp "$d/trace.json" "$out/trace_reader_fuzzer/$(basename "$d").json"
done
# Foreign traces: the small public ones, and the first lines of the larger.
if [ -d "$shared" ]; then
  for f in graph_execution sglang_Qwen3-8B_decode; do
    zcat "$shared/kineto/$f.json.gz" > "$out/kineto_fuzzer/$f.json"
  done
  cp "$shared"/nccl_profiler/nccl_example_plugin_*.json "$out/nccl_profiler_fuzzer/"
  head -n 200 "$shared/nccl_profiler/minimal_plugin_allreduce_4rank_a.jsonl" \
    > "$out/nccl_jsonl_fuzzer/minimal_plugin.jsonl"
  cp "$shared/xla/tpu_inference_2.xplane.pb" "$out/xspace_fuzzer/"
fi
# Trace-viewer JSON of an XLA profile: two devices, a step, a collective and an op.
cat > "$out/xla_json_fuzzer/two_devices.json" <<'JSON'
{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[
{"ph":"M","pid":1,"name":"process_name","args":{"name":"/device:TPU:0"}},
{"ph":"M","pid":2,"name":"process_name","args":{"name":"/device:TPU:1"}},
{"ph":"M","pid":1,"tid":1,"name":"thread_name","args":{"name":"Steps"}},
{"ph":"M","pid":1,"tid":2,"name":"thread_name","args":{"name":"XLA Ops"}},
{"ph":"M","pid":2,"tid":2,"name":"thread_name","args":{"name":"XLA Ops"}},
{"ph":"X","pid":1,"tid":1,"ts":0,"dur":100,"name":"1"},
{"ph":"X","pid":1,"tid":2,"ts":1,"dur":10,"name":"fusion.1","args":{"long_name":"%fusion.1 = bf16[8,128] fusion(...)","model_flops":"2048"}},
{"ph":"X","pid":1,"tid":2,"ts":12,"dur":20,"name":"all-reduce.1","args":{"long_name":"%all-reduce.1 = f32[1024] all-reduce(...), replica_groups={{0,1}}"}},
{"ph":"X","pid":2,"tid":2,"ts":12,"dur":21,"name":"all-reduce.1","args":{"long_name":"%all-reduce.1 = f32[1024] all-reduce(...), replica_groups={{0,1}}"}}
]}
JSON
# The whole documents the importers' tests hold as raw strings (small, and each with
# every rule of its format in it).
python3 - "$out" "$root/src/importers" <<'PY2'
import re, sys
out, src = sys.argv[1], sys.argv[2]
for test, fuzzer in [("kineto_importer_test.cc", "kineto_fuzzer"),
                     ("nccl_profiler_importer_test.cc", "nccl_profiler_fuzzer"),
                     ("xla_json_importer_test.cc", "xla_json_fuzzer")]:
    text = open(f"{src}/{test}").read()
    bodies = re.findall(r'R"(\w*)\((.*?)\)\1"', text, re.S)
    for i, (_, body) in enumerate(b for b in bodies if len(b[1]) > 300
                                          and "{{\"" not in b[1]):
        open(f"{out}/{fuzzer}/{test[:-3]}_{i}.json", "w").write(body)
PY2
# A few lines of the plugin's JSONL as well as the longer head above.
[ -d "$shared" ] && head -n 12 "$shared/nccl_profiler/minimal_plugin_allreduce_4rank_b.jsonl" \
  > "$out/nccl_jsonl_fuzzer/minimal_plugin_short.jsonl"
# A small XSpace: SyntheticXspace() of src/importers/xspace_importer_test.cc (two TPUs with
# an all-reduce, steps and stats of every kind, a host plane).
python3 - "$out/xspace_fuzzer/synthetic.xplane.pb" <<'PY2'
import struct, sys
def varint(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7f) | 0x80]); v >>= 7
    return out + bytes([v])
def i(f, v): return varint(f << 3) + varint(v)
def ln(f, p):
    p = p.encode() if isinstance(p, str) else p
    return varint((f << 3) | 2) + varint(len(p)) + p
def dbl(f, d): return varint((f << 3) | 1) + struct.pack("<d", d)
def stat_meta(id_, name): return ln(5, i(1, id_) + ln(2, i(1, id_) + ln(2, name)))
def event_meta(id_, name, display, stats=b""):
    return ln(4, i(1, id_) + ln(2, i(1, id_) + ln(2, name) + ln(4, display) + stats))
sm = (stat_meta(3, "flops") + stat_meta(4, "hlo_category") + stat_meta(6, "peak_teraflops_per_second")
      + stat_meta(7, "kind_ref") + stat_meta(8, "bytes_accessed"))
event = (i(1, 1) + i(2, 2500) + i(3, 10000) + ln(4, i(1, 3) + i(4, 77)) + ln(4, i(1, 7) + i(7, 4))
         + ln(4, i(1, 8) + i(3, 640)))
line = i(1, 3) + ln(2, "XLA Ops") + i(3, 1000) + ln(4, event)
tpu0 = (i(1, 0) + ln(2, "/device:TPU:0") + ln(3, line)
        + event_meta(1, "%all-reduce.1 = f32[16]{0} all-reduce(f32[16]{0} %p), replica_groups={{0,1}}",
                     "all-reduce.1", ln(5, i(1, 4) + ln(5, "all-reduce")))
        + sm + ln(6, i(1, 6) + dbl(2, 100.5)))
steps = ln(2, "Steps") + ln(4, i(1, 2) + i(2, 0) + i(3, 5000)) + ln(4, i(1, 2) + i(2, 5000) + i(3, 5000))
tpu1 = ln(2, "/device:TPU:1") + ln(3, steps) + event_meta(2, "41", "")
host = (ln(2, "/host:CPU") + ln(3, ln(2, "main") + ln(4, i(1, 9) + i(3, 1)) + ln(4, i(1, 9) + i(3, 1)))
        + event_meta(9, "PjRtExecute", ""))
open(sys.argv[1], "wb").write(ln(1, tpu0) + ln(1, tpu1) + ln(1, host) + ln(4, "hostname"))
PY2
# Configurations.
cp "$root"/configs/experiments.yaml "$root"/configs/serving.yaml "$out/experiments_yaml_fuzzer/"
cp "$root"/configs/models/tiny-*.yaml "$root"/configs/models/deepseek-v3.yaml \
  "$out/model_yaml_fuzzer/"
cp "$root"/configs/hardware/*.yaml "$out/hardware_yaml_fuzzer/"
# Hugging Face configs: the ones hf_config_test.cc holds.
python3 - "$root/src/model/hf_config_test.cc" "$out/hf_config_fuzzer" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for name, body in re.findall(r'constexpr char (\w+)\[\] = R"\((.*?)\)";', text, re.S):
    open(f"{sys.argv[2]}/{name}.json", "w").write(body)
PY
# A small safetensors file: two BF16 tensors and one F32.
python3 - "$out/safetensors_fuzzer/small.safetensors" <<'PY'
import json, struct, sys
tensors = [("a", "BF16", [2, 3]), ("b", "F32", [4]), ("c", "BF16", [3, 2])]
header, data = {}, b""
for name, dtype, shape in tensors:
    n = shape[0] * (shape[1] if len(shape) > 1 else 1)
    blob = (b"\x80\x3f" * n) if dtype == "BF16" else struct.pack(f"<{n}f", *range(n))
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
    data += blob
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
echo "seeds in $out"

# Small input files (issue 35): request files (CSV, Azure's CSV, JSONL), prompts files,
# the calibrations and workload cards of configs/.
cat > "$out/request_file_fuzzer/ours.csv" <<'CSV'
arrival_time_s,prompt_tokens,output_tokens
0,128,8
0.01,256,4
# a comment
0.02,64,16
CSV
cat > "$out/request_file_fuzzer/azure.csv" <<'CSV'
TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
CSV
cat > "$out/request_file_fuzzer/requests.jsonl" <<'JSONL'
{"arrival_time_s": 0, "prompt_tokens": 128, "output_tokens": 8}
{"arrival_time_s": 0.5, "prompt_tokens": 64, "output_tokens": 2}
JSONL
printf '# one request per line\n5 17 99 3\n1, 2, 3, 4\n\n7\t8 9\n' > "$out/prompts_fuzzer/prompts.txt"
cp "$root"/configs/calibration/*.yaml "$out/calibration_fuzzer/"
cp "$root"/configs/workload_cards/*.yaml "$out/workload_card_fuzzer/"
# Findings, each fixed with a test: the inputs that found them stay in the seeds.
for d in "$root"/fuzz/regressions/*/; do
  mkdir -p "$out/$(basename "$d")"
  cp "$d"* "$out/$(basename "$d")/"
done
