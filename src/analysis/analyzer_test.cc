#include "analysis/analyzer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "testing/scratch_dir.h"
#include "trace/test_util.h"
#include "trace/trace.h"
#include "trace/trace_writer.h"

namespace shardscope::analysis {
namespace {

using testing::ScratchDir;
using trace::WriteFile;

TEST(AnalyzerTest, BadFilesAreClearErrors) {
  ScratchDir dir;
  WriteFile(dir.File("empty.json"), "");
  WriteFile(dir.File("text.json"), "not json at all");
  WriteFile(dir.File("cut.json"), R"({"traceEvents":[{"ph":"X","pid":0,"ts":1,"du)");
  auto empty = AnalyzeTraceFile(dir.File("empty.json"));
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty.json: empty file"), std::string::npos);
  auto text = AnalyzeTraceFile(dir.File("text.json"));
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  auto cut = AnalyzeTraceFile(dir.File("cut.json"));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(cut.status().message().find("truncated at byte 44: the event starting at byte 16"),
            std::string::npos)
      << cut.status().message();
  EXPECT_EQ(AnalyzeTraceFile(dir.File("missing.json")).status().code(), StatusCode::kNotFound);
}

TEST(AnalyzerTest, StoreSidecarMetadataIsUsed) {
  ScratchDir dir;
  trace::Trace t;
  trace::OpEvent op;
  op.dur_ns = 1000;
  op.phase = trace::Phase::kPrefill;
  t.ops.push_back(op);
  std::string path = dir.File("trace_20261121T000000.000000.trace");
  ASSERT_TRUE(trace::WriteTrace(t, path).ok());
  WriteFile(dir.File("metadata_20261121T000000.000000.json"),
            R"({"workload":{"batch_size":2,"sequence_length":500}})");
  auto r = AnalyzeTraceFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_NE(r->metrics.Find("tps"), nullptr);
  ASSERT_TRUE(r->metrics.Find("tps")->value.has_value());
  EXPECT_DOUBLE_EQ(*r->metrics.Find("tps")->value, 1000 / 1e-6);
}

TEST(AnalyzerTest, EmptyTraceHasNoWallTime) {
  RunData data;
  MetricSet m = ComputeMetrics(&data);
  ASSERT_NE(m.Find("wall_time"), nullptr);
  EXPECT_FALSE(m.Find("wall_time")->value.has_value());
}

// issue 17: per-rank pipeline_bubble was printed as 0 s while the run-level rows said
// "not available: no receive ops" — docs/metrics.md promises never a 0 for it.
TEST(AnalyzerTest, PipelineBubbleWithoutReceivesIsNotAvailableOnEveryRank) {
  ScratchDir dir;
  trace::Trace t;
  for (int32_t rank : {0, 1}) {
    trace::OpEvent op;
    op.rank = rank;
    op.dur_ns = 1000;
    op.phase = trace::Phase::kPrefill;
    t.ops.push_back(op);
  }
  std::string path = dir.File("two_ranks.json");
  ASSERT_TRUE(trace::WriteTrace(t, path).ok());
  auto r = AnalyzeTraceFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const char* key :
       {"pipeline_bubble[rank 0]", "pipeline_bubble[rank 1]", "pipeline_bubble.max"}) {
    const Metric* m = r->metrics.Find(key);
    ASSERT_NE(m, nullptr) << key;
    EXPECT_FALSE(m->value.has_value()) << key;
    EXPECT_EQ(m->unavailable, "no receive ops in the trace (no pipeline stage waits for input)");
  }
}

// Found by nccl_jsonl_fuzzer (UBSan, signed overflow): per-rank times each
// fit int64 ns, their sum over ranks need not. Four ranks idle 3e18 ns each
// (one op at 0 s, one ~95 years later): the mean is 3e9 s, not a wrapped sum.
TEST(AnalyzerTest, SumsOverRanksOfHugeTimesDoNotOverflow) {
  ScratchDir dir;
  trace::Trace t;
  for (int32_t rank : {0, 1, 2, 3}) {
    trace::OpEvent op;
    op.rank = rank;
    op.ts_ns = rank == 3 ? 3'000'000'000'000'000'000 : 0;
    op.dur_ns = 1000;
    t.ops.push_back(op);
  }
  const std::string path = dir.File("far_apart.json");
  ASSERT_TRUE(trace::WriteTrace(t, path).ok());
  auto r = AnalyzeTraceFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Metric* idle = r->metrics.Find("idle_time.mean");
  ASSERT_NE(idle, nullptr);
  ASSERT_TRUE(idle->value.has_value());
  EXPECT_NEAR(*idle->value, 3e9, 1e-3);
  const Metric* busy = r->metrics.Find("busy_time.mean");
  ASSERT_TRUE(busy != nullptr && busy->value.has_value());
  EXPECT_NEAR(*busy->value, 1e-6, 1e-15);
}

// issue 17: `--trace-format kineto` on a ShardScope trace silently read 0 ops.
TEST(AnalyzerTest, ForcedFormatThatReadsNothingOfAnotherFormatIsAnError) {
  ScratchDir dir;
  trace::Trace t;
  trace::OpEvent op;
  op.dur_ns = 1000;
  t.ops.push_back(op);
  std::string path = dir.File("ours.json");
  ASSERT_TRUE(trace::WriteTrace(t, path).ok());
  AnalyzeOptions kineto;
  kineto.format = importers::TraceFormat::kKineto;
  auto r = AnalyzeTraceFile(path, kineto);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), path +
                                      ": read 0 ops as --trace-format kineto, but its content is "
                                      "a shardscope trace; leave --trace-format at auto or name "
                                      "the format it is");
  auto paths = AnalyzePaths({path}, kineto);
  EXPECT_FALSE(paths.ok());
  AnalyzeOptions ours;
  ours.format = importers::TraceFormat::kShardScope;
  EXPECT_TRUE(AnalyzeTraceFile(path, ours).ok());
}

