#include "program/program_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "model/params.h"
#include "program/program_test_util.h"

namespace shardscope {
namespace {

using testing::BuildOrDie;
using testing::Built;
using testing::MakeExperiment;
using testing::ScaledUnique;
using testing::Sizes;

using OpPred = std::function<bool(const Op&)>;

std::vector<const Op*> Select(const RankProgram& rp, const OpPred& pred) {
  std::vector<const Op*> out;
  for (const Op& op : rp.ops) {
    if (pred(op)) out.push_back(&op);
  }
  return out;
}

OpPred Kind(OpKind kind, int32_t layer) {
  return [=](const Op& op) { return op.kind == kind && op.layer == layer; };
}

OpPred Comm(Collective c, std::string label) {
  return [=](const Op& op) { return op.collective == c && op.label() == label; };
}

int64_t Flops(const Op& op) { return op.flops; }
int64_t WeightBytes(const Op& op) { return op.weight_bytes; }

void ExpectValid(const Built& b) {
  Status s = CheckProgram(b.program, b.placement);
  EXPECT_TRUE(s.ok()) << s.ToString();
  for (const RankProgram& rp : b.program.ranks) {  // names are unique per micro-batch
    std::set<std::pair<int32_t, std::string>> names;
    for (const Op& op : rp.ops) {
      EXPECT_TRUE(names.emplace(op.micro_batch, OpName(op)).second)
          << "rank " << rp.rank << " repeats " << OpName(op);
    }
  }
}

TEST(ProgramBuilderTest, TensorParallelSumsEqualTheSingleDeviceTotals) {
  const ModelSpec models[] = {testing::TinyDense(), testing::TinyMoe(true),
                              testing::TinyMoe(true, 0), testing::TinyMoe(false)};
  for (const ModelSpec& model : models) {
    for (Phase phase : {Phase::kPrefill, Phase::kDecode}) {
      const int64_t step = phase == Phase::kDecode ? 3 : 0;
      Built one = BuildOrDie(MakeExperiment(model, {}, 3, 16), phase, step);
      const int64_t flops = ScaledUnique(one.program, 1, Flops);
      const int64_t weights = ScaledUnique(one.program, 1, WeightBytes);
      for (int64_t tp : {2, 4, 8}) {
        SCOPED_TRACE(model.name + " " + std::string(PhaseName(phase)) + " tp " +
                     std::to_string(tp));
        Built b = BuildOrDie(MakeExperiment(model, Sizes{.tp = tp}, 3, 16), phase, step);
        EXPECT_EQ(ScaledUnique(b.program, tp, Flops), tp * flops);
        EXPECT_EQ(ScaledUnique(b.program, tp, WeightBytes), tp * weights);
        EXPECT_DOUBLE_EQ(UniqueFlops(b.program), static_cast<double>(flops));
        // Split work really is split: each rank does less than the whole.
        EXPECT_LT(Totals(b.program.ranks[0]).flops, flops);
        ExpectValid(b);
      }
    }
  }
}

// qk_norm (Qwen3): one RMSNorm per query head and per key head of every token,
// head_dim wide, between the projections and RoPE; one weight vector each.
TEST(ProgramBuilderTest, QkNormsArePerHeadNorms) {
  ModelSpec m = testing::TinyDense();
  const int64_t batch = 2, seq = 16, tokens = batch * seq, d = m.head_dim;
  const int64_t layers = m.num_layers, heads = m.num_heads, kv = m.num_kv_heads;
  Built plain = BuildOrDie(MakeExperiment(m, {}, batch, seq), Phase::kPrefill);
  m.qk_norm = true;
  Built qk = BuildOrDie(MakeExperiment(m, {}, batch, seq), Phase::kPrefill);
  const RankProgram& rp = qk.program.ranks[0];
  EXPECT_EQ(Totals(rp).flops - Totals(plain.program.ranks[0]).flops,
            layers * 4 * tokens * (heads + kv) * d);  // 4 FLOPs per normed value
  EXPECT_EQ(Totals(rp).weight_bytes - Totals(plain.program.ranks[0]).weight_bytes,
            layers * 2 * d * 2);  // two bf16 vectors of head_dim per layer
  const Op* q = nullptr;
  const Op* k = nullptr;
  const Op* rope = nullptr;
  for (const Op& op : rp.ops) {
    if (op.layer != 1) continue;
    if (OpName(op) == "L1.norm.q") q = &op;
    if (OpName(op) == "L1.norm.k") k = &op;
    if (op.kind == OpKind::kRope && rope == nullptr) rope = &op;
  }
  ASSERT_NE(q, nullptr);
  ASSERT_NE(k, nullptr);
  ASSERT_NE(rope, nullptr);
  EXPECT_EQ(q->flops, 4 * tokens * heads * d);
  EXPECT_EQ(k->flops, 4 * tokens * kv * d);
  EXPECT_LT(k->id, rope->id);  // normed before RoPE
  ExpectValid(qk);
  // Split over tp (tp 8 > 2 KV heads: each key head is normed on 4 ranks).
  for (int64_t tp : {2, 4, 8}) {
    SCOPED_TRACE(tp);
    Built b = BuildOrDie(MakeExperiment(m, Sizes{.tp = tp}, batch, seq), Phase::kPrefill);
    EXPECT_EQ(ScaledUnique(b.program, tp, Flops), tp * Totals(rp).flops);
    ExpectValid(b);
  }
}

TEST(ProgramBuilderTest, Llama8BPrefillFlopsByHand) {
  const ModelSpec m = testing::Llama8B();
  const int64_t s = 1024, h = 4096, layers = 32, heads = 32, kv = 8, d = 128, inter = 14336,
                vocab = 128256;
  Built b = BuildOrDie(MakeExperiment(m, {}, 1, s), Phase::kPrefill);
  ASSERT_EQ(b.program.ranks.size(), 1u);
  const RankProgram& rp = b.program.ranks[0];

  // Matrices a prompt token multiplies by, per layer: fused q/k/v, output, gate+up+down.
  const int64_t qkv = h * (heads + 2 * kv) * d;  // 4096 × 6144
  const int64_t out = heads * d * h;             // 4096 × 4096
  const int64_t ffn = 3 * h * inter;             // 3 × 4096 × 14336
  const int64_t gemm = 2 * s * layers * (qkv + out + ffn);
  // Causal attention: S(S+1)/2 (query, key) pairs per head, QKᵀ and AV each 2·d per pair.
  const int64_t pairs = s * (s + 1) / 2;
  const int64_t attention = layers * (2 * pairs * heads * d + 2 * pairs * heads * d);
  // LM head on the last position only.
  const int64_t lm_head = 2 * h * vocab;
  // Elementwise: two RMSNorms (4/element), rope on q and k (3/element), two residual
  // adds (1/element), SwiGLU (5/element of the intermediate); final norm of one token.
  const int64_t elementwise =
      layers * (2 * 4 * s * h + 3 * s * (heads + kv) * d + 2 * s * h + 5 * s * inter) + 4 * h;

  EXPECT_EQ(gemm, 2 * s * 32 * (25165824 + 16777216 + 176160768));
  EXPECT_EQ(Totals(rp).flops, gemm + attention + lm_head + elementwise);

  int64_t matmul = 0, attn = 0;
  for (const Op& op : rp.ops) {
    switch (op.kind) {
      case OpKind::kQkvProj:
      case OpKind::kOutProj:
      case OpKind::kFfnUp:
      case OpKind::kFfnDown:
      case OpKind::kLmHead:
        matmul += op.flops;
        break;
      case OpKind::kAttention:
        attn += op.flops;
        break;
      default:
        break;
    }
  }
  EXPECT_EQ(matmul, gemm + lm_head);
  EXPECT_EQ(attn, attention);
  // The model module's per-token count (which puts the LM head on every token).
  int64_t per_token = 0;
  for (int64_t p = 1; p <= s; ++p) per_token += ForwardFlopsPerToken(m, p);
  EXPECT_EQ(per_token - (s - 1) * lm_head, gemm + attention + lm_head);
  // Weights read once each: every matrix of the model except the embedding table.
  EXPECT_EQ(Totals(rp).weight_bytes, 2 * (layers * (qkv + out + ffn + 2 * h) + h + h * vocab));
}

TEST(ProgramBuilderTest, TensorParallelAllReduces) {
  const int64_t tp = 4, batch = 2, seq = 16, h = 64;
  Built b = BuildOrDie(MakeExperiment(testing::TinyDense(), Sizes{.tp = tp}, batch, seq),
                       Phase::kPrefill);
  const int64_t tokens = batch * seq;
  for (const RankProgram& rp : b.program.ranks) {
    for (int32_t layer = 0; layer < 4; ++layer) {
      auto ars = Select(rp, [&](const Op& op) {
        return op.collective == Collective::kAllReduce && op.layer == layer;
      });
      ASSERT_EQ(ars.size(), 2u);
      EXPECT_EQ(ars[0]->label(), "attn");
      EXPECT_EQ(ars[1]->label(), "ffn");
      for (const Op* op : ars) {
        EXPECT_EQ(op->bytes, tokens * h * 2);
        EXPECT_EQ(op->dim, Dim::kTp);
        EXPECT_EQ(op->stream, Stream::kCommTp);
        EXPECT_EQ(op->group_id, b.placement.GroupOf(rp.rank, Dim::kTp).id);
        // Waits for the projection before it; the next compute op waits for it.
        EXPECT_EQ(rp.ops[DepsOf(rp, *op)[0]].kind,
                  op->label() == "attn" ? OpKind::kOutProj : OpKind::kFfnDown);
        const Op& next = rp.ops[op->id + 1];
        EXPECT_EQ(next.kind, OpKind::kResidualAdd);
        const auto deps = DepsOf(rp, next);
        EXPECT_NE(std::find(deps.begin(), deps.end(), op->id), deps.end());
      }
    }
    auto emb = Select(rp, Comm(Collective::kAllReduce, "embedding"));
    ASSERT_EQ(emb.size(), 1u);
    EXPECT_EQ(emb[0]->bytes, tokens * h * 2);
    auto gather = Select(rp, Comm(Collective::kAllGather, "sampling"));
    ASSERT_EQ(gather.size(), 1u);
    EXPECT_EQ(gather[0]->bytes, tp * batch * 8);  // (max logit, index) per token per rank
    // Norms and residual adds are replicated over the TP group.
    for (const Op* op : Select(rp, Kind(OpKind::kNorm, 0))) EXPECT_EQ(op->replication, tp);
  }
  // The vocabulary (1003) splits unevenly: 251 + 3 × 250 rows.
  int64_t vocab = 0;
  for (const RankProgram& rp : b.program.ranks)
    vocab += Select(rp, Kind(OpKind::kLmHead, -1))[0]->n;
  EXPECT_EQ(vocab, 1003);
}

TEST(ProgramBuilderTest, KvHeadsReplicateBeyondTheirCount) {
  // 2 KV heads, tp 8: each rank computes one KV head, shared by 4 ranks.
  Built b =
      BuildOrDie(MakeExperiment(testing::TinyDense(), Sizes{.tp = 8}, 1, 16), Phase::kPrefill);
  const RankProgram& rp = b.program.ranks[5];
  auto q = Select(rp, Kind(OpKind::kQProj, 0));
  auto kv = Select(rp, Kind(OpKind::kKvProj, 0));
  ASSERT_EQ(q.size(), 1u);
  ASSERT_EQ(kv.size(), 1u);
  EXPECT_EQ(q[0]->n, 1 * 8);   // one query head of 8
  EXPECT_EQ(kv[0]->n, 2 * 8);  // one K and one V head
  EXPECT_EQ(kv[0]->replication, 4);
  EXPECT_EQ(Select(rp, Kind(OpKind::kKvAppend, 0))[0]->replication, 4);
}

TEST(ProgramBuilderTest, PipelineStagesAndMicroBatches) {
  const int64_t batch = 5, seq = 16, h = 64;
  Experiment e = MakeExperiment(testing::TinyDense(), Sizes{.tp = 2, .pp = 2}, batch, seq);
  Built b = BuildOrDie(e, Phase::kPrefill);
  ExpectValid(b);
  EXPECT_EQ(b.program.micro_batches, 2);  // 0 → one per stage
  const int64_t mb_requests[] = {3, 2};
  for (const RankProgram& rp : b.program.ranks) {
    const int64_t stage = b.placement.Coord(rp.rank, Dim::kPp);
    const int64_t peer_stage = 1 - stage;
    auto acts_out = Select(rp, Comm(Collective::kSend, "activations"));
    auto acts_in = Select(rp, Comm(Collective::kRecv, "activations"));
    auto ids_out = Select(rp, Comm(Collective::kSend, "token_ids"));
    auto ids_in = Select(rp, Comm(Collective::kRecv, "token_ids"));
    const auto& acts = stage == 0 ? acts_out : acts_in;
    const auto& ids = stage == 0 ? ids_in : ids_out;
    ASSERT_EQ(acts.size(), 2u);
    ASSERT_EQ(ids.size(), 2u);
    EXPECT_TRUE((stage == 0 ? acts_in : acts_out).empty());
    for (int mb = 0; mb < 2; ++mb) {
      EXPECT_EQ(acts[mb]->bytes, mb_requests[mb] * seq * h * 2);
      EXPECT_EQ(acts[mb]->micro_batch, mb);
      EXPECT_EQ(ids[mb]->bytes, mb_requests[mb] * 4);
      EXPECT_EQ(b.placement.Coord(acts[mb]->peer, Dim::kPp), peer_stage);
      EXPECT_EQ(b.placement.Coord(acts[mb]->peer, Dim::kTp), b.placement.Coord(rp.rank, Dim::kTp));
      EXPECT_EQ(acts[mb]->stream, Stream::kCommPp);
    }
    // Stage 0 embeds, stage 1 holds the head; each stage runs only its layers.
    EXPECT_EQ(Select(rp, Kind(OpKind::kEmbedding, -1)).size(), stage == 0 ? 2u : 0u);
    EXPECT_EQ(Select(rp, Kind(OpKind::kLmHead, -1)).size(), stage == 1 ? 2u : 0u);
    for (const Op& op : rp.ops) {
      if (op.layer >= 0) {
        EXPECT_EQ(b.placement.StageOfLayer(op.layer), stage);
      }
    }
    if (stage == 1) {  // the first op of a micro-batch waits for its activations
      const Op& first = rp.ops[acts[1]->id + 1];
      EXPECT_EQ(first.kind, OpKind::kNorm);
      const auto deps = DepsOf(rp, first);
      EXPECT_NE(std::find(deps.begin(), deps.end(), acts[1]->id), deps.end());
    }
  }
}

TEST(ProgramBuilderTest, LayerWisePipeline) {
  Experiment e = MakeExperiment(testing::TinyDense(), Sizes{.pp = 4}, 8, 16);
  e.parallel.micro_batches = 8;
  for (Phase phase : {Phase::kPrefill, Phase::kDecode}) {
    Built b = BuildOrDie(e, phase, phase == Phase::kDecode ? 2 : 0);
    ExpectValid(b);
    EXPECT_EQ(b.program.micro_batches, 8);
    for (const RankProgram& rp : b.program.ranks) {
      std::set<int32_t> layers;
      for (const Op& op : rp.ops) {
        if (op.layer >= 0) layers.insert(op.layer);
      }
      EXPECT_EQ(layers, std::set<int32_t>{static_cast<int32_t>(rp.rank)});
    }
  }
}

// Per-head causal pairs of an attention op: flops / (2 · heads · (qk + v)).
int64_t Pairs(const Op& op, int64_t heads, int64_t qk, int64_t v) {
  return op.flops / (2 * heads * (qk + v));
}

TEST(ProgramBuilderTest, RingAttentionStepsPairsAndTransfers) {
  const int64_t sp = 4, batch = 2, seq = 64, d = 8, heads = 8, kv_heads = 2;
  for (SpVariant v : {SpVariant::kZigzag, SpVariant::kRing, SpVariant::kStripe}) {
    SCOPED_TRACE(SpVariantName(v));
    Experiment e = MakeExperiment(testing::TinyDense(), Sizes{.sp = sp}, batch, seq);
    e.parallel.sp_variant = v;
    Built b = BuildOrDie(e, Phase::kPrefill);
    ExpectValid(b);
    const int64_t tokens = batch * seq / sp;
    for (int32_t layer = 0; layer < 4; ++layer) {
      int64_t pairs = 0;
      std::vector<int64_t> work;
      for (const RankProgram& rp : b.program.ranks) {
        auto steps = Select(rp, Kind(OpKind::kAttention, layer));
        ASSERT_EQ(steps.size(), static_cast<size_t>(sp));
        int64_t rank_flops = 0;
        for (int64_t j = 0; j < sp; ++j) {
          EXPECT_EQ(steps[j]->sp_step, j);
          pairs += Pairs(*steps[j], heads, d, d);
          rank_flops += steps[j]->flops;
        }
        work.push_back(rank_flops);
        auto sends = Select(rp, [&](const Op& op) {
          return op.collective == Collective::kSend && op.layer == layer;
        });
        auto recvs = Select(rp, [&](const Op& op) {
          return op.collective == Collective::kRecv && op.layer == layer;
        });
        ASSERT_EQ(sends.size(), static_cast<size_t>(sp - 1));
        ASSERT_EQ(recvs.size(), static_cast<size_t>(sp - 1));
        const int64_t sp_rank = b.placement.Coord(rp.rank, Dim::kSp);
        for (int64_t j = 0; j < sp - 1; ++j) {
          EXPECT_EQ(sends[j]->bytes, tokens * kv_heads * d * 2 * 2);  // K and V, bf16
          EXPECT_EQ(sends[j]->stream, Stream::kCommSp);
          EXPECT_EQ(b.placement.Coord(sends[j]->peer, Dim::kSp), (sp_rank + 1) % sp);
          EXPECT_EQ(b.placement.Coord(recvs[j]->peer, Dim::kSp), (sp_rank + sp - 1) % sp);
          // Step j+1 attends to the block recv j brought.
          const auto deps = DepsOf(rp, *steps[j + 1]);
          EXPECT_NE(std::find(deps.begin(), deps.end(), recvs[j]->id), deps.end());
        }
        EXPECT_EQ(Select(rp, Kind(OpKind::kAttentionMerge, layer)).size(), 1u);
      }
      EXPECT_EQ(pairs, batch * seq * (seq + 1) / 2);
      const auto [lo, hi] = std::minmax_element(work.begin(), work.end());
      if (v == SpVariant::kRing) {
        EXPECT_GT(*hi, 3 * *lo);
      } else if (v == SpVariant::kZigzag) {
        EXPECT_EQ(*hi, *lo);
      } else {
        EXPECT_LT(*hi - *lo, *lo / 10);
      }
    }
    // The whole ring computes what one device would, plus the merges.
    Built one = BuildOrDie(MakeExperiment(testing::TinyDense(), {}, batch, seq), Phase::kPrefill);
    int64_t ring = 0, single = 0;
    for (const RankProgram& rp : b.program.ranks) {
      for (const Op& op : rp.ops) ring += op.kind == OpKind::kAttention ? op.flops : 0;
    }
    for (const Op& op : one.program.ranks[0].ops) {
      single += op.kind == OpKind::kAttention ? op.flops : 0;
    }
    EXPECT_EQ(ring, single);
  }
}

TEST(ProgramBuilderTest, RingAttentionWithTensorParallelism) {
  const int64_t tp = 2, sp = 4, batch = 1, seq = 64, d = 8;
  Built b = BuildOrDie(MakeExperiment(testing::TinyDense(), Sizes{.tp = tp, .sp = sp}, batch, seq),
                       Phase::kPrefill);
  ExpectValid(b);
  int64_t pairs = 0;
  for (const RankProgram& rp : b.program.ranks) {
    for (const Op* op : Select(rp, Kind(OpKind::kAttention, 2))) pairs += Pairs(*op, 8 / tp, d, d);
    // The ring runs between ranks of the same tp coordinate.
    for (const Op* op : Select(rp, Comm(Collective::kSend, "kv"))) {
      EXPECT_EQ(b.placement.Coord(op->peer, Dim::kTp), b.placement.Coord(rp.rank, Dim::kTp));
      EXPECT_EQ(op->bytes, seq / sp * 1 * d * 2 * 2);  // one KV head per tp rank
    }
  }
  EXPECT_EQ(pairs, tp * seq * (seq + 1) / 2);
  // The last prompt token's rank samples; its ids reach the whole sp group.
  for (const RankProgram& rp : b.program.ranks) {
    const bool owner = b.placement.Coord(rp.rank, Dim::kSp) == 0;  // zigzag: chunk 2sp−1
    EXPECT_EQ(Select(rp, Kind(OpKind::kLmHead, -1)).size(), owner ? 1u : 0u);
    EXPECT_EQ(Select(rp, Comm(Collective::kBroadcast, "token_ids")).size(), 1u);
  }
}

TEST(ProgramBuilderTest, MlaRingAttentionRotatesTheLatent) {
  const int64_t sp = 2, seq = 32;
  Built b = BuildOrDie(MakeExperiment(testing::TinyMoe(true), Sizes{.tp = 2, .sp = sp}, 2, seq),
                       Phase::kPrefill);
  ExpectValid(b);
  const RankProgram& rp = b.program.ranks[0];
  auto sends = Select(rp, Comm(Collective::kSend, "kv"));
  ASSERT_FALSE(sends.empty());
  EXPECT_EQ(sends[0]->bytes, 2 * seq / sp * (16 + 4) * 2);  // latent + rope key per token
  auto up = Select(rp, Kind(OpKind::kKvUpProj, 0));
  ASSERT_EQ(up.size(), static_cast<size_t>(sp));  // each block is up-projected on arrival
  EXPECT_EQ(up[0]->replication, sp);
}

TEST(ProgramBuilderTest, SequenceParallelDecodeShardsTheCache) {
  const int64_t sp = 4, batch = 2, seq = 64, step = 5, heads = 8, d = 8, layers = 4;
  Built b = BuildOrDie(MakeExperiment(testing::TinyDense(), Sizes{.sp = sp}, batch, seq),
                       Phase::kDecode, step);
  ExpectValid(b);
  EXPECT_EQ(b.program.context_len, seq + step);
  int64_t keys = 0;
  for (const RankProgram& rp : b.program.ranks) {
    const int64_t sp_rank = b.placement.Coord(rp.rank, Dim::kSp);
    auto attn = Select(rp, Kind(OpKind::kAttentionDecode, 1));
    ASSERT_EQ(attn.size(), 1u);
    keys += attn[0]->n;
    EXPECT_EQ(Select(rp, Kind(OpKind::kKvAppend, 1)).size(), sp_rank == step % sp ? 1u : 0u);
    auto gather = Select(
        rp, [](const Op& op) { return op.collective == Collective::kAllGather && op.layer == 1; });
    ASSERT_EQ(gather.size(), 1u);
    EXPECT_EQ(gather[0]->bytes, sp * batch * heads * (d + 1) * 4);  // fp32 output + LSE
    EXPECT_EQ(Select(rp, Kind(OpKind::kNorm, 1))[0]->replication, sp);
  }
  EXPECT_EQ(keys, seq + step + 1);
  // Beyond one device's work only the merges are new.
  Built one =
      BuildOrDie(MakeExperiment(testing::TinyDense(), {}, batch, seq), Phase::kDecode, step);
  EXPECT_DOUBLE_EQ(UniqueFlops(b.program) - UniqueFlops(one.program),
                   static_cast<double>(layers * (sp - 1) * batch * heads * (3 * d + 4)));
}

TEST(ProgramBuilderTest, DecodeFlopsGrowWithContext) {
  const int64_t batch = 3, seq = 16, heads = 8, d = 8, layers = 4;
  Experiment e = MakeExperiment(testing::TinyDense(), {}, batch, seq);
  Built first = BuildOrDie(e, Phase::kDecode, 0);
  Built later = BuildOrDie(e, Phase::kDecode, 10);
  EXPECT_EQ(first.program.new_tokens, 1);
  EXPECT_EQ(later.program.context_len, seq + 10);
  const int64_t grow = Totals(later.program.ranks[0]).flops - Totals(first.program.ranks[0]).flops;
  EXPECT_EQ(grow, layers * 2 * batch * 10 * heads * (d + d));
  // The decode kernel reads the whole cache: context + the new key, K and V, 2 KV heads.
  auto attn = Select(later.program.ranks[0], Kind(OpKind::kAttentionDecode, 0));
  EXPECT_EQ(attn[0]->n, seq + 10 + 1);
  EXPECT_EQ(attn[0]->bytes_read, batch * heads * d * 2 + batch * (seq + 11) * 2 * 2 * d * 2);
}

TEST(ProgramBuilderTest, MlaDecodeUsesTheAbsorbedForm) {
  const int64_t batch = 2, seq = 16, heads = 8, r = 16, rope = 4, nope = 8, v = 8;
  Built pre = BuildOrDie(MakeExperiment(testing::TinyMoe(true), {}, batch, seq), Phase::kPrefill);
  const RankProgram& p = pre.program.ranks[0];
  auto kv_b = Select(p, Kind(OpKind::kKvUpProj, 0));
  ASSERT_EQ(kv_b.size(), 1u);
  EXPECT_EQ(kv_b[0]->flops, 2 * batch * seq * r * heads * (nope + v));
  Built dec = BuildOrDie(MakeExperiment(testing::TinyMoe(true), {}, batch, seq), Phase::kDecode, 0);
  const RankProgram& rp = dec.program.ranks[0];
  auto up = Select(rp, Kind(OpKind::kKvUpProj, 0));
  ASSERT_EQ(up.size(), 2u);
  EXPECT_EQ(up[0]->label(), "uk");
  EXPECT_EQ(up[0]->flops, 2 * batch * heads * nope * r);
  EXPECT_EQ(up[1]->label(), "uv");
  EXPECT_EQ(up[1]->flops, 2 * batch * heads * r * v);
  EXPECT_EQ(up[0]->weight_bytes + up[1]->weight_bytes, kv_b[0]->weight_bytes);
  auto attn = Select(rp, Kind(OpKind::kAttentionDecode, 0));
  const int64_t keys = seq + 1;
  EXPECT_EQ(attn[0]->flops, 2 * batch * keys * heads * ((r + rope) + r));
  EXPECT_EQ(attn[0]->bytes_read, batch * heads * (r + rope) * 2 + batch * keys * (r + rope) * 2);
  EXPECT_EQ(Select(rp, Kind(OpKind::kKvAppend, 0))[0]->bytes_written, batch * (r + rope) * 2);
}

// Tokens each expert received in `layer`, over all ranks.
std::vector<int64_t> ExpertLoad(const Built& b, int32_t layer, int64_t experts) {
  std::vector<int64_t> load(experts, 0);
  for (const RankProgram& rp : b.program.ranks) {
    if (b.placement.Coord(rp.rank, Dim::kTp) != 0) continue;
    for (const Op& op : rp.ops) {
      if (op.kind != OpKind::kExpertGemm || op.layer != layer || op.label() != "gate_up") continue;
      const auto& mine = b.placement.ExpertsOfEpRank(b.placement.Coord(rp.rank, Dim::kEp));
      for (size_t i = 0; i < mine.size(); ++i) load[mine[i]] += op.expert_tokens[i];
    }
  }
  return load;
}

TEST(ProgramBuilderTest, ExpertParallelDispatchAndCombine) {
  const int64_t ep = 4, batch = 8, seq = 32, h = 64, topk = 2;
  Built b = BuildOrDie(MakeExperiment(testing::TinyMoe(true), Sizes{.ep = ep}, batch, seq),
                       Phase::kPrefill);
  ExpectValid(b);
  const int64_t tokens = batch / ep * seq;  // data-parallel attention: own requests
  for (int32_t layer = 0; layer < 3; ++layer) {
    int64_t received = 0;
    for (const RankProgram& rp : b.program.ranks) {
      auto a2a = Select(rp, [&](const Op& op) {
        return op.collective == Collective::kAllToAll && op.layer == layer;
      });
      if (layer == 0) {  // the dense first layer
        EXPECT_TRUE(a2a.empty());
        continue;
      }
      ASSERT_EQ(a2a.size(), 2u);
      const Op& dispatch = *a2a[0];
      const Op& combine = *a2a[1];
      EXPECT_EQ(dispatch.label(), "dispatch");
      EXPECT_EQ(dispatch.bytes, tokens * topk * h * 2);
      int64_t sent = 0;
      for (const PeerBytes& p : dispatch.peer_sends) sent += p.bytes;
      EXPECT_EQ(sent, dispatch.bytes);
      // What this rank receives in the dispatch: its entry in every member's row;
      // the combine sends each member back what it received from it.
      const Group& group = b.placement.groups()[dispatch.group_id];
      const size_t me =
          std::find(group.ranks.begin(), group.ranks.end(), rp.rank) - group.ranks.begin();
      ASSERT_LT(me, group.ranks.size());
      std::vector<int64_t> from(group.ranks.size(), 0);
      for (size_t j = 0; j < group.ranks.size(); ++j) {
        const auto theirs = Select(b.program.ranks[group.ranks[j]], [&](const Op& op) {
          return op.role == OpRole::kDispatch && op.layer == layer;
        });
        ASSERT_EQ(theirs.size(), 1u);
        from[j] = BytesPerPeer(*theirs[0], group.ranks.size())[me];
      }
      EXPECT_EQ(BytesPerPeer(combine, group.ranks.size()), from);
      auto gemm = Select(rp, Kind(OpKind::kExpertGemm, layer));
      ASSERT_EQ(gemm.size(), 2u);
      const int64_t in =
          std::accumulate(gemm[0]->expert_tokens.begin(), gemm[0]->expert_tokens.end(), int64_t{0});
      EXPECT_EQ(in * h * 2, std::accumulate(from.begin(), from.end(), int64_t{0}));
      EXPECT_EQ(gemm[0]->flops, 2 * in * h * 2 * 32);  // gate and up, 32 wide
      EXPECT_EQ(gemm[1]->flops, 2 * in * 32 * h);
      received += in;
      // Expert GEMMs wait for the dispatch, the unpermute for the combine.
      const auto gemm_deps = DepsOf(rp, *gemm[0]);
      EXPECT_NE(std::find(gemm_deps.begin(), gemm_deps.end(), dispatch.id), gemm_deps.end());
      const Op& unpermute = *Select(rp, Kind(OpKind::kUnpermute, layer))[0];
      const auto unpermute_deps = DepsOf(rp, unpermute);
      EXPECT_NE(std::find(unpermute_deps.begin(), unpermute_deps.end(), combine.id),
                unpermute_deps.end());
    }
    if (layer > 0) {
      EXPECT_EQ(received, batch * seq * topk);  // assignments are conserved
    }
  }
  // Deterministic for a fixed seed; another seed routes differently.
  Experiment e = MakeExperiment(testing::TinyMoe(true), Sizes{.ep = ep}, batch, seq);
  EXPECT_EQ(ExpertLoad(BuildOrDie(e, Phase::kPrefill), 1, 16), ExpertLoad(b, 1, 16));
  e.workload.seed = 8;
  EXPECT_NE(ExpertLoad(BuildOrDie(e, Phase::kPrefill), 1, 16), ExpertLoad(b, 1, 16));
}

TEST(ProgramBuilderTest, ZipfRoutingSkewsExpertLoad) {
  Experiment e = MakeExperiment(testing::TinyMoe(false), Sizes{.ep = 4}, 16, 256);
  auto imbalance = [](const std::vector<int64_t>& load) {
    const double total = std::accumulate(load.begin(), load.end(), 0.0);
    return *std::max_element(load.begin(), load.end()) * load.size() / total;
  };
  const double uniform = imbalance(ExpertLoad(BuildOrDie(e, Phase::kPrefill), 2, 16));
  e.workload.routing.kind = RoutingKind::kZipf;
  e.workload.routing.zipf_s = 1.5;
  const double zipf = imbalance(ExpertLoad(BuildOrDie(e, Phase::kPrefill), 2, 16));
  EXPECT_LT(uniform, 1.25);
  EXPECT_GT(zipf, 3.0);
}

TEST(ProgramBuilderTest, ExpertTensorParallelSplitsEachExpert) {
  const ModelSpec model = testing::TinyMoe(true);
  Built ep = BuildOrDie(MakeExperiment(model, Sizes{.ep = 4}, 8, 16), Phase::kPrefill);
  Built both = BuildOrDie(MakeExperiment(model, Sizes{.tp = 2, .ep = 4}, 8, 16), Phase::kPrefill);
  ExpectValid(both);
  EXPECT_EQ(ScaledUnique(both.program, 2, Flops), 2 * ScaledUnique(ep.program, 1, Flops));
  EXPECT_EQ(ScaledUnique(both.program, 2, WeightBytes),
            2 * ScaledUnique(ep.program, 1, WeightBytes));
  for (const RankProgram& rp : both.program.ranks) {
    for (const Op* op : Select(rp, Comm(Collective::kAllToAll, "dispatch"))) {
      const Group& g = both.placement.groups()[op->group_id];
      for (int64_t peer : g.ranks) {
        EXPECT_EQ(both.placement.Coord(peer, Dim::kTp), both.placement.Coord(rp.rank, Dim::kTp));
      }
    }
    auto ar = Select(rp, [](const Op& op) {
      return op.collective == Collective::kAllReduce && op.label() == "ffn" && op.layer == 2;
    });
    EXPECT_EQ(ar.size(), 1u);  // after the combine, the expert-TP partial sums
  }
}

TEST(ProgramBuilderTest, DataParallelReplicasAreIndependent) {
  Built b = BuildOrDie(MakeExperiment(testing::TinyDense(), Sizes{.tp = 2, .dp = 3}, 7, 16),
                       Phase::kPrefill);
  ExpectValid(b);
  for (const RankProgram& rp : b.program.ranks) {
    const int64_t replica = b.placement.Coord(rp.rank, Dim::kDp);
    const int64_t requests = replica == 0 ? 3 : 2;
    EXPECT_EQ(Select(rp, Kind(OpKind::kEmbedding, -1))[0]->m, requests * 16);
    for (const Op& op : rp.ops) EXPECT_NE(op.dim == Dim::kDp && op.is_comm(), true);
  }
}

// Every strategy alone and in hybrids, on dense, MLA-MoE and GQA-MoE models.
struct HybridCase {
  const char* name;
  ModelSpec model;
  Sizes sizes;
  int64_t batch;
  SpVariant variant = SpVariant::kZigzag;
  int64_t micro = 0;
};

std::vector<HybridCase> HybridCases() {
  const ModelSpec dense = testing::TinyDense();
  const ModelSpec mla_moe = testing::TinyMoe(true);
  const ModelSpec gqa_moe = testing::TinyMoe(false);
  return {
      {"tp4", dense, {.tp = 4}, 2},
      {"tp8 kv replicated", dense, {.tp = 8}, 2},
      {"pp2", dense, {.pp = 2}, 4},
      {"tp2 x pp2", dense, {.tp = 2, .pp = 2}, 5},
      {"layer-wise pp4", dense, {.pp = 4}, 4, SpVariant::kZigzag, 4},
      {"sp4 zigzag", dense, {.sp = 4}, 2},
      {"sp4 ring", dense, {.sp = 4}, 2, SpVariant::kRing},
      {"sp3 stripe", dense, {.sp = 3}, 2, SpVariant::kStripe},
      {"sp2 x tp2", dense, {.tp = 2, .sp = 2}, 2},
      {"sp2 x pp2", dense, {.sp = 2, .pp = 2}, 2},
      {"dp2 x tp2", dense, {.tp = 2, .dp = 2}, 3},
      {"ep4", mla_moe, {.ep = 4}, 4},
      {"ep4 uneven", gqa_moe, {.ep = 4}, 6},
      {"ep4 x tp2", mla_moe, {.tp = 2, .ep = 4}, 4},
      {"ep2 x dp2", gqa_moe, {.ep = 2, .dp = 2}, 5},
      {"ep2 x pp2", mla_moe, {.ep = 2, .pp = 2}, 5},
      {"ep2 x sp2", mla_moe, {.sp = 2, .ep = 2}, 2},
      {"mla sp2 x tp2", mla_moe, {.tp = 2, .sp = 2}, 2},
      {"tp2 x sp2 x ep2 x dp2 x pp2", gqa_moe, {.tp = 2, .sp = 2, .ep = 2, .dp = 2, .pp = 2}, 9},
  };
}

TEST(ProgramBuilderTest, EveryStrategyAndHybridChecksOut) {
  for (const HybridCase& c : HybridCases()) {
    SCOPED_TRACE(c.name);
    Experiment e = MakeExperiment(c.model, c.sizes, c.batch, 48);
    e.parallel.sp_variant = c.variant;
    e.parallel.micro_batches = c.micro;
    for (int64_t step : {-1, 0, 4}) {
      Built b = step < 0 ? BuildOrDie(e, Phase::kPrefill) : BuildOrDie(e, Phase::kDecode, step);
      ExpectValid(b);
    }
  }
}

// The builder of `e` over its placement.
StatusOr<ProgramBuilder> BuilderOf(const Experiment& e) {
  ASSIGN_OR_RETURN(Placement placement, Placement::Create(e));
  return ProgramBuilder::Create(e, placement);
}

// Every field of every op equal (the Op has no operator==: list them all).
void ExpectSamePrograms(const PhaseProgram& a, const PhaseProgram& b) {
  EXPECT_EQ(a.phase, b.phase);
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.context_len, b.context_len);
  EXPECT_EQ(a.new_tokens, b.new_tokens);
  EXPECT_EQ(a.micro_batches, b.micro_batches);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_EQ(a.ranks[r].rank, b.ranks[r].rank);
    ASSERT_EQ(a.ranks[r].ops.size(), b.ranks[r].ops.size()) << "rank " << r;
    for (size_t i = 0; i < a.ranks[r].ops.size(); ++i) {
      const Op& x = a.ranks[r].ops[i];
      const Op& y = b.ranks[r].ops[i];
      auto fields = [](const RankProgram& rp, const Op& o) {
        const auto deps = DepsOf(rp, o);
        return std::make_tuple(o.id, o.kind, o.stream, o.layer, o.micro_batch, o.sp_step, o.role,
                               o.flops, o.bytes_read, o.bytes_written, o.weight_bytes, o.m, o.n,
                               o.k, o.replication, o.expert_tokens, o.collective, o.dim, o.group_id,
                               o.peer, o.seq, o.bytes, o.peer_sends,
                               std::vector<int32_t>(deps.begin(), deps.end()));
      };
      EXPECT_TRUE(fields(a.ranks[r], x) == fields(b.ranks[r], y))
          << "rank " << r << " op " << i << " " << OpName(x);
    }
  }
}

