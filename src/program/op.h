// Op: one step of a rank's Program — a compute kernel or a communication call —
// with its exact cost (FLOPs, bytes read and written) and, for communication,
// its collective, group, dimension and per-peer bytes. Plain value type.
#ifndef SHARDSCOPE_PROGRAM_OP_H_
#define SHARDSCOPE_PROGRAM_OP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/experiment.h"
#include "core/collective.h"
#include "core/phase.h"

namespace shardscope {

enum class OpKind : uint8_t {
  // Compute.
  kEmbedding,        // token embedding lookup (vocab-parallel under TP)
  kNorm,             // RMSNorm / LayerNorm
  kQkvProj,          // fused q/k/v projection (GQA)
  kQProj,            // q alone: MLA q_a / q_b / direct q; GQA when KV heads replicate
  kKvProj,           // MLA kv_a (latent + rope key); GQA k/v when KV heads replicate
  kKvUpProj,         // MLA kv_b: prefill latent → per-head k_nope, v; decode W_UK / W_UV
  kRope,             // rotary embedding of q and k (labels q / k when split)
  kKvAppend,         // write new K/V (or latent) into the cache
  kAttention,        // causal prefill attention (flash: output + log-sum-exp)
  kAttentionDecode,  // one query token per request over the KV cache
  kAttentionMerge,   // log-sum-exp merge of partial attention (ring attention)
  kOutProj,          // attention output projection
  kResidualAdd,
  kRouter,        // MoE gate: scores, top-k
  kPermute,       // group tokens by destination expert
  kExpertGemm,    // routed experts' FFN on this rank
  kSharedExpert,  // shared experts' FFN
  kUnpermute,     // scatter expert outputs back and weight them
  kFfnUp,         // dense FFN gate+up (or up) projection
  kActivation,    // SwiGLU / GELU
  kFfnDown,       // dense FFN down projection
  kLmHead,        // final projection to the vocabulary (vocab-parallel under TP)
  kSampling,      // greedy sampling: argmax over the logits (under TP: local, select)
  kQuantize,      // cast a GEMM's input to its quantised dtype with its scales (precision roles)
  // Communication.
  kComm,
};

// What an op does beyond its kind: the typed contract between the Program and
// the executors, which switch over it (no default) so the compiler names a role
// an executor forgot. RoleLabel gives the short text op names carry.
enum class OpRole : uint8_t {
  kNone,  // an op built by hand (tests); executors reject it
  // Compute, grouped by kind.
  kEmbedding,
  kInputNorm,          // norm "input"
  kPostAttentionNorm,  // norm "post_attention"
  kQaNorm,             // norm "q_a" (MLA)
  kKvANorm,            // norm "kv_a" (MLA)
  kQNorm,              // norm "q": per query head (qk_norm)
  kKNorm,              // norm "k": per key head (qk_norm)
  kFinalNorm,          // norm "final": last token of each request, before the head
  kQkvProj,
  kQProj,    // q_proj "q": GQA q columns (replicated KV heads) or MLA direct q
  kQaProj,   // q_proj "q_a" (MLA)
  kQbProj,   // q_proj "q_b" (MLA)
  kKvProj,   // kv_proj "kv": GQA k/v columns (replicated KV heads)
  kKvAProj,  // kv_proj "kv_a" (MLA latent + rope key)
  kRope,     // rope of q and k together
  kRopeQ,    // rope "q"
  kRopeK,    // rope "k"
  kKvAppend,
  kKvUpProj,  // kv_up_proj "kv_b": latent → per-head k_nope, v
  kAbsorbUk,  // kv_up_proj "uk": W_UK absorbed into the decode query
  kAbsorbUv,  // kv_up_proj "uv": W_UV applied to the latent output
  kAttention,
  kAttentionDecode,
  kAttentionMerge,
  kOutProj,
  kResidualAttn,  // residual_add "attn"
  kResidualFfn,   // residual_add "ffn"
  kRouter,
  kPermute,
  kExpertGateUp,  // expert_gemm "gate_up"
  kExpertDown,    // expert_gemm "down"
  kSharedGateUp,  // shared_expert "gate_up"
  kSharedDown,    // shared_expert "down"
  kUnpermute,
  kFfnUp,
  kFfnActivation,     // activation "ffn"
  kSharedActivation,  // activation "shared"
  kExpertActivation,  // activation "expert"
  kFfnDown,
  kLmHead,
  kSample,        // sampling: argmax over the whole vocabulary
  kSampleLocal,   // sampling "local": argmax of this TP shard
  kSampleSelect,  // sampling "select": the best of the gathered shard maxima
  kMtpNorm,  // norm "mtp": an MTP module's enorm and hnorm (of the embedding and the hidden state)
  kMtpProj,  // ffn_up "mtp_eh": an MTP module's projection of [norm(embedding); norm(hidden)]
  // Quantisation of a GEMM input (config/precision.h: gemm_inputs ≠ activations).
  kQuantAttn,        // quantize "attn": the attention projections' input
  kQuantQb,          // quantize "q_b": MLA's q_b input (the normed q_a output)
  kQuantKvB,         // quantize "kv_b": MLA's prefill latent before its up-projection
  kQuantOut,         // quantize "out": the attention output before o_proj
  kQuantFfn,         // quantize "ffn": the FFN's input (dense up; shared and routed experts)
  kQuantDown,        // quantize "down": the dense FFN's activation output
  kQuantSharedDown,  // quantize "shared_down"
  kQuantExpertDown,  // quantize "expert_down"
  // Communication, by what moves.
  kEmbeddingReduce,  // TP all-reduce "embedding"
  kAttnReduce,       // TP all-reduce "attn"
  kFfnReduce,        // TP all-reduce "ffn"
  kArgMaxGather,     // TP all-gather "sampling" of (max, index) pairs
  kAttnGather,       // SP all-gather "attn" of decode partials (out + lse)
  kTokenIds,         // SP broadcast / PP send-recv "token_ids"
  kActivations,      // PP send / recv "activations"
  kRingKv,           // SP ring send / recv "kv"
  kDispatch,         // EP all-to-all "dispatch"
  kCombine,          // EP all-to-all "combine"
};

// The op-name text of a role ("input", "gate_up"); empty where the kind alone is clear.
std::string_view RoleLabel(OpRole role);
// The kind every op of this role has (kComm for communication roles).
OpKind RoleKind(OpRole role);

// Streams of a rank: ops on one stream run in order; different streams may overlap.
enum class Stream : int8_t { kCompute = 0, kCommTp, kCommSp, kCommEp, kCommDp, kCommPp };
inline constexpr int kNumStreams = 6;

// One non-zero entry of an all-to-all's row of bytes to each group member:
// position in Group::ranks, bytes.
struct PeerBytes {
  int32_t position = 0;
  int64_t bytes = 0;
  bool operator==(const PeerBytes&) const = default;
};

// Fields are ordered by who reads them: the simulator's engine reads every op
// of a phase on each run, so what it needs (kind, stream, deps, cost, shape,
// the comm fields) comes first. An op is 160 bytes (it was 248 with the dense
// all-to-all rows, 192 with 64-bit group ids, peers and seqs, 176 with its
// deps in a vector of its own): a decode step's
// ops are read from memory on every fresh run, so the bytes per op bound the
// engine (docs/sim.md, "Engine"). Group ids, peers and seqs are 32-bit: a
// world or group count that does not fit is refused by ProgramBuilder::Create
// (CheckOpRanges), and a seq counts a rank's calls, fewer than its ops (ids
// are 32-bit too).
struct Op {
  int32_t id = 0;  // index in RankProgram::ops
  OpKind kind = OpKind::kComm;
  Stream stream = Stream::kCompute;
  // What the op does within its kind (see OpRole); label() is its text.
  OpRole role = OpRole::kNone;
  Collective collective = Collective::kNone;  // communication (kind == kComm)
  // Ops of the same rank that must finish before this one starts, beyond
  // stream order (cross-stream dependencies): RankProgram::deps[deps_begin,
  // deps_begin + deps_count), read with DepsOf — one block per rank, not a
  // heap vector per op that the engine would chase.
  int32_t deps_begin = 0;
  int32_t deps_count = 0;
  // Cost. FLOPs count a multiply-add as 2.
  int64_t flops = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  // Shape for cost models: GEMM m×k · k×n; attention: m = query tokens (all
  // requests), n = key tokens per request, k = heads · qk head dim; elementwise
  // ops: m = tokens, n = elements per token. Zero when not applicable.
  int64_t m = 0, n = 0, k = 0;
  // Routed-expert GEMMs (role kExpertGateUp): tokens each local expert received, in
  // the order of Placement::ExpertsOfEpRank (all experts when ep = 1); with
  // redundant experts, this rank's slots (ProgramBuilder::replicas).
  std::vector<int64_t> expert_tokens;