// issue 17: the seeds ask for traffic intervals "within and across parallelisms".
// Rank 0 (µs): tp all-reduce [0, 10], pp send [15, 20], tp all-reduce [30, 40], pp send
// [42, 45]. Within tp: gap 30 − 10 = 20, inter-arrival 30. Within pp: gap 42 − 20 = 22,
// inter-arrival 27. tp → pp: gaps 5 and 2, inter-arrivals 15 and 12; pp → tp: gap 10,
// inter-arrival 15.
TEST(AnalyzerTest, TrafficIntervalsWithinAndAcrossParallelDimensions) {
  ScratchDir dir;
  trace::Trace t;
  auto comm = [&](int64_t ts, int64_t dur, Dim dim) {
    trace::OpEvent op;
    op.category = trace::Category::kComm;
    op.ts_ns = ts * 1000;
    op.dur_ns = dur * 1000;
    op.dim = dim;
    op.bytes = 100;
    if (dim == Dim::kTp) {
      op.collective = Collective::kAllReduce;
      op.group = {0, 1};
    } else {
      op.collective = Collective::kSend;
      op.peer = 2;
    }
    t.ops.push_back(op);
  };
  comm(0, 10, Dim::kTp);
  comm(15, 5, Dim::kPp);
  comm(30, 10, Dim::kTp);
  comm(42, 3, Dim::kPp);
  std::string path = dir.File("dims.json");
  ASSERT_TRUE(trace::WriteTrace(t, path).ok());
  auto r = AnalyzeTraceFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto value = [&](const std::string& key) {
    const Metric* m = r->metrics.Find(key);
    EXPECT_NE(m, nullptr) << key;
    return m != nullptr && m->value ? *m->value : -1.0;
  };
  EXPECT_NEAR(value("comm_gap.mean[dim tp]"), 20e-6, 1e-15);
  EXPECT_NEAR(value("comm_interarrival.mean[dim tp]"), 30e-6, 1e-15);
  EXPECT_NEAR(value("comm_gap.mean[dim pp]"), 22e-6, 1e-15);
  EXPECT_NEAR(value("comm_interarrival.mean[dim pp]"), 27e-6, 1e-15);
  EXPECT_NEAR(value("comm_gap.mean[dims tp -> pp]"), 3.5e-6, 1e-15);
  EXPECT_NEAR(value("comm_gap.min[dims tp -> pp]"), 2e-6, 1e-15);
  EXPECT_NEAR(value("comm_interarrival.mean[dims tp -> pp]"), 13.5e-6, 1e-15);
  EXPECT_NEAR(value("comm_gap.mean[dims pp -> tp]"), 10e-6, 1e-15);
  EXPECT_NEAR(value("comm_interarrival.mean[dims pp -> tp]"), 15e-6, 1e-15);
}

