#include "bench/synthetic_trace.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "trace/trace_writer.h"

namespace shardscope::bench {

StatusOr<int64_t> WriteSyntheticTrace(const std::string& path, int64_t target_bytes) {
  using namespace trace;
  constexpr int kTp = 8, kPp = 2, kLayersPerStage = 8;
  nlohmann::json meta = {
      {"workload", {{"batch_size", 8}, {"sequence_length", 4096}, {"dtype", "bf16"}}},
      {"cluster",
       {{"devices_per_node", 8},
        {"device", {{"peak_flops", {{"bf16", 989e12}}}, {"memory_bandwidth", 3.35e12}}},
        {"scale_up", {{"domain_size", 8}, {"bandwidth_per_device", 450e9}}},
        {"scale_out", {{"nic_bandwidth_per_device", 50e9}}}}}};
  ASSIGN_OR_RETURN(auto w, TraceWriter::Open(path, meta));
  for (int r = 0; r < kTp * kPp; ++r) {
    w->NameProcess(r, fmt::format("rank {} · node {} · gpu {}", r, r / 8, r % 8));
    w->NameThread(r, 0, "compute");
    w->NameThread(r, 1, "comm tp");
    w->NameThread(r, 2, "comm pp");
  }
  static const char* kKinds[] = {"qkv_proj", "attention_decode", "out_proj", "ffn_up", "ffn_down"};
  OpEvent op;
  OpEvent ar;
  ar.category = Category::kComm;
  ar.collective = Collective::kAllReduce;
  ar.dim = Dim::kTp;
  ar.kind = "all_reduce";
  ar.stream = 1;
  ar.dtype = "bf16";
  ar.bytes = 8 * 7168 * 2;
  OpEvent p2p;
  p2p.category = Category::kComm;
  p2p.dim = Dim::kPp;
  p2p.stream = 2;
  p2p.bytes = 8 * 7168 * 2;
  const int64_t stage_ns = kLayersPerStage * (5 * 10'000 + 2 * 6'000);
  for (int64_t step = 0; w->bytes_written() < target_bytes; ++step) {
    int64_t step_start = step * (kPp * stage_ns + 20'000);
    for (int stage = 0; stage < kPp; ++stage) {
      for (int t = 0; t < kTp; ++t) {
        int r = stage * kTp + t;
        int64_t now = step_start + stage * (stage_ns + 10'000);
        if (stage > 0) {
          p2p.rank = r;
          p2p.collective = Collective::kRecv;
          p2p.name = "recv.pp";
          p2p.peer = r - kTp;
          p2p.ts_ns = now - 10'000;
          p2p.dur_ns = 10'000;
          p2p.phase = Phase::kDecode;
          p2p.step = static_cast<int32_t>(step);
          w->AddOp(p2p);
        }
        SpanEvent span{r,
                       SpanKind::kStep,
                       Phase::kDecode,
                       static_cast<int32_t>(step),
                       fmt::format("step {}", step),
                       now,
                       stage_ns};
        w->AddSpan(span);
        ar.group.clear();
        for (int k = 0; k < kTp; ++k) ar.group.push_back(stage * kTp + k);
        for (int layer = 0; layer < kLayersPerStage; ++layer) {
          for (int k = 0; k < 5; ++k) {
            op.rank = r;
            op.kind = kKinds[k];
            op.name = fmt::format("L{}.{}", stage * kLayersPerStage + layer, kKinds[k]);
            op.ts_ns = now;
            op.dur_ns = 10'000 - (t * 37 + k * 11) % 500;  // a little skew across ranks
            op.phase = Phase::kDecode;
            op.step = static_cast<int32_t>(step);
            op.layer = stage * kLayersPerStage + layer;
            op.flops = 2LL * 8 * 7168 * 2048;
            op.bytes_read = 7168LL * 2048 * 2;
            op.bytes_written = 8LL * 2048 * 2;
            op.dtype = "bf16";
            w->AddOp(op);
            now += 10'000;
            if (k == 2 || k == 4) {
              ar.rank = r;
              ar.name = fmt::format("allreduce.tp.L{}", op.layer);
              ar.ts_ns = now;
              ar.dur_ns = 6'000;
              ar.phase = Phase::kDecode;
              ar.step = static_cast<int32_t>(step);
              ar.layer = op.layer;
              w->AddOp(ar);
              now += 6'000;
            }
          }
        }
        if (stage + 1 < kPp) {
          p2p.rank = r;
          p2p.collective = Collective::kSend;
          p2p.name = "send.pp";
          p2p.peer = r + kTp;
          p2p.ts_ns = now;
          p2p.dur_ns = 10'000;
          p2p.phase = Phase::kDecode;
          p2p.step = static_cast<int32_t>(step);
          w->AddOp(p2p);
        }
        w->AddCounter({r, "memory", now, {{"weights", 40e9}, {"kv_cache", 1e6 * double(step)}}});
      }
    }
  }
  int64_t events = w->events_written();
  RETURN_IF_ERROR(w->Close());
  return events;
}

const std::string& SyntheticTracePath() {
  static const std::string path = [] {
    int64_t mb = 1100;
    if (const char* env = std::getenv("SHARDSCOPE_BENCH_TRACE_MB")) mb = std::atoll(env);
    std::string p = (std::filesystem::temp_directory_path() /
                     ("shardscope_bench_" + std::to_string(mb) + "MB.json"))
                        .string();
    if (!std::filesystem::exists(p)) {
      auto events = WriteSyntheticTrace(p, mb * 1'000'000);
      if (!events.ok()) {
        std::fprintf(stderr, "cannot write %s: %s\n", p.c_str(),
                     events.status().ToString().c_str());
        std::abort();
      }
    }
    return p;
  }();
  return path;
}

}  // namespace shardscope::bench