// The cases Update is tested on: every hybrid, and EP with zipf routing.
std::vector<std::pair<std::string, Experiment>> UpdateCases() {
  std::vector<HybridCase> cases = HybridCases();
  cases.push_back({"ep4 zipf routing", testing::TinyMoe(false), {.ep = 4}, 8});
  std::vector<std::pair<std::string, Experiment>> out;
  for (const HybridCase& c : cases) {
    Experiment e = MakeExperiment(c.model, c.sizes, c.batch, 48);
    e.parallel.sp_variant = c.variant;
    e.parallel.micro_batches = c.micro;
    if (std::string(c.name) == "ep4 zipf routing") {
      e.workload.routing.kind = RoutingKind::kZipf;
      e.workload.routing.zipf_s = 1.2;
    }
    out.emplace_back(c.name, e);
  }
  return out;
}

TEST(ProgramBuilderTest, UpdatedDecodeProgramsEqualFreshOnes) {
  for (const auto& [name, e] : UpdateCases()) {
    SCOPED_TRACE(name);
    auto builder = BuilderOf(e);
    ASSERT_TRUE(builder.ok()) << builder.status().ToString();
    auto program = builder->Build(Phase::kDecode, 0);
    ASSERT_TRUE(program.ok());
    // Forward, skipping, back, and the same step again (sp 3 and 4 move the KV append).
    for (int64_t step : {1, 2, 3, 7, 5, 5, 0, 126}) {
      SCOPED_TRACE("step " + std::to_string(step));
      ASSERT_TRUE(builder->Update(*program, step).ok());
      auto fresh = builder->Build(Phase::kDecode, step);
      ASSERT_TRUE(fresh.ok());
      ExpectSamePrograms(*program, *fresh);
    }
  }
}