// Found on a DeepSeek-V3 EP=128 trace: a rank whose all-to-all sends nothing
// (bytes_per_peer all zero, no total written) made every traffic metric "not
// available: comm ops without a message size".
TEST(AnalyzerTest, AnAllToAllThatSendsNothingIsSizedZero) {
  ScratchDir dir;
  trace::Trace t;
  for (int32_t rank : {0, 1}) {
    trace::OpEvent op;
    op.rank = rank;
    op.category = trace::Category::kComm;
    op.dur_ns = 1000;
    op.collective = Collective::kAllToAll;
    op.dim = Dim::kEp;
    op.group = {0, 1};
    op.bytes_per_peer = rank == 0 ? std::vector<int64_t>{0, 300} : std::vector<int64_t>{0, 0};
    op.bytes = rank == 0 ? 300 : 0;
    t.ops.push_back(op);
  }
  std::string path = dir.File("a2a.json");
  ASSERT_TRUE(trace::WriteTrace(t, path).ok());
  auto r = AnalyzeTraceFile(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Metric* traffic = r->metrics.Find("traffic_bytes");
  ASSERT_NE(traffic, nullptr);
  ASSERT_TRUE(traffic->value.has_value()) << traffic->unavailable;
  EXPECT_DOUBLE_EQ(*traffic->value, 300);
  const Metric* cell = r->metrics.Find("traffic_matrix[rank 0 -> rank 1]");
  ASSERT_NE(cell, nullptr);
  ASSERT_TRUE(cell->value.has_value());
  EXPECT_DOUBLE_EQ(*cell->value, 300);
}

// Bus bandwidth against message size, by hand: two all-reduces of 1 MiB (2^20) over 4
// ranks taking 100 us and 300 us, one of 4 KiB taking 10 us. busbw = Σ bytes · 2(n−1)/n /
// Σ time.
TEST(AnalyzerTest, BusBandwidthAgainstMessageSize) {
  RunData data;
  RunCollector c(&data);
  auto allreduce = [&](int64_t bytes, int64_t dur_ns) {
    trace::OpEvent op;
    op.category = trace::Category::kComm;
    op.collective = Collective::kAllReduce;
    op.dim = Dim::kTp;
    op.group = {0, 1, 2, 3};
    op.bytes = bytes;
    op.dur_ns = dur_ns;
    c.OnOp(op);
  };
  allreduce(1 << 20, 100'000);
  allreduce(1 << 20, 300'000);
  allreduce(4096, 10'000);
  std::vector<SizeBandwidth> rows = BandwidthBySize(data);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].bucket_bytes, 4096);
  EXPECT_EQ(rows[0].ops, 1);
  EXPECT_DOUBLE_EQ(rows[0].busbw, 4096 * 1.5 / 10e-6);
  EXPECT_EQ(rows[1].bucket_bytes, 1 << 20);
  EXPECT_EQ(rows[1].ops, 2);
  EXPECT_EQ(rows[1].dim, Dim::kTp);
  EXPECT_DOUBLE_EQ(rows[1].mean_bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(rows[1].busbw, 2.0 * (1 << 20) * 1.5 / 400e-6);
}

trace::OpEvent ExpertGemm(int32_t rank, trace::Phase phase, int32_t step,
                          std::vector<int32_t> experts, std::vector<int64_t> tokens) {
  trace::OpEvent e;
  e.rank = rank;
  e.dur_ns = 10;
  e.kind = "expert_gemm";
  e.phase = phase;
  e.step = step;
  e.layer = 1;
  e.experts = std::move(experts);
  e.expert_tokens = std::move(tokens);
  return e;
}

TEST(AnalyzerTest, ExpertLoadImbalanceAndCv) {
  RunData data;
  RunCollector c(&data);
  // Prefill, layer 1: EP rank 0 holds experts 0 and 1, EP rank 1 experts 2 and 3.
  c.OnOp(ExpertGemm(0, trace::Phase::kPrefill, -1, {0, 1}, {6, 2}));
  c.OnOp(ExpertGemm(1, trace::Phase::kPrefill, -1, {2, 3}, {3, 1}));
  // Decode step 0: two micro-batches on rank 0 add up; perfectly balanced.
  c.OnOp(ExpertGemm(0, trace::Phase::kDecode, 0, {0, 1}, {1, 1}));
  c.OnOp(ExpertGemm(0, trace::Phase::kDecode, 0, {0, 1}, {1, 1}));
  c.OnOp(ExpertGemm(1, trace::Phase::kDecode, 0, {2, 3}, {2, 2}));
  MetricSet m = ComputeMetrics(&data);
  auto value = [&](const std::string& key) {
    const Metric* metric = m.Find(key);
    EXPECT_NE(metric, nullptr) << key;
    EXPECT_TRUE(metric != nullptr && metric->value.has_value()) << key;
    return metric != nullptr && metric->value ? *metric->value : -1.0;
  };
  // Prefill experts 6,2,3,1: mean 3, max 6, std √3.5; EP ranks 8,4: mean 6, max 8, std 2.
  // Decode: every expert 2, every EP rank 4.
  const double cv = std::sqrt(3.5) / 3;
  EXPECT_DOUBLE_EQ(value("expert_load.imbalance.max[phase prefill]"), 2.0);
  EXPECT_DOUBLE_EQ(value("expert_load.cv.max[phase prefill]"), cv);
  EXPECT_DOUBLE_EQ(value("ep_rank_load.imbalance.max[phase prefill]"), 8.0 / 6);
  EXPECT_DOUBLE_EQ(value("ep_rank_load.cv.max[phase prefill]"), 2.0 / 6);
  EXPECT_DOUBLE_EQ(value("expert_load.imbalance.max[phase decode]"), 1.0);
  EXPECT_DOUBLE_EQ(value("expert_load.cv.max[phase decode]"), 0.0);
  EXPECT_DOUBLE_EQ(value("expert_load.imbalance.mean"), 1.5);
  EXPECT_DOUBLE_EQ(value("expert_load.imbalance.max"), 2.0);
  EXPECT_DOUBLE_EQ(value("expert_load.cv.mean"), cv / 2);
  EXPECT_DOUBLE_EQ(value("ep_rank_load.imbalance.mean"), (8.0 / 6 + 1) / 2);
  EXPECT_DOUBLE_EQ(value("ep_rank_load.cv.mean"), 1.0 / 6);
  EXPECT_DOUBLE_EQ(value("expert_load.imbalance.mean[layer 1]"), 1.5);
  // Over steps: experts 0..3 got 8, 4, 5, 3.
  EXPECT_DOUBLE_EQ(value("expert_load.tokens[layer 1]"), 20.0);
  EXPECT_DOUBLE_EQ(value("expert_load.tokens.max[layer 1]"), 8.0);
  // The layer × expert matrix the report draws: the same sums, per expert.
  auto matrix = ExpertTokensByLayer(data);
  ASSERT_EQ(matrix.size(), 1u);
  EXPECT_EQ(matrix.at(1), (std::map<int32_t, int64_t>{{0, 8}, {1, 4}, {2, 5}, {3, 3}}));
}

TEST(AnalyzerTest, ExpertLoadWithoutCountsIsNotAvailable) {
  RunData data;
  RunCollector c(&data);
  trace::OpEvent op;
  op.dur_ns = 5;
  c.OnOp(op);
  MetricSet m = ComputeMetrics(&data);
  const Metric* metric = m.Find("expert_load.imbalance.mean");
  ASSERT_NE(metric, nullptr);
  EXPECT_FALSE(metric->value.has_value());
  EXPECT_EQ(metric->unavailable, "no expert counts in the trace");
}

TEST(AnalyzerTest, FindTraceFilesWalksDirectoriesAndSkipsMetadata) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.File("m/s/batch_1_seq_2"));
  WriteFile(dir.File("m/s/batch_1_seq_2/trace_1.trace"), "{}");
  WriteFile(dir.File("m/s/batch_1_seq_2/metadata_1.json"), "{}");
  auto files = FindTraceFiles({dir.path()});
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 1u);
  EXPECT_NE((*files)[0].find("trace_1.trace"), std::string::npos);
  EXPECT_EQ(FindTraceFiles({dir.File("nope")}).status().code(), StatusCode::kNotFound);
}