  // Communication (kind == kComm), with `collective` above.
  Dim dim = Dim::kTp;
  // Speculative decoding with a draft model: 1 + the draft's pass for the
  // draft model's ops (OpName prefixes "draft<pass>."), 0 for the target's.
  uint8_t draft = 0;
  int32_t group_id = -1;  // Placement group; -1 for point-to-point
  int32_t peer = -1;      // send/recv: the other global rank; broadcast: the root
  int32_t seq = 0;        // order of this call within its group (or peer pair)
  int64_t bytes = 0;      // message size as nccl-tests counts it (see docs)
  // All-to-all: the bytes sent to each group member (this rank's own entry
  // included: it moves locally), as its non-zero entries by position in
  // Group::ranks, positions increasing; they sum to `bytes`. A decode step's
  // rows are mostly zeros (≤ 8 of 128 at EP=128), so only these are kept;
  // BytesPerPeer gives the dense row.
  std::vector<PeerBytes> peer_sends;

  int32_t layer = -1;       // model layer, -1 outside layers
  int32_t micro_batch = 0;  // pipeline micro-batch (0 without pipelining)
  int32_t sp_step = -1;     // ring-attention step, -1 otherwise
  // How many ranks compute this same work redundantly (1 = unique work): tp for
  // ops replicated over the TP group, tp/kv_heads for replicated KV heads, sp for
  // decode ops replicated over the SP group, and their products. Sum over ranks of
  // flops / replication = the single-device total.
  int32_t replication = 1;
  // The part of bytes_read that is parameters (weights and biases of this rank's
  // shard the op multiplies by); 0 for ops without weights and for the embedding
  // gather (its rows are counted in bytes_read).
  int64_t weight_bytes = 0;

  bool is_comm() const { return kind == OpKind::kComm; }
  // Tells apart ops of one kind in one layer ("input", "q_a", "gate_up", "attn");
  // empty when the kind alone is clear.
  std::string_view label() const { return RoleLabel(role); }
};

// An all-to-all's dense row: bytes to each of `group_size` members by position
// (zeros but for peer_sends; entries at positions ≥ group_size are dropped).
std::vector<int64_t> BytesPerPeer(const Op& op, size_t group_size);

std::string_view OpKindName(OpKind kind);
std::string_view StreamName(Stream s);
// The comm stream of a parallelism dimension (kCommTp for Dim::kTp, …).
Stream CommStream(Dim d);
// A stable, readable op name: "L3.attention", "L3.norm.input", "L3.attention.s2",
// "allreduce.tp.attn.L3", "send.pp.activations"; a draft model's ops are
// prefixed with their pass ("draft0.L3.attention_decode"). Unique within one rank and
// micro-batch of a phase.
std::string OpName(const Op& op);

}  // namespace shardscope

#endif  // SHARDSCOPE_PROGRAM_OP_H_