// Update lists exactly the ops whose cost fields differ from the step before
// (compared field by field against a copy), and every op of a rebuilt rank.
TEST(ProgramBuilderTest, UpdateListsTheOpsItChanged) {
  for (const auto& [name, e] : UpdateCases()) {
    SCOPED_TRACE(name);
    auto builder = BuilderOf(e);
    ASSERT_TRUE(builder.ok()) << builder.status().ToString();
    auto program = builder->Build(Phase::kDecode, 0);
    ASSERT_TRUE(program.ok());
    size_t listed = 0;
    for (int64_t step : {1, 2, 7, 7, 0}) {
      SCOPED_TRACE("step " + std::to_string(step));
      const PhaseProgram before = *program;
      UpdatedOps updated;
      bool same_ops = false;
      ASSERT_TRUE(builder->Update(*program, step, &same_ops, &updated).ok());
      ASSERT_EQ(updated.by_rank.size(), program->ranks.size());
      for (size_t r = 0; r < program->ranks.size(); ++r) {
        const auto& now = program->ranks[r].ops;
        const auto& was = before.ranks[r].ops;
        std::vector<int32_t> want;
        for (size_t i = 0; i < now.size(); ++i) {
          auto costs = [](const Op& o) {
            return std::make_tuple(o.flops, o.bytes_read, o.bytes_written, o.weight_bytes, o.m, o.n,
                                   o.k, o.replication, o.expert_tokens, o.peer, o.bytes,
                                   o.peer_sends);
          };
          const bool rebuilt = now.size() != was.size() || now[i].role != was[i].role;
          if (rebuilt || costs(now[i]) != costs(was[i])) want.push_back(static_cast<int32_t>(i));
        }
        if (!same_ops && want.size() != now.size() && updated.by_rank[r].size() == now.size()) {
          continue;  // a rebuilt rank lists every op, changed or not
        }
        EXPECT_EQ(updated.by_rank[r], want) << "rank " << r;
        listed += updated.by_rank[r].size();
      }
    }
    EXPECT_GT(listed, 0u);  // the context grows: attention costs change
  }
}