// issue 17: `analyze DIR` found only .trace, .json and .json.gz, so a JAX profiler's
// plugins/profile/<run>/<host>.xplane.pb and NCCL profiler .jsonl files were invisible.
TEST(AnalyzerTest, FindTraceFilesSeesEveryFormatWeRead) {
  ScratchDir dir;
  std::filesystem::create_directories(dir.File("plugins/profile/run1"));
  for (const char* f :
       {"plugins/profile/run1/host0.xplane.pb", "nccl/rank0.jsonl", "kineto/w0.pt.trace.json",
        "notes.txt", "plugins/profile/run1/.hidden.json"}) {
    std::filesystem::create_directories(std::filesystem::path(dir.File(f)).parent_path());
    WriteFile(dir.File(f), "{}");
  }
  auto files = FindTraceFiles({dir.path()});
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 3u);
  EXPECT_TRUE(IsTraceFileName("host0.xplane.pb"));
  EXPECT_TRUE(IsTraceFileName("events.jsonl"));
  EXPECT_FALSE(IsTraceFileName("notes.txt"));
}

// Read in parallel parts with the metric families on several threads, or all on
// one thread: byte for byte the same metrics, stats and expert matrix. The trace
// is big enough for both (> 8 MiB, > 65536 ops): TP4 × PP2 decoding with
// all-reduces, send/recv, expert GEMMs, step spans and memory counters.
TEST(AnalyzerTest, OneThreadAndSeveralGiveTheSameOutput) {
  ScratchDir dir;
  const std::string path = dir.File("big.json");
  {
    nlohmann::json meta = {{"workload", {{"batch_size", 4}, {"sequence_length", 128}}}};
    auto w = trace::TraceWriter::Open(path, meta);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    for (int r = 0; r < 8; ++r) (*w)->NameProcess(r, "rank \"" + std::to_string(r) + "\" },{");
    for (int step = 0; step < 1000; ++step) {
      for (int r = 0; r < 8; ++r) {
        int64_t now = step * 100'000 + (r % 4) * 37;
        trace::SpanEvent span{r,     trace::SpanKind::kStep,         trace::Phase::kDecode,
                              step,  "step " + std::to_string(step), now,
                              90'000};
        (*w)->AddSpan(span);
        for (int layer = 0; layer < 4; ++layer) {
          trace::OpEvent op;
          op.rank = r;
          op.name = "L" + std::to_string(layer) + ".ffn \"x\"},{";
          op.kind = layer == 3 ? "moe_expert" : "ffn";
          op.phase = trace::Phase::kDecode;
          op.step = step;
          op.layer = layer;
          op.ts_ns = now;
          op.dur_ns = 5'000 + (step * 7 + r * 13 + layer) % 900;
          op.flops = 1'000'000'007LL * (layer + 1);
          op.bytes_read = 333'333 + r;
          if (layer == 3) {
            op.experts = {2 * r, 2 * r + 1};
            op.expert_tokens = {step % 5, (step + r) % 7};
          }
          (*w)->AddOp(op);
          now += op.dur_ns + 100;
          trace::OpEvent ar;
          ar.rank = r;
          ar.stream = 1;
          ar.name = "allreduce";
          ar.category = trace::Category::kComm;
          ar.collective = Collective::kAllReduce;
          ar.dim = Dim::kTp;
          ar.phase = trace::Phase::kDecode;
          ar.step = step;
          ar.group = {r / 4 * 4, r / 4 * 4 + 1, r / 4 * 4 + 2, r / 4 * 4 + 3};
          ar.bytes = 4096 * (layer + 1) + step;
          ar.ts_ns = now + (r % 4) * 11;
          ar.dur_ns = 3'000 + (step * 3 + r) % 400;
          (*w)->AddOp(ar);
          now = ar.end_ns() + 50;
        }
        trace::OpEvent p2p;
        p2p.rank = r;
        p2p.stream = 2;
        p2p.category = trace::Category::kComm;
        p2p.collective = r < 4 ? Collective::kSend : Collective::kRecv;
        p2p.dim = Dim::kPp;
        p2p.peer = r < 4 ? r + 4 : r - 4;
        p2p.bytes = 65536;
        p2p.phase = trace::Phase::kDecode;
        p2p.step = step;
        p2p.name = r < 4 ? "send" : "recv";
        p2p.ts_ns = now;
        p2p.dur_ns = 2'000 + r * 10;
        (*w)->AddOp(p2p);
        (*w)->AddCounter({r, "memory", now, {{"weights", 1e9 + r}, {"kv_cache", 1e6 * step}}});
      }
    }
    ASSERT_TRUE((*w)->Close().ok());
  }
  ASSERT_GT(std::filesystem::file_size(path), 8u << 20);
  auto analyze = [&](const char* threads) {
    setenv("SHARDSCOPE_THREADS", threads, 1);
    auto r = AnalyzeTraceFile(path);
    unsetenv("SHARDSCOPE_THREADS");
    return r;
  };
  auto one = analyze("1");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_GT(one->stats.ops, 65536);
  EXPECT_GT(one->metrics.metrics().size(), 100u);
  for (const char* threads : {"2", "3"}) {
    auto several = analyze(threads);
    ASSERT_TRUE(several.ok()) << several.status().ToString();
    EXPECT_EQ(several->metrics.ToJson().dump(), one->metrics.ToJson().dump()) << threads;
    EXPECT_EQ(several->stats.Summary(), one->stats.Summary()) << threads;
    EXPECT_EQ(several->expert_tokens, one->expert_tokens) << threads;
    EXPECT_EQ(several->bandwidth_by_size.size(), one->bandwidth_by_size.size()) << threads;
    for (size_t i = 0; i < one->bandwidth_by_size.size() && i < several->bandwidth_by_size.size();
         ++i) {
      EXPECT_EQ(several->bandwidth_by_size[i].busbw, one->bandwidth_by_size[i].busbw);
    }
  }
}

}  // namespace
}  // namespace shardscope::analysis
