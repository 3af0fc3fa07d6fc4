#include "plan/memory.h"

#include <algorithm>
#include <cmath>

#include "model/params.h"
#include "plan/shard_geometry.h"

namespace shardscope {
namespace {

// Parameters of one layer's attention held by one TP rank. Head-split
// matrices divide by tp; MLA's q_a/kv_a projections (and their norms) and KV
// heads beyond the KV-head count are replicated.
double AttentionParamsOnRank(const ModelSpec& m, const ShardGeometry& geo) {
  const double h = static_cast<double>(m.hidden_size);
  const double heads = static_cast<double>(geo.q_heads());
  if (m.attention == AttentionKind::kGqa) {
    const double hd = static_cast<double>(m.head_dim);
    const double kv = static_cast<double>(geo.kv_heads());
    double p = h * heads * hd + 2 * h * kv * hd + heads * hd * h;
    if (m.qkv_bias) p += heads * hd + 2 * kv * hd;
    if (m.o_bias) p += h;
    return p;
  }
  const MlaSpec& a = m.mla;
  const double qk = static_cast<double>(a.qk_nope_head_dim + a.qk_rope_head_dim);
  double p = 0;
  if (a.q_lora_rank > 0) {
    p += h * a.q_lora_rank + a.q_lora_rank;  // q_a (replicated) + q_a_layernorm
    p += a.q_lora_rank * heads * qk;         // q_b
  } else {
    p += h * heads * qk;
  }
  p += h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank;    // kv_a + kv_a_layernorm
  p += a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim);  // kv_b
  p += heads * a.v_head_dim * h;                                      // o
  // HF DeepSeek: attention_bias adds biases to q_a and kv_a (a direct q_proj has none).
  if (m.qkv_bias) p += a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim;
  if (m.o_bias) p += h;
  return p;
}

// Norm weights of one layer: the two block norms and, with qk_norm, the per-head q
// and k norms (head_dim each, replicated on every TP rank).
double BlockNormParams(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden_size);
  return 2 * h + (m.qk_norm ? 2.0 * static_cast<double>(m.head_dim) : 0.0);
}

// KV-cache values one rank stores per token per layer.
double KvValuesOnRank(const ModelSpec& m, const ShardGeometry& geo) {
  if (m.attention == AttentionKind::kMla) {
    return static_cast<double>(m.mla.kv_lora_rank + m.mla.qk_rope_head_dim);  // not split by tp
  }
  return 2.0 * static_cast<double>(geo.kv_heads()) * m.head_dim;
}

// Communication buffers: one set per communicator of more than one rank.
double CommBuffers(const ParallelSpec& p) {
  int communicators = 0;
  for (Dim d : {Dim::kTp, Dim::kSp, Dim::kEp, Dim::kPp}) {  // dp replicas never talk
    if (p.Size(d) > 1) ++communicators;
  }
  return communicators * kCommBufferPerCommunicator;
}

// Speculative decoding with a separate draft model: its weights and KV cache
// (per request, at the draft's layers and heads) on the rank of tp coordinate
// `c_tp`. The draft is split over draft_tensor_parallel ranks: with 1 < tp,
// tp rank 0 holds all of it and the other ranks none. The engines allocate
// the draft's KV blocks beside the target's (one block table), so a KV pool
// sized from kv_cache holds both. `tokens`: cached tokens per request.
void AddDraftModel(const Experiment& e, const Precision& prec, int64_t c_tp, double tokens,
                   RankMemory* rm) {
  const SpeculativeSpec& spec = e.speculative;
  const int64_t draft_tp = spec.DraftTp(e.parallel.tp);
  if (!spec.draft() || c_tp >= draft_tp) return;
  const ModelSpec& d = spec.draft_model;
  const ShardGeometry geo(d, draft_tp, 1);
  const double dt = static_cast<double>(DTypeSize(prec.activations));
  const double h = static_cast<double>(d.hidden_size);
  const double vocab_shard = static_cast<double>(d.vocab_size) / draft_tp;
  // The embedding, and the head unless tied, at their own dtypes.
  double vocab_params = vocab_shard * h;
  double vocab_extra_bytes = vocab_shard * h * (DTypeSize(prec.embedding) - dt);
  if (!d.tie_embeddings) {
    vocab_params += vocab_shard * h;
    vocab_extra_bytes += vocab_shard * h * (DTypeSize(prec.lm_head) - dt);
  }
  const double layers = static_cast<double>(d.num_layers);
  const double small_params = h + layers * BlockNormParams(d);  // final and block norms
  const double matrices =
      layers * (AttentionParamsOnRank(d, geo) +
                static_cast<double>(DenseFfnParams(d)) / static_cast<double>(draft_tp));
  const double params = vocab_params + small_params + matrices;
  rm->weight_params += params;
  rm->weights += prec.roles ? matrices * prec.WeightBytesPerParam(d.hidden_size) +
                                  (small_params + vocab_params) * dt + vocab_extra_bytes
                            : params * dt + vocab_extra_bytes;
  rm->kv_cache += static_cast<double>(rm->requests) * tokens * layers * KvValuesOnRank(d, geo) *
                  static_cast<double>(DTypeSize(prec.kv_cache));
}

}  // namespace