TEST(ProgramBuilderTest, UpdateRejectsOtherPrograms) {
  auto builder = BuilderOf(MakeExperiment(testing::TinyDense(), Sizes{.tp = 2}, 2, 16));
  ASSERT_TRUE(builder.ok());
  auto prefill = builder->Build(Phase::kPrefill, 0);
  ASSERT_TRUE(prefill.ok());
  EXPECT_FALSE(builder->Update(*prefill, 1).ok());  // not a decode program
  auto decode = builder->Build(Phase::kDecode, 0);
  ASSERT_TRUE(decode.ok());
  EXPECT_FALSE(builder->Update(*decode, -1).ok());
  Built other =
      BuildOrDie(MakeExperiment(testing::TinyDense(), Sizes{.tp = 4}, 2, 16), Phase::kDecode, 0);
  EXPECT_FALSE(builder->Update(other.program, 1).ok());  // another plan's ranks
}

TEST(ProgramBuilderTest, RejectsBadPhases) {
  Experiment e = MakeExperiment(testing::TinyDense(), {}, 1, 16);
  auto placement = Placement::Create(e);
  ASSERT_TRUE(placement.ok());
  auto builder = ProgramBuilder::Create(e, *placement);
  ASSERT_TRUE(builder.ok());
  EXPECT_FALSE(builder->Build(Phase::kPrefill, 1).ok());
  EXPECT_FALSE(builder->Build(Phase::kDecode, -1).ok());
  Experiment other = MakeExperiment(testing::TinyDense(), Sizes{.tp = 2}, 1, 16);
  EXPECT_FALSE(ProgramBuilder::Create(other, *placement).ok());
}

