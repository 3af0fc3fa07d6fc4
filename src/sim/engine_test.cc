#include "sim/engine.h"

#include <gtest/gtest.h>

#include <limits>
#include <memory>

#include "plan/test_experiments.h"
#include "program/program_builder.h"

namespace shardscope::sim {
namespace {

using shardscope::testing::ZooExperiment;

Calibration NoLaunch(const DeviceSpec& d) {
  Calibration c = DefaultCalibration(d);
  c.launch_overhead = 0;
  return c;
}

// p equal stages, m micro-batches: the pipeline bubble is (p−1)/(m+p−1).
TEST(EngineTest, PipelineBubbleFraction) {
  for (int64_t p : {2, 4}) {
    for (int64_t m : {1, 4, 8}) {
      ParallelSpec par;
      par.pp = p;
      Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", par, 8, 16);
      e.cluster.scale_up.latency = 0;        // transfers of 0 bytes then take no time
      e.cluster.collectives = CommTuning{};  // nor a per-call cost
      auto pl = Placement::Create(e);
      ASSERT_TRUE(pl.ok()) << pl.status().message();
      auto model = ComputeModel::Create(e.cluster.device, DType::kBf16, NoLaunch(e.cluster.device));
      ASSERT_TRUE(model.ok());
      Topology topo(e.cluster);
      PhaseProgram prog;
      for (int64_t s = 0; s < p; ++s) {
        std::array<int64_t, kNumDims> coord{};
        coord[static_cast<int>(Dim::kPp)] = s;
        RankProgram rp;
        rp.rank = pl->RankAt(coord);
        auto add = [&](Op op, std::initializer_list<int32_t> deps = {}) {
          op.id = static_cast<int32_t>(rp.ops.size());
          rp.ops.push_back(op);
          SetDeps(rp, rp.ops.size() - 1, deps);
          return op.id;
        };
        for (int64_t j = 0; j < m; ++j) {
          int32_t recv = -1;
          if (s > 0) {
            Op r;
            r.kind = OpKind::kComm;
            r.stream = Stream::kCommPp;
            r.collective = Collective::kRecv;
            r.dim = Dim::kPp;
            coord[static_cast<int>(Dim::kPp)] = s - 1;
            r.peer = pl->RankAt(coord);
            r.seq = j;
            recv = add(r);
          }
          Op c;
          c.kind = OpKind::kFfnUp;
          c.flops = 1'000'000'000'000;  // ~1 ms at 0.75 of 989 TFLOP/s
          const int32_t comp = recv >= 0 ? add(c, {recv}) : add(c);
          if (s + 1 < p) {
            Op snd;
            snd.kind = OpKind::kComm;
            snd.stream = Stream::kCommPp;
            snd.collective = Collective::kSend;
            snd.dim = Dim::kPp;
            coord[static_cast<int>(Dim::kPp)] = s + 1;
            snd.peer = pl->RankAt(coord);
            snd.seq = j;
            add(snd, {comp});
          }
        }
        prog.ranks.push_back(std::move(rp));
      }
      std::sort(prog.ranks.begin(), prog.ranks.end(),
                [](const RankProgram& a, const RankProgram& b) { return a.rank < b.rank; });
      Engine engine(*pl, *model, topo);
      auto r = engine.Run(prog);
      ASSERT_TRUE(r.ok()) << r.status().message();
      const double t = model->Seconds(prog.ranks[0].ops[0].is_comm() ? prog.ranks[0].ops[1]
                                                                     : prog.ranks[0].ops[0]);
      const double span = *std::max_element(r->rank_end.begin(), r->rank_end.end());
      EXPECT_NEAR(span, static_cast<double>(m + p - 1) * t, 1e-12 * span);
      const double bubble = 1 - static_cast<double>(m) * t / span;
      EXPECT_NEAR(bubble, static_cast<double>(p - 1) / static_cast<double>(m + p - 1), 1e-9)
          << "p=" << p << " m=" << m;
    }
  }
}

// Ring attention whose K/V transfer is shorter than a block's compute: after the
// first step the compute stream never waits for a transfer.
TEST(EngineTest, RingAttentionHidesTransferAfterFirstStep) {
  ParallelSpec par;
  par.sp = 4;
  Experiment e = ZooExperiment("llama-3.1-8b", "h100-sxm", par, 1, 32768, 2);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok()) << pl.status().message();
  auto builder = ProgramBuilder::Create(e, *pl);
  ASSERT_TRUE(builder.ok());
  auto prog = builder->Build(Phase::kPrefill, 0);
  ASSERT_TRUE(prog.ok());
  auto model =
      ComputeModel::Create(e.cluster.device, DType::kBf16, DefaultCalibration(e.cluster.device));
  ASSERT_TRUE(model.ok());
  Topology topo(e.cluster);
  Engine engine(*pl, *model, topo);
  auto r = engine.Run(*prog);
  ASSERT_TRUE(r.ok()) << r.status().message();
  int64_t checked = 0;
  for (const RankProgram& rp : prog->ranks) {
    const auto& t = r->timings[rp.rank];
    double prev_end = 0;
    for (const Op& op : rp.ops) {
      if (op.is_comm()) continue;
      if (op.kind == OpKind::kAttention && op.sp_step >= 1) {
        // The compute stream went straight from the previous op to this one.
        EXPECT_NEAR(t[op.id].start, prev_end, 1e-12) << OpName(op) << " on rank " << rp.rank;
        ++checked;
      }
      prev_end = t[op.id].end;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(EngineTest, MismatchedCollectiveIsAnError) {
  ParallelSpec par;
  par.tp = 2;
  Experiment e = ZooExperiment("tiny-dense", "h100-sxm", par, 2, 16);
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok());
  auto builder = ProgramBuilder::Create(e, *pl);
  ASSERT_TRUE(builder.ok());
  auto prog = builder->Build(Phase::kDecode, 0);
  ASSERT_TRUE(prog.ok());
  for (Op& op : prog->ranks[1].ops) {
    if (op.is_comm()) {
      op.bytes += 2;
      break;
    }
  }
  auto model =
      ComputeModel::Create(e.cluster.device, DType::kBf16, DefaultCalibration(e.cluster.device));
  ASSERT_TRUE(model.ok());
  Topology topo(e.cluster);
  Engine engine(*pl, *model, topo);
  auto r = engine.Run(*prog);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("differ in bytes"), std::string::npos);
}

// tiny-moe-mla on H100s (8 requests, 64-token prompts, 16 tokens) under
// `par` (or tp × ep): its placement, Program builder, compute model and topology.
struct MoeRig {
  MoeRig(int64_t tp, int64_t ep) : MoeRig(TpEp(tp, ep)) {}
  explicit MoeRig(const ParallelSpec& par)
      : experiment(ZooExperiment("tiny-moe-mla", "h100-sxm", par, 8, 64, 16)),
        placement(*Placement::Create(experiment)),
        builder(*ProgramBuilder::Create(experiment, placement)),
        model(*ComputeModel::Create(experiment.cluster.device, DType::kBf16,
                                    DefaultCalibration(experiment.cluster.device))),
        topology(experiment.cluster) {}
  static ParallelSpec TpEp(int64_t tp, int64_t ep) {
    ParallelSpec par;
    par.tp = tp;
    par.ep = ep;
    return par;
  }
  Experiment experiment;
  Placement placement;
  ProgramBuilder builder;
  ComputeModel model;
  Topology topology;
};

// Every op of `a` timed exactly as in `b` (`where`: the run, for messages).
void ExpectSameTimings(const PhaseResult& a, const PhaseResult& b, const std::string& where) {
  ASSERT_EQ(a.timings.flat.size(), b.timings.flat.size()) << where;
  for (size_t i = 0; i < a.timings.flat.size(); ++i) {
    const OpTiming& x = a.timings.flat[i];
    const OpTiming& y = b.timings.flat[i];
    EXPECT_TRUE(x.post == y.post && x.start == y.start && x.end == y.end &&
                x.algorithm == y.algorithm && x.comm == y.comm)
        << where << " op " << i;
  }
}

// The engine reads an all-to-all's row from peer_sends: an op that has bytes
// but lists none there is refused, not simulated as moving nothing.
TEST(EngineTest, AllToAllWithoutPeerSendsIsAnError) {
  MoeRig rig(1, 4);
  auto prog = rig.builder.Build(Phase::kDecode, 0);
  ASSERT_TRUE(prog.ok());
  Engine engine(rig.placement, rig.model, rig.topology);
  ASSERT_TRUE(engine.Run(*prog).ok());
  Op* a2a = nullptr;
  for (Op& op : prog->ranks[2].ops) {
    if (op.collective == Collective::kAllToAll && op.bytes > 0) a2a = &op;
  }
  ASSERT_NE(a2a, nullptr);
  a2a->peer_sends.clear();
  for (bool same_graph : {true, false}) {  // reusing the good run's graph, then a new one
    auto r = same_graph ? engine.RunSameGraph(*prog) : engine.Run(*prog);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("rank 2 op " + std::to_string(a2a->id)), std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("without peer_sends"), std::string::npos);
  }
}

// Decode steps on one engine that reuses its graph (RunSameGraph after
// ProgramBuilder::Update) time every op exactly as fresh programs on fresh engines.
TEST(EngineTest, SameGraphRunsEqualFreshRuns) {
  MoeRig rig(2, 4);
  Engine reused(rig.placement, rig.model, rig.topology);
  auto prog = rig.builder.Build(Phase::kDecode, 0);
  ASSERT_TRUE(prog.ok());
  ASSERT_TRUE(reused.Run(*prog).ok());
  std::vector<double> start(rig.placement.world_size(), 0.5);
  // Every op read again (step 1 twice: its all-to-all plans kept the second
  // time), then only the updated ones (the engine keeps the all-to-all rows of
  // the others, and moves the ones that grow to the end of its block, which it
  // compacts twice over these steps).
  int64_t k = 0;
  for (int64_t step : {1, 1, 2, 9, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 0}) {
    bool same_ops = false;
    UpdatedOps updated;
    ASSERT_TRUE(rig.builder.Update(*prog, step, &same_ops, &updated).ok());
    ASSERT_TRUE(same_ops);
    auto a =
        ++k <= 5 ? reused.RunSameGraph(*prog, start) : reused.RunSameGraph(*prog, start, &updated);
    ASSERT_TRUE(a.ok()) << a.status().message();
    auto fresh = rig.builder.Build(Phase::kDecode, step);
    ASSERT_TRUE(fresh.ok());
    Engine engine(rig.placement, rig.model, rig.topology);
    auto b = engine.Run(*fresh, start);
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(a->ops, b->ops);
    EXPECT_EQ(a->transfers, b->transfers);
    EXPECT_EQ(a->rank_end, b->rank_end);
    ExpectSameTimings(*a, *b, "step " + std::to_string(step));
    start = a->rank_end;
  }
  // A program with other ops is refused, not run on the old graph.
  prog->ranks[0].ops.pop_back();
  EXPECT_FALSE(reused.RunSameGraph(*prog).ok());
}

// An all-to-all row changed in place (same positions, other bytes): a run on
// the reused graph (with no list of updated ops) and a run that builds the
// graph again both see it and plan the call again, as a fresh engine does;
// unchanged, the plans are kept and the times stay the same.
TEST(EngineTest, RunsReplanAnAllToAllWhoseRowChanged) {
  MoeRig rig(1, 4);
  auto prog = rig.builder.Build(Phase::kDecode, 0);
  ASSERT_TRUE(prog.ok());
  Engine reused(rig.placement, rig.model, rig.topology);
  auto before = reused.Run(*prog);
  ASSERT_TRUE(before.ok()) << before.status().message();
  Op* a2a = nullptr;  // rank 1's first dispatch that sends to another member
  for (Op& op : prog->ranks[1].ops) {
    if (op.role == OpRole::kDispatch && op.peer_sends.size() > 1 && a2a == nullptr) a2a = &op;
  }
  ASSERT_NE(a2a, nullptr);
  const Group& group = rig.placement.GroupOf(1, Dim::kEp);
  PeerBytes* entry = nullptr;  // not its own part, which moves locally
  for (PeerBytes& p : a2a->peer_sends) {
    if (group.ranks[p.position] != 1 && entry == nullptr) entry = &p;
  }
  ASSERT_NE(entry, nullptr);
  // `bytes` is left as it was (the engine does not check the sum): only the row
  // tells that the call changed.
  auto same_as_fresh = [&](const PhaseResult& a) {
    Engine fresh(rig.placement, rig.model, rig.topology);
    auto b = fresh.Run(*prog);
    ASSERT_TRUE(b.ok()) << b.status().message();
    ASSERT_EQ(a.timings.flat.size(), b->timings.flat.size());
    for (size_t i = 0; i < a.timings.flat.size(); ++i) {
      const OpTiming& x = a.timings.flat[i];
      const OpTiming& y = b->timings.flat[i];
      EXPECT_TRUE(x.post == y.post && x.start == y.start && x.end == y.end &&
                  x.algorithm == y.algorithm)
          << "op " << i;
    }
  };
  double end = before->rank_end[1];
  for (bool same_graph : {true, false, true, false}) {
    entry->bytes += int64_t{64} << 20;  // 64 MiB more to one peer: a longer transfer
    auto a = same_graph ? reused.RunSameGraph(*prog) : reused.Run(*prog);
    ASSERT_TRUE(a.ok()) << a.status().message();
    same_as_fresh(*a);
    EXPECT_GT(a->rank_end[1], end) << same_graph;  // the change is seen at all
    end = a->rank_end[1];
    auto again = same_graph ? reused.RunSameGraph(*prog) : reused.Run(*prog);  // unchanged
    ASSERT_TRUE(again.ok()) << again.status().message();
    same_as_fresh(*again);
  }
}

// Each op's timing is written once, when it becomes ready, into the buffer a
// recycled result leaves: runs of other graphs (prefill, decode, both sizes)
// on one engine, each given back with every timing garbled, equal runs on a
// fresh engine, and no op keeps a garbled field.
TEST(EngineTest, RecycledTimingsAreAllRewritten) {
  MoeRig rig(2, 2);
  Engine reused(rig.placement, rig.model, rig.topology);
  for (Phase phase : {Phase::kPrefill, Phase::kDecode, Phase::kDecode, Phase::kPrefill}) {
    auto prog = rig.builder.Build(phase, 0);
    ASSERT_TRUE(prog.ok());
    auto a = reused.Run(*prog);
    ASSERT_TRUE(a.ok()) << a.status().message();
    Engine fresh(rig.placement, rig.model, rig.topology);
    auto b = fresh.Run(*prog);
    ASSERT_TRUE(b.ok()) << b.status().message();
    ExpectSameTimings(*a, *b, std::string(PhaseName(phase)));
    for (const OpTiming& x : a->timings.flat) {
      EXPECT_TRUE(0 <= x.post && x.post <= x.start && x.start <= x.end);
    }
    for (size_t r = 0; r < prog->ranks.size(); ++r) {
      for (const Op& op : prog->ranks[r].ops) {
        const OpTiming& x = a->timings[r][op.id];
        EXPECT_EQ(x.comm, op.is_comm()) << "rank " << r << " op " << op.id;
        if (!op.is_comm()) {
          EXPECT_EQ(x.algorithm, Algorithm::kAuto) << "rank " << r << " op " << op.id;
        }
      }
    }
    for (OpTiming& t : a->timings.flat) {
      t = {std::numeric_limits<double>::quiet_NaN(), -1, -2, Algorithm::kTree, !t.comm};
    }
    reused.Recycle(std::move(*a));
  }
}

// Ops of two EP ranks (tiny-moe-mla, EP2, one H100 node) for the hand-computed
// overlap tests below: an FFN compute op of `flops`, and an all-to-all of
// `bytes` to the other rank of `group` (PairProgram sets the peer).
Op ComputeOp(int64_t flops) {
  Op c;
  c.kind = OpKind::kFfnUp;
  c.flops = flops;
  return c;
}

Op PairAllToAll(int32_t group, int64_t bytes, int32_t seq) {
  Op a;
  a.kind = OpKind::kComm;
  a.stream = Stream::kCommEp;
  a.collective = Collective::kAllToAll;
  a.dim = Dim::kEp;
  a.group_id = group;
  a.seq = seq;
  a.bytes = bytes;
  a.peer_sends = {{0, bytes}};
  return a;
}

// The same ops (each with its deps) on both ranks, each all-to-all to the other rank.
using OpsWithDeps = std::vector<std::pair<Op, std::vector<int32_t>>>;
PhaseProgram PairProgram(const OpsWithDeps& ops, Phase phase = Phase::kPrefill) {
  PhaseProgram prog;
  prog.phase = phase;
  for (int64_t r = 0; r < 2; ++r) {
    RankProgram rp;
    rp.rank = r;
    for (const auto& [op, deps] : ops) {
      rp.ops.push_back(op);
      Op& o = rp.ops.back();
      o.id = static_cast<int32_t>(rp.ops.size() - 1);
      if (o.is_comm()) o.peer_sends[0].position = static_cast<int32_t>(1 - r);
      o.deps_begin = static_cast<int32_t>(rp.deps.size());
      o.deps_count = static_cast<int32_t>(deps.size());
      rp.deps.insert(rp.deps.end(), deps.begin(), deps.end());
    }
    prog.ranks.push_back(std::move(rp));
  }
  return prog;
}

// The two EP ranks those programs run on, and the engine over them without
// launch costs, the all-to-alls holding a prefill SM share.
struct EpPair {
  EpPair(Experiment exp, Placement p, ComputeModel m)
      : e(std::move(exp)),
        pl(std::move(p)),
        model(std::move(m)),
        topo(e.cluster),
        group(static_cast<int32_t>(pl.GroupOf(0, Dim::kEp).id)) {}
  StatusOr<PhaseResult> Run(const PhaseProgram& prog, double share) const {
    EngineOptions o;
    o.prefill_sm_share = share;
    Engine engine(pl, model, topo, o);
    return engine.Run(prog);
  }
  Experiment e;
  Placement pl;
  ComputeModel model;
  Topology topo;
  int32_t group;
};
std::unique_ptr<EpPair> MakeEpPair() {
  ParallelSpec par;
  par.ep = 2;
  Experiment e = ZooExperiment("tiny-moe-mla", "h100-sxm", par, 2, 16);
  auto pl = Placement::Create(e);
  auto model = ComputeModel::Create(e.cluster.device, DType::kBf16, NoLaunch(e.cluster.device));
  if (!pl.ok() || !model.ok()) {
    ADD_FAILURE() << (pl.ok() ? model.status().message() : pl.status().message());
    return nullptr;
  }
  return std::make_unique<EpPair>(std::move(e), std::move(*pl), std::move(*model));
}

// SM contention (EngineOptions::prefill_sm_share s): a compute op of own time C
// overlapped by an all-to-all held for T runs C + s·T, at most C/(1 − s); by hand.
TEST(EngineTest, SmContentionSlowsOverlappedComputeHandComputed) {
  const std::unique_ptr<EpPair> pair = MakeEpPair();
  ASSERT_NE(pair, nullptr);
  const int32_t group = pair->group;
  // Op 0: compute of `flops`; op 1: an all-to-all of `bytes`, after op 0 when
  // `serial`, else beside it from time 0. Returns (compute end, span).
  auto run = [&](double share, int64_t flops, int64_t bytes, bool serial, Phase phase) {
    const PhaseProgram prog =
        PairProgram({{ComputeOp(flops), {}},
                     {PairAllToAll(group, bytes, 0),
                      serial ? std::vector<int32_t>{0} : std::vector<int32_t>{}}},
                    phase);
    auto r = pair->Run(prog, share);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return std::pair{0.0, 0.0};
    return std::pair{r->timings[0][0].end,
                     *std::max_element(r->rank_end.begin(), r->rank_end.end())};
  };
  const double s = 0.25;
  const int64_t flops = 400'000'000'000;
  const double c = run(0, flops, 1'000, false, Phase::kPrefill).first;
  ASSERT_GT(c, 0);
  for (int64_t bytes : {int64_t{1'000'000}, int64_t{100'000'000}, int64_t{2'000'000'000}}) {
    const auto [alone_c, m] = run(0, 0, bytes, false, Phase::kPrefill);
    ASSERT_GT(m, 0);
    const auto [end, span] = run(s, flops, bytes, false, Phase::kPrefill);
    // Held over [0, M]: the compute op of span d overlaps min(M, d), so
    // d = C + s·M while M ≤ d, else d = C/(1 − s).
    const double expected = m <= c + s * m ? c + s * m : c / (1 - s);
    EXPECT_NEAR(end, expected, 1e-6 * expected) << "C " << c << " M " << m;
    EXPECT_GE(span * (1 + 1e-9), std::max(c, m));  // never faster than either stream
    EXPECT_GE(end, c);
    EXPECT_LE(end, c / (1 - s) * (1 + 1e-9));
    // Without a share, or in decode (its share is 0 here), the op takes C.
    EXPECT_NEAR(run(0, flops, bytes, false, Phase::kPrefill).first, c, 1e-12);
    EXPECT_NEAR(run(s, flops, bytes, false, Phase::kDecode).first, c, 1e-12);
    // Not overlapped (the all-to-all after the compute): nothing changes.
    const auto [serial_end, serial_span] = run(s, flops, bytes, true, Phase::kPrefill);
    EXPECT_NEAR(serial_end, c, 1e-12);
    EXPECT_NEAR(serial_span, c + m, 1e-6 * (c + m));
  }
}

// Two-batch overlap, one MoE layer on two EP ranks in the order ProgramBuilder
// emits a prefill layer (docs/sim.md, "Two-batch overlap"; the op list and the
// hand computation are below). Every compute op takes C, every all-to-all M.
TEST(EngineTest, TwoBatchOverlapSpanHandComputed) {
  const std::unique_ptr<EpPair> pair = MakeEpPair();
  ASSERT_NE(pair, nullptr);
  const int32_t group = pair->group;
  auto compute = [](int64_t flops) { return ComputeOp(flops); };
  auto a2a = [&](int64_t bytes, int32_t seq) { return PairAllToAll(group, bytes, seq); };
  // Runs `ops` (op, deps) on both ranks; the span. `share`: the all-to-alls' SM share.
  auto span = [&](const OpsWithDeps& ops, double share = 0) {
    auto r = pair->Run(PairProgram(ops), share);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *std::max_element(r->rank_end.begin(), r->rank_end.end()) : 0.0;
  };
  for (const auto& [flops, bytes] : {std::pair<int64_t, int64_t>{400'000'000'000, 1'000'000},
                                     std::pair<int64_t, int64_t>{1'000'000'000, 200'000'000}}) {
    const double c = span({{compute(flops), {}}});
    const double m = span({{a2a(bytes, 0), {}}});
    ASSERT_GT(c, 0);
    ASSERT_GT(m, 0);
    // One MoE layer of two micro-batches as two-batch-overlap prefill runs it
    // (SGLang's prefill strategy): attention and dispatch of A then B, A's
    // experts, B's experts, then A's output and B's. Ops: attn A 0, disp A 1,
    // attn B 2, disp B 3, experts A 4, comb A 5, experts B 6, comb B 7,
    // output A 8, output B 9; every compute op costs C, every all-to-all M.
    const std::vector<std::pair<Op, std::vector<int32_t>>> layer = {
        {compute(flops), {}},  {a2a(bytes, 0), {0}}, {compute(flops), {}},  {a2a(bytes, 1), {2}},
        {compute(flops), {1}}, {a2a(bytes, 2), {4}}, {compute(flops), {3}}, {a2a(bytes, 3), {6}},
        {compute(flops), {5}}, {compute(flops), {7}}};
    const double tbo = span(layer);
    // With the all-to-alls holding a share s of the SMs: at M ≤ C each of the
    // four lies under one compute op, which takes s·M longer: 6C + 4sM. At
    // M > C the compute ops under them slow but the comm stream still paces:
    // no faster than before, no slower than each overlapped op at C/(1 − s).
    const double s = 0.2;
    const double contended = span(layer, s);
    if (m <= c) {
      EXPECT_NEAR(contended, 6 * c + 4 * s * m, 1e-9 * contended);
    } else {
      EXPECT_GE(contended * (1 + 1e-9), tbo);
      EXPECT_LE(contended, 6 * c / (1 - s) + 4 * m);
    }
    // By hand. M ≤ C: each all-to-all ends under the next compute op, A's
    // combine (3C..3C+M) under B's experts: the compute stream never waits, 6C.
    // M > C: the comm stream is the bottleneck from A's dispatch (C) on: the
    // four all-to-alls end at C + 4M, B's output C later: 2C + 4M.
    const double expected = m <= c ? 6 * c : 2 * c + 4 * m;
    EXPECT_NEAR(tbo, expected, 1e-9 * expected) << "C " << c << " M " << m;
    // Never faster than either stream's busy time, faster than serial.
    EXPECT_GE(tbo * (1 + 1e-9), std::max(6 * c, 4 * m));
    EXPECT_LT(tbo, 6 * c + 4 * m);
    // The schedule before (A's output ahead of B's experts) left the compute
    // stream idle for A's combine: one M more at M ≤ C.
    const double serial_output = span({{compute(flops), {}},
                                       {a2a(bytes, 0), {0}},
                                       {compute(flops), {}},
                                       {a2a(bytes, 1), {2}},
                                       {compute(flops), {1}},
                                       {a2a(bytes, 2), {4}},
                                       {compute(flops), {5}},
                                       {compute(flops), {3}},
                                       {a2a(bytes, 3), {7}},
                                       {compute(flops), {8}}});
    if (m <= c) {
      EXPECT_NEAR(serial_output, 6 * c + 2 * m, 1e-9 * expected);
    }
  }
}

}  // namespace
}  // namespace shardscope::sim