const RankMemory& MemoryPlan::Peak() const {
  return *std::max_element(
      ranks.begin(), ranks.end(),
      [](const RankMemory& a, const RankMemory& b) { return a.total() < b.total(); });
}

int64_t RequestsOfRank(const Experiment& e, const Placement& pl, int64_t rank) {
  const int64_t replicas = e.parallel.dp * e.parallel.ep;
  const int64_t replica = pl.Coord(rank, Dim::kDp) * e.parallel.ep + pl.Coord(rank, Dim::kEp);
  return SplitCount(e.workload.batch_size, replicas, replica);
}

MemoryPlan PlanMemory(const Experiment& e, const Placement& pl) {
  const ModelSpec& m = e.model;
  const ParallelSpec& p = e.parallel;
  const Workload& w = e.workload;
  // Dtype roles (config/precision.h); without a `precision:` block every role
  // is the workload's dtype (or its KV / vocabulary dtype), as before.
  const Precision prec = PrecisionOf(e);
  const double dt = static_cast<double>(DTypeSize(prec.activations));
  const double kv_dt = static_cast<double>(DTypeSize(prec.kv_cache));
  // Bytes per parameter of the layers' matrices, scales included (per-channel
  // scales counted over hidden_size inputs).
  const double matrix_dt = prec.WeightBytesPerParam(m.hidden_size);
  const double h = static_cast<double>(m.hidden_size);
  const int64_t tp = p.tp;
  const ShardGeometry geo(m, p.tp, p.ep);
  MemoryPlan plan;
  plan.capacity = e.cluster.device.memory_bytes;
  for (int64_t r = 0; r < pl.world_size(); ++r) {
    RankMemory rm;
    rm.rank = r;
    rm.requests = RequestsOfRank(e, pl, r);
    const int64_t stage = pl.Coord(r, Dim::kPp);
    const bool first = stage == 0, last = stage == p.pp - 1;
    // Weights.
    double params = 0;
    // The mean of the ranks' vocabulary shards, not this rank's own
    // (geo.Vocab(c).count): the same as long as tp divides the vocabulary, and it
    // keeps the memory counters of existing traces unchanged when it does not.
    const double vocab_shard = static_cast<double>(m.vocab_size) / tp;
    // Vocabulary matrices at their own dtypes (Workload::lm_head_dtype, …): the
    // bytes they add over `dt`, 0 when they have the model's dtype.
    double vocab_extra_bytes = 0;
    double vocab_params = 0;
    double small_params = 0;  // norms and routers: the activation dtype under roles
    if (first) {
      params += vocab_shard * h;
      vocab_params += vocab_shard * h;
      vocab_extra_bytes += vocab_shard * h * (DTypeSize(prec.embedding) - dt);
    }
    if (last && (!m.tie_embeddings || !first)) {
      params += vocab_shard * h;
      vocab_params += vocab_shard * h;
      vocab_extra_bytes += vocab_shard * h * (DTypeSize(prec.lm_head) - dt);
    }
    if (last) params += h, small_params += h;  // final norm
    // With redundant experts (EPLB) each rank holds (routed + redundant) / ep slots.
    const int64_t local_experts =
        e.parallel.redundant_experts > 0
            ? (m.moe.num_routed_experts + e.parallel.redundant_experts) / e.parallel.ep
            : geo.experts_per_rank();
    for (int64_t layer : pl.LayersOfStage(stage)) {
      params += AttentionParamsOnRank(m, geo) + BlockNormParams(m);  // + the layer's norms
      small_params += BlockNormParams(m);
      if (m.IsMoeLayer(layer)) {
        params +=
            static_cast<double>(local_experts + m.moe.num_shared_experts) * ExpertParams(m) / tp +
            RouterParamsPerLayer(m);
        small_params += RouterParamsPerLayer(m);
      } else {
        params += static_cast<double>(DenseFfnParams(m)) / tp;
      }
    }
    // Speculative decoding with MTP: the last stage holds the MTP modules
    // (their block, enorm, hnorm, eh_proj and head norm; embedding and head
    // are shared with the main model, as the engines run them).
    const int64_t mtp = last && e.speculative.enabled() ? m.num_mtp_layers : 0;
    if (mtp > 0) {
      const double block =
          AttentionParamsOnRank(m, geo) + 2 * h +
          (m.is_moe() ? static_cast<double>(local_experts + m.moe.num_shared_experts) *
                                ExpertParams(m) / tp +
                            RouterParamsPerLayer(m)
                      : static_cast<double>(DenseFfnParams(m)) / tp);
      params += static_cast<double>(mtp) * (block + 2 * h * h + 3 * h);
    }
    rm.weight_params = params;
    rm.weights = params * dt + vocab_extra_bytes;
    if (prec.roles) {
      rm.weights = (params - vocab_params - small_params) * matrix_dt + small_params * dt +
                   vocab_params * dt + vocab_extra_bytes;
    }
    // KV cache when the last token is generated: the prompt plus every generated
    // token but the last (which is sampled, never fed back), split over sp ranks.
    const double tokens =
        static_cast<double>(w.sequence_length + std::max<int64_t>(w.tokens_to_generate - 1, 0)) /
        p.sp;
    const double stage_layers = static_cast<double>(pl.LayersOfStage(stage).size() + mtp);
    rm.kv_cache = rm.requests * tokens * stage_layers * KvValuesOnRank(m, geo) * kv_dt;
    AddDraftModel(e, prec, pl.Coord(r, Dim::kTp), tokens, &rm);
    // Activation peak during prefill of one micro-batch.
    const int64_t micro = p.micro_batches > 0 ? p.micro_batches : p.pp;
    const double mb_requests = std::ceil(static_cast<double>(rm.requests) / micro);
    const double t = mb_requests * w.sequence_length / p.sp;
    const double heads = static_cast<double>(geo.q_heads());
    const double attn_width = heads * (2.0 * m.QkHeadDim() + 2.0 * m.VHeadDim());  // q,k,v,out
    double ffn_width = 0;
    for (int64_t layer : pl.LayersOfStage(stage)) {
      const double mats = m.activation == Activation::kSwiGlu ? 3.0 : 2.0;
      if (m.IsMoeLayer(layer)) {
        // Tokens arrive k times (one copy per chosen expert) plus the shared experts.
        const double k = static_cast<double>(m.moe.experts_per_token);
        ffn_width = std::max(
            ffn_width, k * (h + mats * m.moe.expert_intermediate_size / tp) +
                           mats * m.moe.num_shared_experts * m.moe.expert_intermediate_size / tp);
      } else {
        ffn_width = std::max(ffn_width, mats * m.intermediate_size / tp);
      }
    }
    double act = t * dt * (2 * h + std::max(attn_width, ffn_width));
    if (p.sp > 1) act += 2 * t * KvValuesOnRank(m, geo) * dt;  // ring: current + next K/V block
    if (last) act += mb_requests * vocab_shard * 4.0;          // fp32 logits of the last token
    rm.activations = act;
    rm.comm_buffers = CommBuffers(p);
    plan.ranks.push_back(rm);
  }
  return plan;
}

}  // namespace shardscope