// Ops hold ranks (peer) and group ids as 32-bit integers: a placement whose
// ranks or groups do not fit is refused with the experiment named, not
// truncated; the largest that fits passes.
TEST(ProgramBuilderTest, CheckOpRangesRefusesRanksBeyond32Bits) {
  const int64_t max = int64_t{2147483647};
  EXPECT_TRUE(CheckOpRanges("big", max, max).ok());
  for (auto [world, groups] : {std::pair<int64_t, int64_t>{max + 1, 1}, {8, max + 1}}) {
    const Status s = CheckOpRanges("big", world, groups);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("experiment 'big'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("32-bit"), std::string::npos) << s.message();
  }
}

// EPLB end to end: 8 experts with fixed loads ∝ 1/i (zipf s = 1) on EP4, as in
// expert_balancer_test's hand-computed case. The ranks' expert tokens follow
// the balancer's rank loads: max ÷ mean 2.2076 with the contiguous placement,
// 1.0425 with 4 redundant experts (12 slots, 3 per rank).
TEST(ProgramBuilderTest, RedundantExpertsBalanceTheRanksLoad) {
  ModelSpec model = testing::TinyMoe(false);
  model.moe.num_routed_experts = 8;
  model.moe.n_group = 1, model.moe.topk_group = 1;
  const int64_t ep = 4, batch = 4, seq = 1024, topk = 2;
  Experiment e = MakeExperiment(model, Sizes{.ep = ep}, batch, seq);
  e.workload.routing.kind = RoutingKind::kFixed;
  for (int i = 1; i <= 8; ++i) e.workload.routing.fixed_weights.push_back(1.0 / i);
  auto rank_tokens = [&](const Built& b) {
    std::vector<double> tokens;
    for (const RankProgram& rp : b.program.ranks) {
      const auto gemm = Select(rp, Kind(OpKind::kExpertGemm, 1));
      tokens.push_back(static_cast<double>(std::accumulate(
          gemm[0]->expert_tokens.begin(), gemm[0]->expert_tokens.end(), int64_t{0})));
    }
    return tokens;
  };
  const Built before = BuildOrDie(e, Phase::kPrefill);
  EXPECT_NEAR(LoadImbalance(rank_tokens(before)), 2.2076, 0.01);
  e.parallel.redundant_experts = 4;
  const Built after = BuildOrDie(e, Phase::kPrefill);
  ExpectValid(after);
  const std::vector<double> tokens = rank_tokens(after);
  EXPECT_NEAR(LoadImbalance(tokens), 1.0425, 0.01);
  // Each rank: assignments × its share (0.708333 / H8 for rank 0, …), within
  // one token per (owner, slot) of rounding.
  const double h8 = 761.0 / 280.0, assignments = batch * seq * topk;
  const double share[] = {1.0 / 3 + 1.0 / 4 + 1.0 / 8, 0.25 + 0.25 + 0.2, 0.25 + 0.25 + 1.0 / 6,
                          0.25 + 0.25 + 1.0 / 7};
  double sum = 0;
  for (int64_t r = 0; r < ep; ++r) {
    EXPECT_NEAR(tokens[r], assignments * share[r] / h8, 2.0 * ep * 3) << "rank " << r;
    sum += tokens[r];
  }
  EXPECT_EQ(sum, assignments);  // conserved over the replicas
  // Rank 0 holds experts 2, 3 and 7; its dispatch carries its own tokens' bytes.
  auto placement = Placement::Create(e);
  ASSERT_TRUE(placement.ok());
  auto builder = ProgramBuilder::Create(e, *placement);
  ASSERT_TRUE(builder.ok());
  ASSERT_NE(builder->replicas(1), nullptr);
  EXPECT_EQ(builder->replicas(0), &builder->all_replicas()[0]);  // dense: an empty entry
  const std::vector<int32_t>& slots = builder->replicas(1)->slot_expert;
  EXPECT_EQ(std::vector<int32_t>(slots.begin(), slots.begin() + 3),
            (std::vector<int32_t>{2, 3, 7}));
  const auto dispatch = Select(after.program.ranks[0], [](const Op& op) {
    return op.role == OpRole::kDispatch && op.layer == 1;
  });
  ASSERT_EQ(dispatch.size(), 1u);
  EXPECT_EQ(dispatch[0]->bytes, seq * topk * 64 * 2);
}

TEST(ProgramBuilderTest, RedundantExpertsLetEpNotDivideTheRoutedExperts) {
  ModelSpec model = testing::TinyMoe(false);  // 16 routed experts
  Experiment e = MakeExperiment(model, Sizes{.ep = 6}, 6, 16);
  EXPECT_FALSE(Placement::Create(e).ok());  // 6 does not divide 16
  e.parallel.redundant_experts = 2;         // 18 slots, 3 per rank
  const Built b = BuildOrDie(e, Phase::kDecode, 0);
  ExpectValid(b);
  for (const RankProgram& rp : b.program.ranks) {
    EXPECT_EQ(Select(rp, Kind(OpKind::kExpertGemm, 1))[0]->expert_tokens.size(), 3u);
  }
}

// MTP speculative decoding, k = 2 drafts at acceptance 0.5 each: 1.75 tokens
// per step. By hand for TinyMoe (MLA, 8 heads, latent 16 + rope 4, v 16,
// hidden 64, 3 layers): the verify pass runs 3 tokens per request, its decode
// attention 3·context + 6 query-key pairs per request (each over the latent:
// 2·(20 + 16) FLOPs per head and pair); then two MTP passes of one token per
// request through layer 3 (the MTP block, MoE) with eh_proj 2·64 → 64.
TEST(ProgramBuilderTest, MtpVerifiesKPlusOneTokensAndDraftsKTimes) {
  ModelSpec model = testing::TinyMoe(true);
  model.num_mtp_layers = 1;
  const int64_t batch = 4, seq = 32, h = 64;
  Experiment e = MakeExperiment(model, {}, batch, seq);
  e.speculative.method = SpeculativeMethod::kMtp;
  e.speculative.draft_tokens = 2;
  e.speculative.acceptance = {0.5, 0.5};
  for (int64_t step : {0, 4}) {
    const Built b = BuildOrDie(e, Phase::kDecode, step);
    ExpectValid(b);
    const int64_t context = seq + (step == 4 ? 7 : 0);  // ⌊4 × 1.75⌋ = 7
    EXPECT_EQ(b.program.context_len, context);
    EXPECT_EQ(b.program.new_tokens, 3);
    const RankProgram& rp = b.program.ranks[0];
    const auto attn = Select(rp, Kind(OpKind::kAttentionDecode, 0));
    ASSERT_EQ(attn.size(), 1u);
    EXPECT_EQ(attn[0]->flops, 2 * batch * (3 * context + 6) * 8 * (20 + 16));
    EXPECT_EQ(attn[0]->m, batch * 3);
    for (int32_t layer : {3, 4}) {  // two draft passes through the MTP block
      const auto mtp_attn = Select(rp, Kind(OpKind::kAttentionDecode, layer));
      ASSERT_EQ(mtp_attn.size(), 1u);
      EXPECT_EQ(mtp_attn[0]->flops, 2 * batch * (context + 1) * 8 * (20 + 16));
      EXPECT_EQ(Select(rp, Kind(OpKind::kExpertGemm, layer)).size(), 2u);  // an MoE block
    }
    const auto proj = Select(rp, [](const Op& op) { return op.role == OpRole::kMtpProj; });
    ASSERT_EQ(proj.size(), 2u);
    EXPECT_EQ(proj[0]->flops, 2 * batch * 2 * h * h);
    EXPECT_EQ(proj[0]->label(), "mtp_eh");
    std::vector<int64_t> heads;
    for (const Op* op : Select(rp, [](const Op& op) { return op.role == OpRole::kLmHead; })) {
      heads.push_back(op->m);
    }
    EXPECT_EQ(heads, (std::vector<int64_t>{batch * 3, batch, batch}));
  }
  e.parallel.sp = 2;
  auto placement = Placement::Create(e);
  ASSERT_TRUE(placement.ok());
  EXPECT_FALSE(ProgramBuilder::Create(e, *placement).ok());  // not with sp
}

// A small dense draft of TinyDense's vocabulary: 1 layer, hidden 32, 4 heads
// over 2 KV heads of 8, FFN 48, no biases.
ModelSpec TinyDraft() {
  ModelSpec d = testing::TinyDense();
  d.name = "tiny-draft";
  d.num_layers = 1;
  d.hidden_size = 32;
  d.num_heads = 4;
  d.num_kv_heads = 2;
  d.qkv_bias = d.o_bias = d.mlp_bias = false;
  d.intermediate_size = 48;
  return d;
}

Experiment WithDraft(Experiment e, int64_t draft_tp) {
  e.speculative.method = SpeculativeMethod::kDraft;
  e.speculative.draft_tokens = 2;
  e.speculative.acceptance = {0.5, 0.5};
  e.speculative.draft_model = TinyDraft();
  e.speculative.draft_tp = draft_tp;
  return e;
}

// Σ of one op field over a rank's ops that `pred` selects.
int64_t SumOf(const RankProgram& rp, const OpPred& pred, int64_t Op::*field) {
  int64_t sum = 0;
  for (const Op& op : rp.ops) sum += pred(op) ? op.*field : 0;
  return sum;
}

// Draft-target speculative decoding, k = 2 at acceptance 0.5 (1.75 tokens per
// step). Each draft pass d is a decode step of the draft model alone over
// context + d tokens; by hand per token: qkv 2·32·(4 + 2·2)·8 = 4,096, o
// 2·32·32 = 2,048, gate+up 2·32·96 = 6,144, down 2·48·32 = 3,072, head
// 2·32·1003 = 64,192 FLOPs; attention 2·(context + d + 1)·4 heads·(8 + 8)
// per request. The verify pass is MTP's: the target's ops over k + 1 tokens.
TEST(ProgramBuilderTest, DraftModelRunsKPassesThenTheVerify) {
  const int64_t batch = 4, seq = 32;
  const Experiment e = WithDraft(MakeExperiment(testing::TinyDense(), {}, batch, seq), 1);
  Experiment mtp = e;  // the verify pass, as MTP builds it
  mtp.model.num_mtp_layers = 1;
  mtp.speculative.method = SpeculativeMethod::kMtp;
  for (int64_t step : {0, 4}) {
    SCOPED_TRACE(step);
    const Built b = BuildOrDie(e, Phase::kDecode, step);
    ExpectValid(b);
    const int64_t context = seq + (step == 4 ? 7 : 0);  // ⌊4 × 1.75⌋ = 7
    EXPECT_EQ(b.program.context_len, context);
    EXPECT_EQ(b.program.new_tokens, 3);
    const RankProgram& rp = b.program.ranks[0];
    int64_t drafts = 0;
    for (int64_t d = 0; d < 2; ++d) {
      const auto pass = [d](const Op& op) { return op.draft == d + 1; };
      const auto gemm = [d](const Op& op) {
        return op.draft == d + 1 && (op.kind == OpKind::kQkvProj || op.kind == OpKind::kOutProj ||
                                     op.kind == OpKind::kFfnUp || op.kind == OpKind::kFfnDown ||
                                     op.kind == OpKind::kLmHead);
      };
      EXPECT_EQ(SumOf(rp, gemm, &Op::flops), batch * (4096 + 2048 + 6144 + 3072 + 64192));
      const auto attn = Select(rp, [d](const Op& op) {
        return op.draft == d + 1 && op.kind == OpKind::kAttentionDecode;
      });
      ASSERT_EQ(attn.size(), 1u);
      EXPECT_EQ(attn[0]->flops, 2 * batch * (context + d + 1) * 4 * 16);
      EXPECT_EQ(OpName(*attn[0]), "draft" + std::to_string(d) + ".L0.attention_decode");
      // The whole pass is the draft model's own decode step over context + d.
      Experiment alone = MakeExperiment(TinyDraft(), {}, batch, context + d);
      const OpTotals own = Totals(BuildOrDie(alone, Phase::kDecode, 0).program.ranks[0]);
      EXPECT_EQ(SumOf(rp, pass, &Op::flops), own.flops);
      EXPECT_EQ(SumOf(rp, pass, &Op::bytes_read), own.bytes_read);
      EXPECT_EQ(SumOf(rp, pass, &Op::bytes_written), own.bytes_written);
      EXPECT_EQ(SumOf(rp, pass, &Op::weight_bytes), own.weight_bytes);
      drafts += own.flops;
    }
    // The verify: the target's layers over 3 tokens per request.
    const auto target = [](const Op& op) { return op.draft == 0; };
    const Built mtp_built = BuildOrDie(mtp, Phase::kDecode, step);
    const RankProgram& verify = mtp_built.program.ranks[0];
    const auto main_model = [](const Op& op) { return op.layer < 4; };
    EXPECT_EQ(SumOf(rp, target, &Op::flops), SumOf(verify, main_model, &Op::flops));
    EXPECT_EQ(SumOf(rp, target, &Op::bytes_read), SumOf(verify, main_model, &Op::bytes_read));
    const auto attn = Select(rp, Kind(OpKind::kAttentionDecode, 0));
    ASSERT_EQ(attn.size(), 3u);  // the draft's layer 0 in each pass, then the target's
    EXPECT_EQ(attn[2]->draft, 0);
    EXPECT_EQ(attn[2]->flops, 2 * batch * (3 * context + 6) * 8 * 16);
    EXPECT_EQ(Totals(rp).flops, drafts + SumOf(verify, main_model, &Op::flops));
    EXPECT_EQ(rp.ops.front().draft, 1);  // the drafts come first
  }
}

// Prefill also prefills the draft (its KV cache of the prompts); Update
// patches a draft program to another step as Build builds it.
TEST(ProgramBuilderTest, DraftModelPrefillsAndUpdates) {
  const Experiment e = WithDraft(MakeExperiment(testing::TinyDense(), {}, 4, 32), 1);
  const RankProgram prefill = BuildOrDie(e, Phase::kPrefill).program.ranks[0];
  Experiment plain = e;
  plain.speculative = {};
  const OpTotals target = Totals(BuildOrDie(plain, Phase::kPrefill).program.ranks[0]);
  const OpTotals draft =
      Totals(BuildOrDie(MakeExperiment(TinyDraft(), {}, 4, 32), Phase::kPrefill).program.ranks[0]);
  EXPECT_EQ(Totals(prefill).flops, target.flops + draft.flops);
  EXPECT_EQ(SumOf(
                prefill, [](const Op& op) { return op.draft == 1; }, &Op::flops),
            draft.flops);

  auto placement = Placement::Create(e);
  ASSERT_TRUE(placement.ok());
  auto builder = ProgramBuilder::Create(e, *placement);
  ASSERT_TRUE(builder.ok());
  auto program = builder->Build(Phase::kDecode, 0);
  ASSERT_TRUE(program.ok());
  bool same = false;
  ASSERT_TRUE(builder->Update(*program, 5, &same).ok());
  EXPECT_TRUE(same);
  const PhaseProgram built = BuildOrDie(e, Phase::kDecode, 5).program;
  ASSERT_EQ(program->ranks[0].ops.size(), built.ranks[0].ops.size());
  for (size_t i = 0; i < built.ranks[0].ops.size(); ++i) {
    EXPECT_EQ(program->ranks[0].ops[i].flops, built.ranks[0].ops[i].flops) << i;
    EXPECT_EQ(program->ranks[0].ops[i].bytes_read, built.ranks[0].ops[i].bytes_read) << i;
  }
}

// Under tp 2: draft_tensor_parallel 1 runs the whole draft on tp rank 0 and
// broadcasts the k drafted ids per request over tp; draft_tensor_parallel 2
// splits it (half the heads per rank, its own all-reduces).
TEST(ProgramBuilderTest, DraftTensorParallelOneOrTheTargets) {
  const int64_t batch = 4;
  const Experiment small = WithDraft(MakeExperiment(testing::TinyDense(), {.tp = 2}, batch, 32), 1);
  const Built one = BuildOrDie(small, Phase::kDecode, 2);
  ExpectValid(one);
  const auto drafted = [](const Op& op) { return op.draft > 0 && !op.is_comm(); };
  const auto qkv = Select(one.program.ranks[0], [](const Op& op) {
    return op.draft == 1 && op.kind == OpKind::kQkvProj;
  });
  ASSERT_EQ(qkv.size(), 1u);
  EXPECT_EQ(qkv[0]->n, (4 + 2 * 2) * 8);  // every head: the draft is not split
  EXPECT_TRUE(Select(one.program.ranks[1], drafted).empty());
  for (const RankProgram& rp : one.program.ranks) {
    const auto ids =
        Select(rp, [](const Op& op) { return op.collective == Collective::kBroadcast; });
    ASSERT_EQ(ids.size(), 1u);
    EXPECT_EQ(ids[0]->bytes, batch * 2 * 4);
    EXPECT_EQ(ids[0]->peer, 0);  // tp rank 0 is the root
    EXPECT_EQ(OpName(*ids[0]), "draft1.broadcast.tp.token_ids");
  }
  const Built two = BuildOrDie(WithDraft(small, 2), Phase::kDecode, 2);
  ExpectValid(two);
  for (const RankProgram& rp : two.program.ranks) {
    const auto q =
        Select(rp, [](const Op& op) { return op.draft == 1 && op.kind == OpKind::kQkvProj; });
    ASSERT_EQ(q.size(), 1u);
    EXPECT_EQ(q[0]->n, (2 + 2 * 1) * 8);
    EXPECT_EQ(
        Select(rp,
               [](const Op& op) { return op.draft == 2 && op.label() == "attn" && op.is_comm(); })
            .size(),
        1u);  // the draft's own all-reduce
    EXPECT_TRUE(
        Select(rp, [](const Op& op) { return op.collective == Collective::kBroadcast; }).empty());
  }
  // Both split the same unique work.
  EXPECT_DOUBLE_EQ(UniqueFlops(one.program), UniqueFlops(two.program));
  // Not with pipeline stages, nor a draft of another vocabulary.
  Experiment staged = WithDraft(MakeExperiment(testing::TinyDense(), {.pp = 2}, batch, 32), 1);
  auto placement = Placement::Create(staged);
  ASSERT_TRUE(placement.ok());
  EXPECT_FALSE(ProgramBuilder::Create(staged, *placement).ok());
  Experiment other = small;
  other.speculative.draft_model.vocab_size = 1000;
  placement = Placement::Create(other);
  ASSERT_TRUE(placement.ok());
  EXPECT_FALSE(ProgramBuilder::Create(other, *placement).ok());
}

// Two-batch overlap: the replica's requests in two micro-batches whose
// stages alternate on the compute stream as SGLang's operations strategies
// for DeepSeek run them. Prefill (delta 0): [attention, router, dispatch]
// [experts, combine], the shared experts and output (unpermute) in the next
// stage, so one micro-batch's combine runs under the other's experts. Decode
// (delta 2, five stages): [attention up to its kernel] [kernel, router]
// [dispatch, shared] [experts, combine] [the combine's receive].
TEST(ProgramBuilderTest, TwoBatchOverlapRunsThePublishedStages) {
  Experiment e = MakeExperiment(testing::TinyMoe(true), Sizes{.ep = 2}, 8, 16);
  e.two_batch_overlap = true;
  e.communication.decode_all_to_all = AllToAllKind::kLowLatency;  // DeepEP's, as engines decode
  using R = OpRole;
  for (Phase phase : {Phase::kPrefill, Phase::kDecode}) {
    SCOPED_TRACE(phase == Phase::kPrefill ? "prefill" : "decode");
    const Built b = BuildOrDie(e, phase);
    ExpectValid(b);
    EXPECT_EQ(b.program.micro_batches, 2);
    const RankProgram& rp = b.program.ranks[0];
    const R attention = phase == Phase::kPrefill ? R::kAttention : R::kAttentionDecode;
    // Layers 1 and 2 are MoE; the first ops of each kind, in program order.
    std::vector<std::tuple<R, int32_t, int32_t>> order;
    for (const Op& op : rp.ops) {
      if (op.layer < 1) continue;
      for (R r : {R::kInputNorm, attention, R::kRouter, R::kDispatch, R::kSharedGateUp,
                  R::kExpertGateUp, R::kCombine, R::kUnpermute}) {
        if (op.role == r) order.emplace_back(r, op.micro_batch, op.layer);
      }
    }
    using T = std::tuple<R, int32_t, int32_t>;
    std::vector<T> want;
    if (phase == Phase::kPrefill) {
      want = {T{R::kInputNorm, 0, 1}, T{attention, 0, 1}, T{R::kRouter, 0, 1},
              T{R::kDispatch, 0, 1}, T{R::kInputNorm, 1, 1}, T{attention, 1, 1},
              T{R::kRouter, 1, 1}, T{R::kDispatch, 1, 1}, T{R::kExpertGateUp, 0, 1},
              T{R::kCombine, 0, 1}, T{R::kExpertGateUp, 1, 1}, T{R::kCombine, 1, 1},
              // mb 0's combine runs under mb 1's experts, then its shared experts.
              T{R::kSharedGateUp, 0, 1}, T{R::kUnpermute, 0, 1}, T{R::kInputNorm, 0, 2}};
    } else {
      want = {T{R::kInputNorm, 0, 1},    T{attention, 0, 1},        T{R::kRouter, 0, 1},
              T{R::kDispatch, 0, 1},     T{R::kSharedGateUp, 0, 1}, T{R::kInputNorm, 1, 1},
              T{R::kExpertGateUp, 0, 1}, T{R::kCombine, 0, 1},      T{attention, 1, 1},
              T{R::kRouter, 1, 1},       T{R::kDispatch, 1, 1},     T{R::kSharedGateUp, 1, 1},
              T{R::kUnpermute, 0, 1},    T{R::kInputNorm, 0, 2},    T{R::kExpertGateUp, 1, 1}};
    }
    ASSERT_GE(order.size(), want.size());
    EXPECT_EQ(std::vector<T>(order.begin(), order.begin() + static_cast<long>(want.size())), want);
    // Each expert GEMM waits for its own micro-batch's dispatch, each
    // unpermute for its combine.
    auto deps_of = [&](const Op& op) {
      return std::vector<int32_t>(rp.deps.begin() + op.deps_begin,
                                  rp.deps.begin() + op.deps_begin + op.deps_count);
    };
    auto find = [&](R role, int32_t mb, int32_t layer) -> const Op& {
      for (const Op& op : rp.ops) {
        if (op.role == role && op.micro_batch == mb && op.layer == layer) return op;
      }
      ADD_FAILURE() << "no op";
      return rp.ops[0];
    };
    for (int32_t mb : {0, 1}) {
      const auto up = deps_of(find(R::kExpertGateUp, mb, 1));
      EXPECT_NE(std::find(up.begin(), up.end(), find(R::kDispatch, mb, 1).id), up.end());
      const auto un = deps_of(find(R::kUnpermute, mb, 1));
      EXPECT_NE(std::find(un.begin(), un.end(), find(R::kCombine, mb, 1).id), un.end());
    }
    // Decode: DeepEP low-latency's receive holds the compute stream, so the
    // first compute op after mb 0's receive stage (mb 1's shared experts)
    // waits for mb 0's combine; prefill's normal kernels only make the
    // consumer (the unpermute) wait.
    const auto shared1 = deps_of(find(R::kSharedGateUp, 1, 1));
    const int32_t combine0 = find(R::kCombine, 0, 1).id;
    EXPECT_EQ(std::find(shared1.begin(), shared1.end(), combine0) != shared1.end(),
              phase == Phase::kDecode);
    // Each micro-batch has half the requests: its router sees 2 of the rank's 4.
    const auto routers = Select(rp, Kind(OpKind::kRouter, 1));
    const int64_t per_request = phase == Phase::kPrefill ? 16 : 1;
    EXPECT_EQ(routers[0]->m, 2 * per_request);
    EXPECT_EQ(routers[1]->m, 2 * per_request);
  }
}

}  // namespace
}  // namespace shardscope
