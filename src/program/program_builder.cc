#include "program/program_builder.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cmath>
#include <deque>
#include <initializer_list>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace shardscope {
namespace {

// Elementwise FLOPs per element (docs/program.md, "Elementwise FLOPs").
constexpr int64_t kRmsNormFlops = 4;           // square, sum, scale by 1/rms, weight
constexpr int64_t kLayerNormFlops = 7;         // mean, subtract, square, sum, scale, weight, bias
constexpr int64_t kSwiGluFlops = 5;            // sigmoid (3), × gate, × up
constexpr int64_t kGeluFlops = 8;              // tanh approximation
constexpr int64_t kRopeFlops = 3;              // per element: 2 multiplies and 1 add
constexpr int64_t kSoftmaxScoreFlops = 3;      // exp, sum, divide
constexpr int64_t kSigmoidBiasScoreFlops = 4;  // sigmoid (3) + correction bias
constexpr int64_t kFp32 = 4;                   // partial outputs, log-sum-exp, router weights
constexpr int64_t kTokenIdBytes = 4;           // int32 token ids
constexpr int64_t kArgmaxBytes = 8;            // (fp32 max logit, int32 index) per token

// An op's cost and shape.
struct Cost {
  int64_t flops = 0, read = 0, written = 0, weight = 0;
  int64_t m = 0, n = 0, k = 0;
};

// y[m×n] = x[m×k] · W[k×n] (+ bias[n]).
Cost Gemm(int64_t m, int64_t k, int64_t n, bool bias, int64_t bpe) {
  Cost c;
  c.flops = 2 * m * k * n + (bias ? m * n : 0);
  c.weight = (k * n + (bias ? n : 0)) * bpe;
  c.read = m * k * bpe + c.weight;
  c.written = m * n * bpe;
  c.m = m, c.n = n, c.k = k;
  return c;
}

// The routing of one (dp, sp, micro-batch, layer): the tokens each of its
// token owners (its ep ranks) sends to each ep rank's experts, and the
// assignments each expert receives. Drawn and summed once, on first use, for
// all ranks of one Build: each rank then reads contiguous rows (reading every
// owner's per-expert counts per rank was most of a decode build).
struct RoutingBlock {
  bool drawn = false;
  int64_t* send = nullptr;    // [owner][ep rank]: assignments the owner sends the rank's experts
  int64_t* recv = nullptr;    // [ep rank][owner]: the same, transposed
  int64_t* expert = nullptr;  // [expert]: assignments over all owners
  // Which entries of each send / recv row are non-zero, a bit per column
  // (RoutingCache::MaskWords words per row): a decode row has a few of ep.
  uint64_t* send_mask = nullptr;
  uint64_t* recv_mask = nullptr;
};

class RoutingCache {
 public:
  RoutingCache(const ParallelSpec& p, int64_t micro_batches, int64_t layers, int64_t experts)
      : ep_(p.ep), sp_(p.sp), micro_(micro_batches), layers_(layers), experts_(experts) {
    blocks_.resize(static_cast<size_t>(p.dp * p.sp * micro_batches * layers));
  }
  // The block's storage is allocated here, on first use; `drawn` says whether it is filled.
  RoutingBlock& Block(int64_t dp, int64_t sp, int64_t mb, int64_t layer) {
    RoutingBlock& b =
        blocks_[static_cast<size_t>(((dp * sp_ + sp) * micro_ + mb) * layers_ + layer)];
    if (b.send == nullptr) {
      const int64_t words = MaskWords();
      storage_.emplace_back(static_cast<size_t>(2 * ep_ * ep_ + experts_ + 2 * ep_ * words), 0);
      b.send = storage_.back().data();
      b.recv = b.send + ep_ * ep_;
      b.expert = b.recv + ep_ * ep_;
      b.send_mask = reinterpret_cast<uint64_t*>(b.expert + experts_);
      b.recv_mask = b.send_mask + ep_ * words;
    }
    return b;
  }
  // Words of a row's non-zero mask.
  int64_t MaskWords() const { return (ep_ + 63) / 64; }
  // Scratch for one owner's per-expert counts.
  std::vector<int64_t>& counts() { return counts_; }

 private:
  int64_t ep_, sp_, micro_, layers_, experts_;
  std::vector<RoutingBlock> blocks_;
  std::deque<std::vector<int64_t>> storage_;  // per used block; stable addresses
  std::vector<int64_t> counts_;
};

// A token id transfer waiting for the end of the phase (pipeline).
struct PendingIds {
  int32_t micro_batch = 0;
  int64_t requests = 0;
  int32_t ready = -1;  // op after which the ids exist on this rank
};

// Builds one rank's ops, or patches them in place: given the ops of the same
// rank and phase built for another decode step, it writes each op it emits over
// the next existing one (same role and stream: the same sequence), leaving ids,
// deps and seqs as built, and reports a different sequence. Short-lived; one
// per rank per Build or Update.
class RankBuilder {
 public:
  // `rp`: without ops to build; the rank's program of another decode step to patch.
  // `changed` (patching, optional): gets the ids of the ops written with other costs.
  RankBuilder(const ProgramBuilder& pb, RoutingCache& cache, int64_t rank, Phase phase,
              int64_t step, RankProgram& rp, std::vector<int32_t>* changed = nullptr)
      : e_(pb.experiment()),
        m_(&e_.model),
        pl_(pb.placement()),
        pb_(pb),
        prec_(pb.precision()),
        geo_(*m_, e_.parallel.tp, e_.parallel.ep),
        cache_(cache),
        rank_(rank),
        prefill_(phase == Phase::kPrefill),
        // DeepEP low-latency (decode's default): a receive on the compute stream.
        low_latency_(ResolvedAllToAll(e_, phase == Phase::kDecode) == AllToAllKind::kLowLatency),
        step_(step),
        patch_(!rp.ops.empty()),
        ops_(rp.ops),
        deps_(rp.deps),
        changed_(changed) {
    const ParallelSpec& p = e_.parallel;
    tp_ = p.tp, sp_ = p.sp, ep_ = p.ep, dp_ = p.dp, pp_ = p.pp;
    c_tp_ = pl_.Coord(rank, Dim::kTp), c_sp_ = pl_.Coord(rank, Dim::kSp);
    c_ep_ = pl_.Coord(rank, Dim::kEp), c_dp_ = pl_.Coord(rank, Dim::kDp);
    c_pp_ = pl_.Coord(rank, Dim::kPp);
    // Bytes per element of each dtype role (config/precision.h; tied
    // embeddings: one matrix, at the embedding's dtype).
    bpe_ = DTypeSize(prec_.activations);
    kvb_ = DTypeSize(prec_.kv_cache);
    headb_ = DTypeSize(prec_.lm_head);
    embb_ = DTypeSize(prec_.embedding);
    arb_ = DTypeSize(prec_.all_reduce);
    h_ = m_->hidden_size;
    seq_ = e_.workload.sequence_length;
    rep_tok_ = (!prefill_ && sp_ > 1) ? sp_ : 1;
    // Speculative decoding: the verify pass computes the k drafted tokens and
    // the last accepted one of each request.
    const SpeculativeSpec& spec = e_.speculative;
    q_ = !prefill_ && spec.enabled() ? spec.draft_tokens + 1 : 1;
    context_ = prefill_ ? 0 : pb.DecodeContext(step);
    hq_ = geo_.q_heads();
    if (m_->attention == AttentionKind::kGqa) {
      hkv_ = geo_.kv_heads();
      kv_rep_ = geo_.kv_replication();
    }
  }

  // Emits the rank's ops. Building: `expected_ops` is the capacity to reserve
  // (ranks of one phase have similar counts). Patching: false when the op
  // sequence differs from the existing one (nothing useful was written then).
  bool Run(size_t expected_ops) {
    if (!patch_) {
      ops_.reserve(expected_ops);
      deps_.reserve(expected_ops);
    }
    const int64_t replica_requests = ReplicaRequests(c_dp_, c_ep_);
    const int64_t micro = pb_.micro_batches();
    if (e_.two_batch_overlap && micro == 2) {
      TwoBatchOverlap(replica_requests);
      return !patch_ || (!mismatch_ && cursor_ == ops_.size());
    }
    for (int64_t mb = 0; mb < micro; ++mb) {
      const int64_t requests = SplitCount(replica_requests, micro, mb);
      // EP collectives need every ep rank to post them, even with no tokens.
      if (requests == 0 && ep_ == 1) continue;
      mb_ = static_cast<int32_t>(mb);
      emitted_.push_back({mb_, requests, -1});
      MicroBatch(requests);
    }
    FinishPipeline();
    return !patch_ || (!mismatch_ && cursor_ == ops_.size());
  }

 private:
  // ---- Requests and tokens.

  int64_t ReplicaRequests(int64_t dp, int64_t ep) const {
    return SplitCount(e_.workload.batch_size, dp_ * ep_, dp * ep_ + ep);
  }
  int64_t MicroBatchRequests(int64_t dp, int64_t ep, int64_t mb) const {
    return SplitCount(ReplicaRequests(dp, ep), pb_.micro_batches(), mb);
  }
  // Tokens a rank of the given requests processes: prefill its share of every
  // prompt (S / sp), decode one per request (replicated over sp).
  int64_t TokensOf(int64_t requests) const {
    return prefill_ ? requests * (seq_ / sp_) : requests * q_;
  }
  int64_t RankWith(Dim d, int64_t coord) const {
    std::array<int64_t, kNumDims> c{};
    for (int i = 0; i < kNumDims; ++i) c[i] = pl_.Coord(rank_, static_cast<Dim>(i));
    c[static_cast<int>(d)] = coord;
    return pl_.RankAt(c);
  }

  // ---- Emitting ops.

  // The next op, with its role and stream: appended when building; when
  // patching, the existing op in its place (a scratch op after a mismatch).
  Op& NewOp(OpRole role, Stream stream) {
    if (patch_) {
      if (!mismatch_ && cursor_ < ops_.size() && ops_[cursor_].role == role &&
          ops_[cursor_].stream == stream) {
        return ops_[cursor_++];
      }
      mismatch_ = true;
      scratch_ = Op{};
      return scratch_;
    }
    Op& op = ops_.emplace_back();
    op.id = static_cast<int32_t>(ops_.size() - 1);
    op.deps_begin = static_cast<int32_t>(deps_.size());
    op.kind = RoleKind(role);
    op.stream = stream;
    op.role = role;
    op.layer = layer_;
    op.micro_batch = mb_;
    op.sp_step = sp_step_;
    op.draft = draft_;
    return op;
  }

  // Patching: notes that `op` is being written with costs other than its own.
  void Changed(const Op& op) {
    if (!patch_ || changed_ == nullptr || &op == &scratch_) return;
    if (changed_->empty() || changed_->back() != op.id) changed_->push_back(op.id);
  }

  // Adds deps (built ops only: a patched op keeps the deps it was built with)
  // to the newest op, whose block ends deps_.
  template <typename Range>
  void AddDeps(Op& op, const Range& deps) {
    if (patch_) return;
    assert(op.deps_begin + op.deps_count == static_cast<int32_t>(deps_.size()));
    for (int32_t d : deps) {
      const auto begin = deps_.begin() + op.deps_begin;
      if (d >= 0 && std::find(begin, deps_.end(), d) == deps_.end()) {
        deps_.push_back(d);
        ++op.deps_count;
      }
    }
  }

  // A compute op; it also waits for every comm op whose output it consumes
  // (pending_) besides `deps`.
  int32_t Compute(OpRole role, const Cost& c, int64_t replication,
                  std::initializer_list<int32_t> deps = {}) {
    Op& op = NewOp(role, Stream::kCompute);
    if (op.flops != c.flops || op.bytes_read != c.read || op.bytes_written != c.written ||
        op.weight_bytes != c.weight || op.m != c.m || op.n != c.n || op.k != c.k ||
        op.replication != replication) {
      Changed(op);
    }
    op.flops = c.flops, op.bytes_read = c.read, op.bytes_written = c.written;
    op.weight_bytes = c.weight;
    op.m = c.m, op.n = c.n, op.k = c.k;
    op.replication = static_cast<int32_t>(replication);
    AddDeps(op, deps);
    AddDeps(op, pending_);
    AddDeps(op, stream_wait_);
    pending_.clear();
    stream_wait_.clear();
    last_compute_ = op.id;
    last_ = &op;
    return last_compute_;
  }

  // A collective over this rank's group of `d`.
  int32_t Collect(Collective coll, Dim d, OpRole role, int64_t bytes,
                  std::initializer_list<int32_t> deps) {
    Op& op = NewOp(role, CommStream(d));
    if (op.bytes != bytes) Changed(op);
    op.bytes = bytes;
    last_ = &op;
    if (patch_) return op.id;  // collective, group and seq as built
    op.collective = coll;
    op.dim = d;
    // 32-bit (CheckOpRanges); a seq counts this rank's calls, fewer than its ops.
    op.group_id = static_cast<int32_t>(pl_.GroupOf(rank_, d).id);
    op.seq = static_cast<int32_t>(coll_seq_[op.group_id]++);
    AddDeps(op, deps);
    return op.id;
  }

  int32_t PointToPoint(Collective coll, Dim d, int64_t peer, OpRole role, int64_t bytes,
                       std::initializer_list<int32_t> deps) {
    Op& op = NewOp(role, CommStream(d));
    if (op.bytes != bytes) Changed(op);
    op.bytes = bytes;
    last_ = &op;
    if (patch_) return op.id;  // collective, peer and seq as built
    op.collective = coll;
    op.dim = d;
    op.peer = static_cast<int32_t>(peer);  // a rank: 32-bit (CheckOpRanges)
    op.seq = static_cast<int32_t>((coll == Collective::kSend ? send_seq_ : recv_seq_)[peer]++);
    AddDeps(op, deps);
    return op.id;
  }

  // ---- Elementwise ops.

  int32_t Norm(OpRole role, int64_t tokens, int64_t width, int64_t replication) {
    const bool ln = m_->norm == NormKind::kLayerNorm;
    Cost c;
    c.flops = tokens * width * (ln ? kLayerNormFlops : kRmsNormFlops);
    c.weight = (ln ? 2 : 1) * width * bpe_;
    c.read = tokens * width * bpe_ + c.weight;
    c.written = tokens * width * bpe_;
    c.m = tokens, c.n = width;
    return Compute(role, c, replication);
  }

  int32_t Residual(OpRole role, int64_t tokens) {
    Cost c;
    c.flops = tokens * h_;
    c.read = 2 * tokens * h_ * bpe_;
    c.written = tokens * h_ * bpe_;
    c.m = tokens, c.n = h_;
    return Compute(role, c, tp_ * rep_tok_);
  }

  int32_t Rope(OpRole role, int64_t tokens, int64_t width, int64_t replication) {
    Cost c;
    c.flops = tokens * width * kRopeFlops;
    c.read = tokens * width * bpe_;
    c.written = tokens * width * bpe_;
    c.m = tokens, c.n = width;
    return Compute(role, c, replication);
  }

  int32_t ActivationOp(OpRole role, int64_t tokens, int64_t width) {
    const bool glu = m_->activation == Activation::kSwiGlu;
    Cost c;
    c.flops = tokens * width * (glu ? kSwiGluFlops : kGeluFlops);
    c.read = (glu ? 2 : 1) * tokens * width * bpe_;
    c.written = tokens * width * bpe_;
    c.m = tokens, c.n = width;
    return Compute(role, c, rep_tok_);
  }

  int32_t KvAppend(int64_t tokens, int64_t values, int64_t replication) {
    Cost c;
    c.read = tokens * values * bpe_;
    c.written = tokens * values * kvb_;
    c.m = tokens, c.n = values;
    return Compute(OpRole::kKvAppend, c, replication);
  }

  // A layer GEMM y[m×n] = x[m×k] · W[k×n] (+ bias) under the dtype roles: the
  // weights in their format with their scales, the input in the GEMM-input
  // dtype (quantised by a Quantize op first), the output and bias in the
  // activation dtype. Without roles: Gemm(m, k, n, bias, bpe_).
  Cost LayerGemm(int64_t m, int64_t k, int64_t n, bool bias) const {
    Cost c;
    c.flops = 2 * m * k * n + (bias ? m * n : 0);
    c.weight = prec_.WeightBytes(k, n) + (bias ? n * bpe_ : 0);
    c.read = prec_.InputBytes(m, k) + c.weight;
    c.written = m * n * bpe_;
    c.m = m, c.n = n, c.k = k;
    return c;
  }

  // The quantisation of a GEMM's m × k input (when the roles quantise GEMM
  // inputs): it reads the input (twice for a dynamic per-tensor scale: the
  // amax, then the cast) and writes it in the GEMM-input dtype with its scales.
  void Quantize(OpRole role, int64_t tokens, int64_t k, int64_t replication,
                std::initializer_list<int32_t> deps = {}) {
    if (!prec_.QuantisedInputs()) return;
    Cost c;
    c.flops = 2 * tokens * k;  // |x| max and the scaling multiply
    c.read = prec_.QuantReadPasses() * tokens * k * bpe_;
    c.written = prec_.InputBytes(tokens, k);
    c.m = tokens, c.n = k;
    Compute(role, c, replication, deps);
  }

  // All-reduce of `tokens` hidden states over the TP group (when tp > 1); the
  // next compute op waits for it.
  void TpAllReduce(OpRole role, int64_t tokens) {
    if (tp_ == 1) return;
    pending_.push_back(
        Collect(Collective::kAllReduce, Dim::kTp, role, tokens * h_ * arb_, {last_compute_}));
  }

  // ---- Phase structure.

  // The state one micro-batch carries between its stages.
  struct MicroBatchState {
    int32_t mb = 0;
    int64_t requests = 0;
    bool output_pending = false;  // an MoE layer's MoeOutput is still to run
    std::vector<int32_t> pending;
    int32_t last_compute = -1;
    int32_t layer = -1;
    bool moe_layer = false;
    int32_t dispatch = -1;
    int32_t combine = -1;
    std::vector<int64_t> per_expert;
    std::span<const int64_t> recv;
    std::span<const uint64_t> recv_mask;
  };
  void Swap(MicroBatchState& s) {
    std::swap(mb_, s.mb);
    std::swap(pending_, s.pending);
    std::swap(last_compute_, s.last_compute);
    std::swap(layer_, s.layer);
    std::swap(moe_layer_, s.moe_layer);
    std::swap(dispatch_, s.dispatch);
    std::swap(combine_, s.combine);
    std::swap(per_expert_, s.per_expert);
    std::swap(recv_, s.recv);
    std::swap(recv_mask_, s.recv_mask);
  }

  // Two-batch overlap (pp = sp = 1): the replica's requests in two
  // micro-batches A and B, each layer cut into stages that alternate on the
  // compute stream, B `delta` stages behind A — SGLang's operations strategies
  // for DeepSeek (--enable-two-batch-overlap; DeepSeek's "dual micro-batch
  // overlap"). Prefill, delta 0, two stages per layer: [shared experts and
  // output of the layer before, attention, router, dispatch] [experts,
  // combine]. Decode, delta 2, five: [output of the layer before, attention
  // up to its kernel] [attention kernel, router] [dispatch, shared experts]
  // [experts, combine] [the combine's receive]. A dense layer is one stage.
  // Embedding and head run per micro-batch, before and after.
  void TwoBatchOverlap(int64_t replica_requests) {
    MicroBatchState state[2];
    for (int32_t i = 0; i < 2; ++i) {
      state[i].mb = i;
      state[i].requests = SplitCount(replica_requests, 2, i);
    }
    layer_ = -1;
    for (MicroBatchState& s : state) {
      Swap(s);
      emitted_.push_back({mb_, s.requests, -1});
      DraftModel(s.requests);
      Embedding(TokensOf(s.requests));
      Swap(s);
    }
    const int64_t parts = prefill_ ? 2 : 5;
    const int64_t delta = prefill_ ? 0 : 2;
    const int64_t stages = static_cast<int64_t>(pl_.LayersOfStage(0).size()) * parts + 1;
    for (int64_t step = 0; step < stages + delta; ++step) {
      if (step < stages) TboStage(state[0], step, parts);
      if (step >= delta) TboStage(state[1], step - delta, parts);
    }
    layer_ = -1;
    for (int32_t i = 0; i < 2; ++i) {
      Swap(state[i]);
      layer_ = -1;
      std::swap(emitted_[emitted_.size() - 2 + i], emitted_.back());  // Head sets back()
      Head(state[i].requests);
      if (!prefill_ && e_.speculative.mtp()) {
        for (int64_t d = 0; d < e_.speculative.draft_tokens; ++d) MtpDraft(state[i].requests, d);
      }
      std::swap(emitted_[emitted_.size() - 2 + i], emitted_.back());
      Swap(state[i]);
    }
  }

  // Stage `index` of micro-batch `s` (`parts` stages per layer, then a last
  // one: the output of the last MoE layer).
  void TboStage(MicroBatchState& s, int64_t index, int64_t parts) {
    const std::vector<int64_t>& layers = pl_.LayersOfStage(0);
    const int64_t tokens = TokensOf(s.requests);
    const int64_t part = index % parts;
    Swap(s);
    if (part == 0 && s.output_pending) {  // the layer before's output (layer_ still its)
      MoeOutput(tokens, prefill_);
      s.output_pending = false;
    }
    if (index / parts < static_cast<int64_t>(layers.size())) {
      if (part == 0) layer_ = static_cast<int32_t>(layers[static_cast<size_t>(index / parts)]);
      const bool moe = MoeLayer(layer_);
      if (prefill_) {
        if (part == 0) {
          AttentionPrepare(tokens);
          AttentionCore(s.requests, tokens);
          if (moe) MoeDispatch(tokens, false);
        } else if (moe) {
          MoeExperts();
          s.output_pending = true;
        }
      } else if (part == 0) {
        AttentionPrepare(tokens);
        if (!moe) AttentionCore(s.requests, tokens);  // a dense layer runs whole
      } else if (moe && part == 1) {
        AttentionCore(s.requests, tokens);
      } else if (moe && part == 2) {
        MoeDispatch(tokens, true);
      } else if (moe && part == 3) {
        MoeExperts();
        s.output_pending = true;
      } else if (moe && part == 4 && combine_ >= 0 && low_latency_) {
        // DeepEP low-latency's receive hook runs on the compute stream: it
        // holds the stream until this combine has arrived.
        stream_wait_.push_back(combine_);
      }
    }
    Swap(s);
  }

  void MicroBatch(int64_t requests) {
    const int64_t tokens = TokensOf(requests);
    layer_ = -1;
    if (c_pp_ == 0) {
      DraftModel(requests);  // pp = 1 with a draft model
      Embedding(tokens);
    } else {
      pending_.push_back(PointToPoint(Collective::kRecv, Dim::kPp, RankWith(Dim::kPp, c_pp_ - 1),
                                      OpRole::kActivations, tokens * h_ * bpe_, {}));
    }
    for (int64_t layer : pl_.LayersOfStage(c_pp_)) {
      layer_ = static_cast<int32_t>(layer);
      Layer(requests, tokens);
    }
    layer_ = -1;
    if (c_pp_ < pp_ - 1) {
      PointToPoint(Collective::kSend, Dim::kPp, RankWith(Dim::kPp, c_pp_ + 1), OpRole::kActivations,
                   tokens * h_ * bpe_, {last_compute_});
    } else {
      Head(requests);
      if (!prefill_ && e_.speculative.mtp()) {
        for (int64_t d = 0; d < e_.speculative.draft_tokens; ++d) MtpDraft(requests, d);
      }
    }
  }

  // Speculative decoding with a separate draft model (vLLM's and
  // TensorRT-LLM's draft-target): in decode, k sequential passes of the draft,
  // one token per request over the draft's own KV cache (the context, then
  // the drafts before), ahead of the target's verify pass; in prefill, the
  // draft's prefill of the prompts (its KV cache). The draft's ops carry
  // Op::draft = 1 + pass (named "draft<pass>.…"; prefill: pass 0). With
  // draft_tensor_parallel 1 < tp, tp rank 0 runs the draft alone and
  // broadcasts the drafted ids over tp.
  void DraftModel(int64_t requests) {
    const SpeculativeSpec& spec = e_.speculative;
    if (!spec.draft()) return;
    const int64_t draft_tp = spec.DraftTp(tp_);
    if (c_tp_ < draft_tp) {
      const ModelState target = SaveModel();
      const int64_t q = q_, context = context_;
      UseModel(spec.draft_model, draft_tp);
      q_ = 1;
      const int64_t passes = prefill_ ? 1 : spec.draft_tokens;
      for (int64_t d = 0; d < passes; ++d) {
        draft_ = static_cast<uint8_t>(d + 1);
        if (!prefill_) context_ = context + d;  // the drafts before are cached
        DraftForward(requests);
      }
      draft_ = 0;
      RestoreModel(target);
      q_ = q, context_ = context;
    }
    if (!prefill_ && draft_tp < tp_) {
      draft_ = static_cast<uint8_t>(spec.draft_tokens);  // the last pass's ids
      const int32_t ids = Collect(Collective::kBroadcast, Dim::kTp, OpRole::kTokenIds,
                                  requests * spec.draft_tokens * kTokenIdBytes, {last_compute_});
      const int64_t root = RankWith(Dim::kTp, 0);
      if (last_->peer != root) Changed(*last_);
      last_->peer = static_cast<int32_t>(root);
      pending_.push_back(ids);
      draft_ = 0;
    }
  }

  // The model-dependent state: the model, its split and the sizes derived from them.
  struct ModelState {
    const ModelSpec* m;
    ShardGeometry geo;
    int64_t h, hq, hkv, kv_rep, tp;
  };
  ModelState SaveModel() const { return {m_, geo_, h_, hq_, hkv_, kv_rep_, tp_}; }
  void RestoreModel(const ModelState& s) {
    m_ = s.m, geo_ = s.geo, h_ = s.h, hq_ = s.hq, hkv_ = s.hkv, kv_rep_ = s.kv_rep, tp_ = s.tp;
  }

  // Points the model-dependent state at `m` split over `tp` ranks.
  void UseModel(const ModelSpec& m, int64_t tp) {
    m_ = &m;
    geo_ = ShardGeometry(m, tp, 1);
    tp_ = tp;
    h_ = m.hidden_size;
    hq_ = geo_.q_heads();
    hkv_ = 0, kv_rep_ = 1;
    if (m.attention == AttentionKind::kGqa) {
      hkv_ = geo_.kv_heads();
      kv_rep_ = geo_.kv_replication();
    }
  }

  // One forward pass of the current (draft) model: embedding, its layers, head.
  void DraftForward(int64_t requests) {
    const int64_t tokens = TokensOf(requests);
    layer_ = -1;
    Embedding(tokens);
    for (int64_t layer = 0; layer < m_->num_layers; ++layer) {
      layer_ = static_cast<int32_t>(layer);
      Layer(requests, tokens);
    }
    layer_ = -1;
    Head(requests);
  }

  // One draft pass of the model's MTP module (DeepSeek-V3 §2.2): per request
  // one token — the embedding of the token just sampled and the last hidden
  // state, each normed, concatenated and projected 2h → h (eh_proj,
  // replicated over tp) — through one decoder block (layer num_layers + i, its
  // own KV cache) and the shared head. k drafts run the modules in turn;
  // draft pass d is numbered layer num_layers + d in the program.
  void MtpDraft(int64_t requests, int64_t d) {
    const int64_t tokens = requests;
    layer_ = static_cast<int32_t>(m_->num_layers + d);
    const int64_t saved_q = q_;
    q_ = 1;  // one token per request from here to the head
    Embedding(tokens);
    {  // enorm and hnorm: two norms of `tokens` rows each
      const bool ln = m_->norm == NormKind::kLayerNorm;
      Cost c;
      c.flops = 2 * tokens * h_ * (ln ? kLayerNormFlops : kRmsNormFlops);
      c.weight = 2 * (ln ? 2 : 1) * h_ * bpe_;
      c.read = 2 * tokens * h_ * bpe_ + c.weight;
      c.written = 2 * tokens * h_ * bpe_;
      c.m = 2 * tokens, c.n = h_;
      Compute(OpRole::kMtpNorm, c, tp_ * rep_tok_);
    }
    Compute(OpRole::kMtpProj, Gemm(tokens, 2 * h_, h_, false, bpe_), tp_ * rep_tok_);
    Layer(requests, tokens);
    Head(requests);
    q_ = saved_q;
    layer_ = -1;
  }

  void Embedding(int64_t tokens) {
    const int64_t vocab = m_->vocab_size;
    const int64_t local_vocab = geo_.Vocab(c_tp_).count;
    Cost c;
    // A masked gather: the rows of this rank's vocabulary shard, for uniform ids.
    c.read = tokens * kTokenIdBytes + tokens * h_ * embb_ * local_vocab / vocab;
    c.written = tokens * h_ * bpe_;
    c.m = tokens, c.n = h_;
    Compute(OpRole::kEmbedding, c, rep_tok_);
    TpAllReduce(OpRole::kEmbeddingReduce, tokens);
  }

  // Final norm, LM head and greedy sampling on the last position of each request.
  void Head(int64_t requests) {
    const int64_t n = requests * q_;  // speculative verify: every position is sampled
    // Under ring-attention prefill only the rank holding the last prompt token has it.
    const int64_t owner = (prefill_ && sp_ > 1) ? pb_.sp_layout()->OwnerOf(seq_ - 1) : c_sp_;
    int32_t ready = -1;
    if (c_sp_ == owner) {
      Norm(OpRole::kFinalNorm, n, h_, tp_ * rep_tok_);
      const int64_t local_vocab = geo_.Vocab(c_tp_).count;
      Cost head = Gemm(n, h_, local_vocab, false, bpe_);
      head.weight += h_ * local_vocab * (headb_ - bpe_);  // the head's own dtype
      head.read += h_ * local_vocab * (headb_ - bpe_);
      Compute(OpRole::kLmHead, head, rep_tok_);
      Cost local;  // argmax over the local logits: comparisons, no FLOPs
      local.read = n * local_vocab * bpe_;
      local.written = n * (tp_ > 1 ? kArgmaxBytes : kTokenIdBytes);
      local.m = n, local.n = local_vocab;
      Compute(tp_ > 1 ? OpRole::kSampleLocal : OpRole::kSample, local, rep_tok_);
      if (tp_ > 1) {
        pending_.push_back(Collect(Collective::kAllGather, Dim::kTp, OpRole::kArgMaxGather,
                                   tp_ * n * kArgmaxBytes, {last_compute_}));
        Cost select;
        select.read = tp_ * n * kArgmaxBytes;
        select.written = n * kTokenIdBytes;
        select.m = n, select.n = tp_;
        Compute(OpRole::kSampleSelect, select, tp_ * rep_tok_);
      }
      ready = last_compute_;
    }
    if (prefill_ && sp_ > 1) {
      ready =
          Collect(Collective::kBroadcast, Dim::kSp, OpRole::kTokenIds, n * kTokenIdBytes, {ready});
      const int64_t peer = RankWith(Dim::kSp, owner);
      if (last_->peer != peer) Changed(*last_);
      last_->peer = static_cast<int32_t>(peer);
    }
    emitted_.back().ready = ready;
  }

  // Sampled token ids go from the last stage back to stage 0 for the next step.
  // Posted after all micro-batches, so the pp streams cannot deadlock.
  void FinishPipeline() {
    if (pp_ == 1) return;
    layer_ = -1;
    for (const PendingIds& ids : emitted_) {
      mb_ = ids.micro_batch;
      if (c_pp_ == pp_ - 1) {
        PointToPoint(Collective::kSend, Dim::kPp, RankWith(Dim::kPp, 0), OpRole::kTokenIds,
                     ids.requests * kTokenIdBytes, {ids.ready});
      } else if (c_pp_ == 0) {
        PointToPoint(Collective::kRecv, Dim::kPp, RankWith(Dim::kPp, pp_ - 1), OpRole::kTokenIds,
                     ids.requests * kTokenIdBytes, {});
      }
    }
  }

  // ---- One decoder layer.

  // A decoder layer in the parts two-batch overlap runs as stages: attention
  // up to the kernel, the rest of attention and the router (or a whole dense
  // layer), the dispatch (with the shared experts under it), the routed
  // experts and their combine, the output (unpermute, all-reduce, residual).
  void Layer(int64_t requests, int64_t tokens) {
    AttentionPrepare(tokens);
    AttentionCore(requests, tokens);
    if (!moe_layer_) return;
    MoeDispatch(tokens, true);
    MoeExperts();
    MoeOutput(tokens, false);
  }

  // An MTP module's block (layer ≥ num_layers) is an MoE block in MoE models.
  bool MoeLayer(int32_t layer) const {
    return layer >= m_->num_layers ? m_->is_moe() : m_->IsMoeLayer(layer);
  }

  // Input norm and attention up to its kernel (projections, RoPE, KV append;
  // MLA decode: the absorbed W_UK too).
  void AttentionPrepare(int64_t tokens) {
    Norm(OpRole::kInputNorm, tokens, h_, tp_ * rep_tok_);
    if (m_->attention == AttentionKind::kMla) {
      MlaPrepare(tokens);
    } else {
      GqaPrepare(tokens);
    }
  }

  // The attention kernel, output projection, all-reduce and residual; then the
  // MoE router and permute, or a whole dense FFN.
  void AttentionCore(int64_t requests, int64_t tokens) {
    if (m_->attention == AttentionKind::kMla) {
      MlaCore(requests, tokens);
    } else {
      GqaCore(requests, tokens);
    }
    TpAllReduce(OpRole::kAttnReduce, tokens);
    Residual(OpRole::kResidualAttn, tokens);
    Norm(OpRole::kPostAttentionNorm, tokens, h_, tp_ * rep_tok_);
    moe_layer_ = MoeLayer(layer_);
    if (moe_layer_) {
      MoeGate(tokens);
    } else {
      DenseFfn(tokens);
      TpAllReduce(OpRole::kFfnReduce, tokens);
      Residual(OpRole::kResidualFfn, tokens);
    }
  }

  // Attention geometry shared by GQA and MLA.
  struct AttnShape {
    int64_t qk = 0;        // query/key width per head
    int64_t v = 0;         // value (output) width per head
    int64_t kv_heads = 0;  // K/V heads read by the prefill kernel
  };

  void GqaPrepare(int64_t tokens) {
    const int64_t d = m_->head_dim;
    const bool bias = m_->qkv_bias;
    Quantize(OpRole::kQuantAttn, tokens, h_, tp_ * rep_tok_);
    if (kv_rep_ == 1) {
      Compute(OpRole::kQkvProj, LayerGemm(tokens, h_, (hq_ + 2 * hkv_) * d, bias), rep_tok_);
      QkNorms(tokens, 1);
      Rope(OpRole::kRope, tokens, (hq_ + hkv_) * d, rep_tok_);
    } else {
      // KV heads replicate over tp: the k/v part is redundant work, so it gets its own ops.
      Compute(OpRole::kQProj, LayerGemm(tokens, h_, hq_ * d, bias), rep_tok_);
      Compute(OpRole::kKvProj, LayerGemm(tokens, h_, 2 * hkv_ * d, bias), kv_rep_ * rep_tok_);
      QkNorms(tokens, kv_rep_);
      Rope(OpRole::kRopeQ, tokens, hq_ * d, rep_tok_);
      Rope(OpRole::kRopeK, tokens, hkv_ * d, kv_rep_ * rep_tok_);
    }
    if (OwnsNewKv()) KvAppend(tokens, 2 * hkv_ * d, kv_rep_);
  }

  // qk_norm (Qwen3): an RMSNorm over each of this rank's query heads and each key head,
  // after the projections and before RoPE; rows = tokens x heads, width = head_dim. The
  // key norm repeats on the kv_rep ranks that replicate a KV head.
  void QkNorms(int64_t tokens, int64_t kv_rep) {
    if (!m_->qk_norm) return;
    const int64_t d = m_->head_dim;
    Norm(OpRole::kQNorm, tokens * hq_, d, rep_tok_);
    Norm(OpRole::kKNorm, tokens * hkv_, d, kv_rep * rep_tok_);
  }

  void GqaCore(int64_t requests, int64_t tokens) {
    const int64_t d = m_->head_dim;
    const AttnShape shape{d, d, hkv_};
    if (prefill_) {
      if (sp_ > 1) {
        RingAttention(requests, tokens, shape, tokens * 2 * hkv_ * d * bpe_);
      } else {
        PrefillAttention(requests, tokens, shape);
      }
    } else {
      DecodeAttention(requests, shape, 2 * hkv_ * d);
    }
    OutProj(tokens, d);
  }

  void MlaPrepare(int64_t tokens) {
    const MlaSpec& a = m_->mla;
    const int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    const int64_t latent = a.kv_lora_rank + a.qk_rope_head_dim;
    const bool bias = m_->qkv_bias;
    Quantize(OpRole::kQuantAttn, tokens, h_, tp_ * rep_tok_);  // q_a (or q) and kv_a's input
    if (a.q_lora_rank > 0) {
      Compute(OpRole::kQaProj, LayerGemm(tokens, h_, a.q_lora_rank, bias), tp_ * rep_tok_);
      Norm(OpRole::kQaNorm, tokens, a.q_lora_rank, tp_ * rep_tok_);
      Quantize(OpRole::kQuantQb, tokens, a.q_lora_rank, tp_ * rep_tok_);
      Compute(OpRole::kQbProj, LayerGemm(tokens, a.q_lora_rank, hq_ * qk, false), rep_tok_);
    } else {
      Compute(OpRole::kQProj, LayerGemm(tokens, h_, hq_ * qk, false), rep_tok_);
    }
    Compute(OpRole::kKvAProj, LayerGemm(tokens, h_, latent, bias), tp_ * rep_tok_);
    Norm(OpRole::kKvANorm, tokens, a.kv_lora_rank, tp_ * rep_tok_);
    Rope(OpRole::kRopeQ, tokens, hq_ * a.qk_rope_head_dim, rep_tok_);
    Rope(OpRole::kRopeK, tokens, a.qk_rope_head_dim, tp_ * rep_tok_);
    if (OwnsNewKv()) KvAppend(tokens, latent, tp_);
    if (!prefill_) {
      // Absorbed form: W_UK folded into the query (batched per head in the
      // activation dtype; its input is not quantised).
      Cost uk = Gemm(tokens, a.qk_nope_head_dim, hq_ * a.kv_lora_rank, false, bpe_);
      uk.flops = 2 * tokens * hq_ * a.qk_nope_head_dim * a.kv_lora_rank;
      uk.weight = AbsorbedWeightBytes(a.qk_nope_head_dim, hq_ * a.kv_lora_rank);
      uk.read = tokens * hq_ * a.qk_nope_head_dim * bpe_ + uk.weight;
      Compute(OpRole::kAbsorbUk, uk, rep_tok_);
    }
  }

  void MlaCore(int64_t requests, int64_t tokens) {
    const MlaSpec& a = m_->mla;
    const int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    const int64_t latent = a.kv_lora_rank + a.qk_rope_head_dim;
    const int64_t up_width = hq_ * (a.qk_nope_head_dim + a.v_head_dim);
    if (prefill_) {
      // Non-absorbed form: per-head K (nope) and V from the latent.
      const AttnShape shape{qk, a.v_head_dim, hq_};
      if (sp_ > 1) {
        RingAttention(requests, tokens, shape, tokens * latent * bpe_);
      } else {
        Quantize(OpRole::kQuantKvB, tokens, a.kv_lora_rank, tp_);
        Compute(OpRole::kKvUpProj, LayerGemm(tokens, a.kv_lora_rank, up_width, false), 1);
        PrefillAttention(requests, tokens, shape);
      }
    } else {
      // Absorbed form: attention over the latent cache (values = the latent
      // itself), W_UV applied to the output.
      DecodeAttention(requests, AttnShape{latent, a.kv_lora_rank, 1}, latent);
      Cost uv = Gemm(tokens, a.kv_lora_rank, hq_ * a.v_head_dim, false, bpe_);
      uv.flops = 2 * tokens * hq_ * a.kv_lora_rank * a.v_head_dim;
      uv.weight = AbsorbedWeightBytes(a.kv_lora_rank, hq_ * a.v_head_dim);
      uv.read = tokens * hq_ * a.kv_lora_rank * bpe_ + uv.weight;
      Compute(OpRole::kAbsorbUv, uv, rep_tok_);
    }
    OutProj(tokens, a.v_head_dim);
  }

  // Bytes of an absorbed decode product's k × n weights (W_UK, W_UV). Block-scaled
  // FP8 (DeepSeek-V3's 128 × 128) kv_b_proj is dequantised to the activation dtype
  // at load and the products run as bf16 batched GEMMs: SGLang's default
  // (python/sglang/srt/models/deepseek_v2.py post_load_weights, block_quant_dequant
  // unless SGL_USE_DEEPGEMM_BMM; sgl-project/sglang 00114aef) and DeepSeek's own
  // inference/model.py (weight_dequant of wkv_b in its absorbed path). Other formats
  // keep the weight format's bytes (bench/serving/SOURCES.md, "Absorbed MLA weights").
  int64_t AbsorbedWeightBytes(int64_t k, int64_t n) const {
    if (prec_.roles && prec_.weight_scales.kind == ScaleKind::kBlock) return k * n * bpe_;
    return prec_.WeightBytes(k, n);
  }

  // In decode with sp > 1 only the rank owning the new position stores its KV.
  bool OwnsNewKv() const { return prefill_ || sp_ == 1 || step_ % sp_ == c_sp_; }

  // Row-parallel output projection; its bias is added once, by tp rank 0.
  void OutProj(int64_t tokens, int64_t v_head_dim) {
    Quantize(OpRole::kQuantOut, tokens, hq_ * v_head_dim, rep_tok_);
    Cost c = LayerGemm(tokens, hq_ * v_head_dim, h_, m_->o_bias && c_tp_ == 0);
    Compute(OpRole::kOutProj, c, rep_tok_);
  }

  // Causal attention of each request's S tokens over themselves (flash style).
  void PrefillAttention(int64_t requests, int64_t tokens, const AttnShape& s) {
    const int64_t pairs = requests * seq_ * (seq_ + 1) / 2;
    Cost c;
    c.flops = 2 * pairs * hq_ * (s.qk + s.v);
    c.read = tokens * (hq_ * s.qk + s.kv_heads * (s.qk + s.v)) * bpe_;
    c.written = tokens * hq_ * (s.v * bpe_ + kFp32);  // output and log-sum-exp
    c.m = tokens, c.n = seq_, c.k = hq_ * s.qk;
    Compute(OpRole::kAttention, c, 1);
  }

  // Ring attention: sp steps over the K/V blocks passing around the sp ring,
  // then the log-sum-exp merge of the partial outputs.
  void RingAttention(int64_t requests, int64_t tokens, const AttnShape& s, int64_t block_bytes) {
    const SpLayout& layout = *pb_.sp_layout();
    const bool mla = m_->attention == AttentionKind::kMla;
    const int64_t next = RankWith(Dim::kSp, (c_sp_ + 1) % sp_);
    const int64_t prev = RankWith(Dim::kSp, (c_sp_ + sp_ - 1) % sp_);
    const int32_t kv_ready = last_compute_;
    int32_t prev_recv = -1;
    int64_t partials = 0;
    for (int64_t j = 0; j < sp_; ++j) {
      sp_step_ = static_cast<int32_t>(j);
      // Forward the block held now while attending to it. Even ranks send
      // first, odd ranks receive first: no cycle of blocked sends.
      int32_t recv = -1;
      if (j < sp_ - 1) {
        const int32_t held = j == 0 ? kv_ready : prev_recv;
        if (c_sp_ % 2 == 0) {
          PointToPoint(Collective::kSend, Dim::kSp, next, OpRole::kRingKv, block_bytes, {held});
          recv = PointToPoint(Collective::kRecv, Dim::kSp, prev, OpRole::kRingKv, block_bytes, {});
        } else {
          recv = PointToPoint(Collective::kRecv, Dim::kSp, prev, OpRole::kRingKv, block_bytes, {});
          PointToPoint(Collective::kSend, Dim::kSp, next, OpRole::kRingKv, block_bytes, {held});
        }
      }
      if (mla) {
        // Every rank up-projects every block once: replicated sp times.
        const MlaSpec& a = m_->mla;
        Quantize(OpRole::kQuantKvB, tokens, a.kv_lora_rank, sp_ * tp_, {prev_recv});
        Compute(OpRole::kKvUpProj,
                LayerGemm(tokens, a.kv_lora_rank, hq_ * (a.qk_nope_head_dim + a.v_head_dim), false),
                sp_, {prev_recv});
      }
      const int64_t src = (c_sp_ - j + sp_) % sp_;
      const int64_t pairs = requests * layout.CausalPairs(c_sp_, src);
      Cost c;
      if (pairs > 0) {  // a fully masked block is skipped (zero cost)
        ++partials;
        c.flops = 2 * pairs * hq_ * (s.qk + s.v);
        c.read = tokens * (hq_ * s.qk + s.kv_heads * (s.qk + s.v)) * bpe_;
        c.written = tokens * hq_ * (s.v + 1) * kFp32;  // fp32 partial output and LSE
      }
      c.m = tokens, c.n = layout.LocalTokens(), c.k = hq_ * s.qk;
      Compute(OpRole::kAttention, c, 1, {prev_recv});
      prev_recv = recv;
    }
    sp_step_ = -1;
    Merge(tokens, s.v, partials, 1);
  }

  // Log-sum-exp merge of `parts` fp32 partial outputs (and their LSEs).
  void Merge(int64_t tokens, int64_t v, int64_t parts, int64_t replication) {
    Cost c;
    c.flops = std::max<int64_t>(parts - 1, 0) * tokens * hq_ * (3 * v + 4);
    c.read = parts * tokens * hq_ * (v + 1) * kFp32;
    c.written = tokens * hq_ * v * bpe_;
    c.m = tokens, c.n = hq_ * v;
    Compute(OpRole::kAttentionMerge, c, replication);
  }

  // One query per request over its cached keys (context + the new one). With
  // sp > 1 each rank covers its shard of the cache, then the partials are
  // all-gathered over sp and merged. `cache_values`: cached values per key.
  void DecodeAttention(int64_t requests, const AttnShape& s, int64_t cache_values) {
    // q query tokens per request (1, or k + 1 verified under speculation), the
    // i-th over the context and the first i new keys: q·context + q(q+1)/2 pairs.
    int64_t keys = context_ + q_;
    int64_t pairs = q_ * context_ + q_ * (q_ + 1) / 2;
    if (sp_ > 1) {
      // Prompt keys as laid out by prefill; generated token g lives on rank g mod sp.
      keys = seq_ / sp_ + (step_ >= c_sp_ ? (step_ - c_sp_) / sp_ + 1 : 0);
      pairs = keys;
    }
    const int64_t queries = requests * q_;
    Cost c;
    c.flops = 2 * requests * pairs * hq_ * (s.qk + s.v);
    c.read = queries * hq_ * s.qk * bpe_ + requests * keys * cache_values * kvb_;
    c.written = sp_ > 1 ? queries * hq_ * (s.v + 1) * kFp32 : queries * hq_ * s.v * bpe_;
    c.m = queries, c.n = keys, c.k = hq_ * s.qk;
    Compute(OpRole::kAttentionDecode, c, 1);
    if (sp_ == 1) return;
    pending_.push_back(Collect(Collective::kAllGather, Dim::kSp, OpRole::kAttnGather,
                               sp_ * requests * hq_ * (s.v + 1) * kFp32, {last_compute_}));
    Merge(requests, s.v, sp_, sp_);
  }

  // ---- FFN.

  int64_t UpMatrices() const { return m_->activation == Activation::kSwiGlu ? 2 : 1; }

  // A column-split up (gate+up) projection, activation and row-split down
  // projection of `inter` intermediate width over tp; the down bias is added by
  // tp rank 0 only.
  // `quant_down`: the quantisation of the down projection's input.
  void SplitFfn(OpRole up, OpRole down, OpRole act, OpRole quant_down, int64_t tokens,
                int64_t inter) {
    const int64_t local = geo_.Intermediate(inter, c_tp_).count;
    const bool bias = m_->mlp_bias;
    Compute(up, LayerGemm(tokens, h_, UpMatrices() * local, bias), rep_tok_);
    ActivationOp(act, tokens, local);
    Quantize(quant_down, tokens, local, rep_tok_);
    Compute(down, LayerGemm(tokens, local, h_, bias && c_tp_ == 0), rep_tok_);
  }

  void DenseFfn(int64_t tokens) {
    Quantize(OpRole::kQuantFfn, tokens, h_, tp_ * rep_tok_);
    SplitFfn(OpRole::kFfnUp, OpRole::kFfnDown, OpRole::kFfnActivation, OpRole::kQuantDown, tokens,
             m_->intermediate_size);
  }

  // The routing of this rank's (dp, sp, micro-batch) in this layer: every ep
  // rank's tokens drawn (in its own PRNG stream), then summed per destination.
  const RoutingBlock& Routing() {
    const int64_t sp = prefill_ ? c_sp_ : 0;  // decode tokens are the same on every sp rank
    RoutingBlock& b = cache_.Block(c_dp_, sp, mb_, layer_);
    if (b.drawn) return b;
    const int64_t experts = m_->moe.num_routed_experts;
    std::vector<int64_t>& counts = cache_.counts();
    counts.resize(static_cast<size_t>(experts));
    for (int64_t j = 0; j < ep_; ++j) {
      const int64_t tokens = TokensOf(MicroBatchRequests(c_dp_, j, mb_));
      const uint64_t stream = ExpertRouting::StreamKey(
          {prefill_ ? 0u : 1u, static_cast<uint64_t>(step_), static_cast<uint64_t>(c_dp_),
           static_cast<uint64_t>(j), static_cast<uint64_t>(sp), static_cast<uint64_t>(mb_)});
      pb_.routing()->CountsInto(pb_.routing_distribution(layer_),
                                tokens * m_->moe.experts_per_token, stream, counts);
      // The experts of ep rank k are those x with EpRankOfExpert(x) == k
      // (Placement), so what owner j sends k is what k receives from j. Decode
      // draws few assignments: skip the experts that got none.
      int64_t* send = b.send + j * ep_;
      const int64_t words = cache_.MaskWords();
      if (const ExpertReplicas* rep = pb_.replicas(layer_)) {
        SpreadOverReplicas(*rep, counts, j, b);
        continue;
      }
      for (int64_t x = 0; x < experts; ++x) {
        const int64_t n = counts[x];
        if (n == 0) continue;
        const int64_t k = pl_.EpRankOfExpert(x);
        send[k] += n;
        b.recv[k * ep_ + j] += n;
        b.expert[x] += n;
        b.send_mask[j * words + k / 64] |= uint64_t{1} << (k % 64);
        b.recv_mask[k * words + j / 64] |= uint64_t{1} << (j % 64);
      }
    }
    b.drawn = true;
    return b;
  }

  // EPLB: owner j's assignments to each expert split evenly over the expert's
  // replicas (the remainder rotated by owner), into the block's per-slot counts.
  void SpreadOverReplicas(const ExpertReplicas& rep, const std::vector<int64_t>& counts, int64_t j,
                          RoutingBlock& b) {
    const int64_t words = cache_.MaskWords();
    int64_t* send = b.send + j * ep_;
    for (size_t x = 0; x < counts.size(); ++x) {
      if (counts[x] == 0) continue;
      const std::vector<int32_t>& slots = rep.expert_slots[x];
      const int64_t copies = static_cast<int64_t>(slots.size());
      for (int64_t i = 0; i < copies; ++i) {
        const int64_t n = SplitCount(counts[x], copies, (i + j) % copies);
        if (n == 0) continue;
        const int64_t k = slots[i] / rep.slots_per_rank;
        send[k] += n;
        b.recv[k * ep_ + j] += n;
        b.expert[slots[i]] += n;
        b.send_mask[j * words + k / 64] |= uint64_t{1} << (k % 64);
        b.recv_mask[k * words + j / 64] |= uint64_t{1} << (j % 64);
      }
    }
  }

  void MoeGate(int64_t tokens) {
    const MoeSpec& moe = m_->moe;
    const int64_t experts = moe.num_routed_experts;
    const int64_t topk = moe.experts_per_token;
    const int64_t assignments = tokens * topk;
    const bool sigmoid = moe.router == RouterKind::kSigmoidBias;
    {  // Router: scores of every expert, top-k (no FLOPs for the selection).
      Cost c = Gemm(tokens, h_, experts, false, bpe_);
      c.flops += tokens * experts * (sigmoid ? kSigmoidBiasScoreFlops : kSoftmaxScoreFlops);
      if (sigmoid) c.weight += experts * kFp32;
      c.read = tokens * h_ * bpe_ + c.weight;
      c.written = assignments * (kTokenIdBytes + kFp32);  // expert index and weight
      Compute(OpRole::kRouter, c, tp_ * rep_tok_);
    }
    // The experts' input, quantised once for the shared and routed experts
    // (the router scores the unquantised hidden states).
    Quantize(OpRole::kQuantFfn, tokens, h_, tp_ * rep_tok_);
    {
      Cost c;
      c.read = tokens * h_ * bpe_ + assignments * (kTokenIdBytes + kFp32);
      c.written = assignments * h_ * bpe_;
      c.m = assignments, c.n = h_;
      Compute(OpRole::kPermute, c, tp_ * rep_tok_);
    }
  }

  // Routing of this micro-batch's tokens, the dispatch, and the shared experts
  // under it (`shared`; two-batch-overlap prefill runs them in MoeOutput).
  void MoeDispatch(int64_t tokens, bool shared) {
    // Tokens sent to each ep rank, received from each, and per local expert.
    const std::vector<int64_t>& local_experts = pl_.ExpertsOfEpRank(c_ep_);
    const RoutingBlock& routing = Routing();
    const std::span<const int64_t> send(routing.send + c_ep_ * ep_, ep_);
    recv_ = std::span<const int64_t>(routing.recv + c_ep_ * ep_, ep_);
    const int64_t words = cache_.MaskWords();
    const std::span<const uint64_t> send_mask(routing.send_mask + c_ep_ * words, words);
    recv_mask_ = std::span<const uint64_t>(routing.recv_mask + c_ep_ * words, words);
    std::vector<int64_t>& per_expert = per_expert_;  // a member: no allocation per layer
    const ExpertReplicas* rep = pb_.replicas(layer_);
    if (rep != nullptr) {  // EPLB: this rank's slots
      const int64_t first = c_ep_ * rep->slots_per_rank;
      per_expert.assign(routing.expert + first, routing.expert + first + rep->slots_per_rank);
    } else {
      per_expert.resize(local_experts.size());
      for (size_t i = 0; i < local_experts.size(); ++i) {
        per_expert[i] = routing.expert[local_experts[i]];
      }
    }
    dispatch_ = -1;
    if (ep_ > 1) dispatch_ = AllToAll(OpRole::kDispatch, send, send_mask);
    if (shared) SharedExperts(tokens);
  }

  // Runs while the dispatch (or, deferred, the combine) is in flight.
  void SharedExperts(int64_t tokens) {
    const MoeSpec& moe = m_->moe;
    if (moe.num_shared_experts == 0) return;
    SplitFfn(OpRole::kSharedGateUp, OpRole::kSharedDown, OpRole::kSharedActivation,
             OpRole::kQuantSharedDown, tokens,
             moe.num_shared_experts * moe.expert_intermediate_size);
  }

  // The routed experts once the dispatch has arrived, then the combine.
  void MoeExperts() {
    if (dispatch_ >= 0) pending_.push_back(dispatch_);
    ExpertGemms(per_expert_);
    combine_ = -1;
    if (ep_ > 1) combine_ = AllToAll(OpRole::kCombine, recv_, recv_mask_);
  }

  // The layer's output once the combine has arrived: unpermute, the FFN
  // all-reduce, the residual; `shared`: the shared experts first.
  void MoeOutput(int64_t tokens, bool shared) {
    const MoeSpec& moe = m_->moe;
    const int64_t assignments = tokens * moe.experts_per_token;
    if (shared) SharedExperts(tokens);
    if (combine_ >= 0) pending_.push_back(combine_);
    combine_ = -1;
    {  // Unpermute: weighted sum of each token's expert outputs (+ the shared output).
      const bool has_shared = moe.num_shared_experts > 0;
      Cost c;
      c.flops = 2 * assignments * h_ + (has_shared ? tokens * h_ : 0);
      c.read =
          assignments * h_ * bpe_ + assignments * kFp32 + (has_shared ? tokens * h_ * bpe_ : 0);
      c.written = tokens * h_ * bpe_;
      c.m = tokens, c.n = h_;
      Compute(OpRole::kUnpermute, c, tp_ * rep_tok_);
    }
    TpAllReduce(OpRole::kFfnReduce, tokens);
    Residual(OpRole::kResidualFfn, tokens);
  }

  // Grouped GEMMs of the local experts over the tokens each received; each
  // expert's intermediate is split over tp (expert-TP). Experts that received no
  // token load no weights.
  void ExpertGemms(const std::vector<int64_t>& per_expert) {
    const int64_t local = geo_.Intermediate(m_->moe.expert_intermediate_size, c_tp_).count;
    const int64_t up = UpMatrices() * local;
    const bool bias = m_->mlp_bias;
    int64_t tokens = 0, active = 0;
    for (int64_t n : per_expert) tokens += n, active += n > 0 ? 1 : 0;
    Cost gate_up = LayerGemm(tokens, h_, up, bias);
    gate_up.weight = active * (prec_.WeightBytes(h_, up) + (bias ? up * bpe_ : 0));
    gate_up.read = prec_.InputBytes(tokens, h_) + gate_up.weight;
    Compute(OpRole::kExpertGateUp, gate_up, rep_tok_);
    if (!std::equal(per_expert.begin(), per_expert.end(), last_->expert_tokens.begin(),
                    last_->expert_tokens.end())) {
      Changed(*last_);
    }
    last_->expert_tokens.assign(per_expert.begin(), per_expert.end());
    ActivationOp(OpRole::kExpertActivation, tokens, local);
    Quantize(OpRole::kQuantExpertDown, tokens, local, rep_tok_);
    const bool down_bias = bias && c_tp_ == 0;
    Cost down = LayerGemm(tokens, local, h_, down_bias);
    down.weight = active * (prec_.WeightBytes(local, h_) + (down_bias ? h_ * bpe_ : 0));
    down.read = prec_.InputBytes(tokens, local) + down.weight;
    Compute(OpRole::kExpertDown, down, rep_tok_);
  }

  // All-to-all(v) of hidden states over the ep group: token counts to each
  // member (by ep coordinate); `to_mask` has a bit per non-zero of `to`.
  // Bytes per token follow the experiment's payload dtypes (CommunicationSpec).
  int32_t AllToAll(OpRole role, std::span<const int64_t> to, std::span<const uint64_t> to_mask) {
    int64_t total = 0;
    for (int64_t t : to) total += t;
    const int64_t token =
        role == OpRole::kDispatch ? DispatchBytesPerToken(e_, h_) : CombineBytesPerToken(e_, h_);
    const int32_t id =
        Collect(Collective::kAllToAll, Dim::kEp, role, total * token, {last_compute_});
    Op& op = *last_;
    // The non-zero entries, in position order (the sizes alone say whether
    // anything changed).
    size_t non_zero = 0;
    for (uint64_t word : to_mask) non_zero += static_cast<size_t>(std::popcount(word));
    bool same = op.peer_sends.size() == non_zero;
    op.peer_sends.resize(non_zero);  // one allocation when built
    for (size_t word = 0, w = 0; word < to_mask.size(); ++word) {
      for (uint64_t bits = to_mask[word]; bits != 0; bits &= bits - 1, ++w) {
        const size_t i = word * 64 + static_cast<size_t>(std::countr_zero(bits));
        const PeerBytes entry{static_cast<int32_t>(i), to[i] * token};
        same &= op.peer_sends[w] == entry;
        op.peer_sends[w] = entry;
      }
    }
    if (!same) Changed(op);
    return id;
  }

  const Experiment& e_;
  const ModelSpec* m_;  // the target model, or the draft model during its passes
  const Placement& pl_;
  const ProgramBuilder& pb_;
  const Precision& prec_;
  ShardGeometry geo_;  // of m_
  RoutingCache& cache_;
  const int64_t rank_;
  const bool prefill_;
  const bool low_latency_;
  const int64_t step_;

  int64_t tp_ = 1, sp_ = 1, ep_ = 1, dp_ = 1, pp_ = 1;
  int64_t c_tp_ = 0, c_sp_ = 0, c_ep_ = 0, c_dp_ = 0, c_pp_ = 0;
  int64_t bpe_ = 2, kvb_ = 2, h_ = 0, seq_ = 0;
  int64_t headb_ = 2, embb_ = 2;  // LM head and embedding weights' bytes per element
  int64_t arb_ = 2;               // TP all-reduce payload bytes per element
  int64_t rep_tok_ = 1;           // decode ops replicated over the sp group
  int64_t q_ = 1;        // decode: tokens per request in this pass (speculative verify: k + 1)
  int64_t context_ = 0;  // decode: cached tokens per request before this step
  int64_t hq_ = 0;       // query heads on this rank
  int64_t hkv_ = 0;      // GQA: KV heads on this rank
  int64_t kv_rep_ = 1;   // GQA: ranks holding each KV head (tp / kv heads when tp exceeds them)

  // Context stamped on new ops.
  int32_t layer_ = -1, mb_ = 0, sp_step_ = -1;
  uint8_t draft_ = 0;  // Op::draft: 1 + the draft model's pass, 0 for the target's ops

  const bool patch_;                 // writing over the ops of another decode step
  std::vector<Op>& ops_;             // the rank's ops (appended to, or patched)
  std::vector<int32_t>& deps_;       // their deps (appended to when building)
  std::vector<int32_t>* changed_;    // patching: ids of ops written with other costs
  size_t cursor_ = 0;                // patching: the next existing op
  bool mismatch_ = false;            // patching: the sequence differs from the existing one
  Op scratch_;                       // patching: absorbs the writes after a mismatch
  Op* last_ = nullptr;               // the op emitted last
  std::vector<int64_t> per_expert_;  // MoeFfn's tokens per local expert
  std::vector<int32_t> pending_;     // comm ops the next compute op consumes
  // Comm ops the next compute op of any micro-batch waits for (a receive that
  // holds the compute stream).
  std::vector<int32_t> stream_wait_;
  int32_t last_compute_ = -1;
  // Between a layer's halves: whether it is MoE, its dispatch, and what the
  // combine sends back.
  bool moe_layer_ = false;
  int32_t dispatch_ = -1;
  int32_t combine_ = -1;
  std::span<const int64_t> recv_;
  std::span<const uint64_t> recv_mask_;
  std::map<int64_t, int64_t> coll_seq_;             // group id → next seq
  std::map<int64_t, int64_t> send_seq_, recv_seq_;  // peer → next seq
  std::vector<PendingIds> emitted_;                 // micro-batches built, for the token id return
};

// Layers with a routing draw: the model's, and the MTP draft passes (numbered
// num_layers + d) under speculative decoding.
int64_t RoutedLayers(const Experiment& e) {
  return e.model.num_layers + (e.speculative.mtp() ? e.speculative.draft_tokens : 0);
}

// Expert slots per MoE layer: the routed experts, plus the redundant ones under EPLB.
int64_t ExpertSlots(const Experiment& e) {
  return e.model.moe.num_routed_experts + e.parallel.redundant_experts;
}

// A draft model the builder can express: pp = 1 (the draft runs on the one
// stage), draft_tensor_parallel 1 or tp, dividing the draft's heads.
Status CheckDraftModel(const Experiment& e) {
  const SpeculativeSpec& s = e.speculative;
  if (!s.draft()) return Status::Ok();
  const ModelSpec& d = s.draft_model;
  if (e.parallel.pp > 1) {
    return InvalidArgument(
        "experiment '{}': speculative decoding with a draft model and pipeline parallelism (pp "
        "{}) is not modelled",
        e.name, e.parallel.pp);
  }
  if (s.draft_tokens > kMaxDraftPasses) {
    return InvalidArgument("experiment '{}': {} draft tokens; a draft model drafts at most {}",
                           e.name, s.draft_tokens, kMaxDraftPasses);
  }
  const int64_t tp = s.DraftTp(e.parallel.tp), kv = d.num_kv_heads;
  if ((tp != 1 && tp != e.parallel.tp) || d.num_heads % tp != 0 ||
      (d.attention == AttentionKind::kGqa && (tp <= kv ? kv % tp : tp % kv) != 0) || d.is_moe() ||
      d.vocab_size != e.model.vocab_size) {
    return InvalidArgument(
        "experiment '{}': draft model '{}' (dense, vocabulary {}, {} heads, {} KV heads) cannot "
        "run at draft tensor parallelism {} beside target '{}' (tp {}, vocabulary {})",
        e.name, d.name, d.vocab_size, d.num_heads, kv, tp, e.model.name, e.parallel.tp,
        e.model.vocab_size);
  }
  return Status::Ok();
}

}  // namespace

Status CheckOpRanges(std::string_view experiment, int64_t world_size, int64_t groups) {
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  if (world_size > kMax || groups > kMax) {
    return InvalidArgument(
        "experiment '{}': {} ranks in {} groups; a program's ops hold ranks and group ids as "
        "32-bit integers (at most {} each)",
        experiment, world_size, groups, kMax);
  }
  return Status::Ok();
}

StatusOr<ProgramBuilder> ProgramBuilder::Create(const Experiment& experiment,
                                                const Placement& placement) {
  const ParallelSpec& p = experiment.parallel;
  const ModelSpec& m = experiment.model;
  const Workload& w = experiment.workload;
  if (placement.world_size() != p.world_size() || placement.num_stages() != p.pp) {
    return InvalidArgument(
        "experiment '{}': the placement ({} ranks, {} stages) does not belong "
        "to its plan ({} ranks, {} stages)",
        experiment.name, placement.world_size(), placement.num_stages(), p.world_size(), p.pp);
  }
  if (w.batch_size < 1 || w.sequence_length < 1) {
    return InvalidArgument("experiment '{}': batch_size and sequence_length must be ≥ 1",
                           experiment.name);
  }
  if (m.num_heads % p.tp != 0) {
    return InvalidArgument("experiment '{}': tp {} does not divide the {} heads", experiment.name,
                           p.tp, m.num_heads);
  }
  if (m.attention == AttentionKind::kGqa &&
      (p.tp <= m.num_kv_heads ? m.num_kv_heads % p.tp : p.tp % m.num_kv_heads) != 0) {
    return InvalidArgument("experiment '{}': tp {} and the {} KV heads do not divide each other",
                           experiment.name, p.tp, m.num_kv_heads);
  }
  RETURN_IF_ERROR(
      CheckOpRanges(experiment.name, placement.world_size(), std::ssize(placement.groups())));
  if (experiment.speculative.enabled() && p.sp > 1) {
    return InvalidArgument(
        "experiment '{}': speculative decoding with sequence parallelism (sp {}) is not modelled",
        experiment.name, p.sp);
  }
  RETURN_IF_ERROR(CheckDraftModel(experiment));
  ProgramBuilder b;
  b.experiment_ = experiment;
  b.placement_ = placement;
  b.precision_ = PrecisionOf(experiment);
  if (p.sp > 1) {
    auto layout = SpLayout::Create(p.sp_variant, w.sequence_length, p.sp);
    if (!layout.ok())
      return layout.status().WithPrefix(fmt::format("experiment '{}'", experiment.name));
    b.sp_layout_ = *layout;
  }
  if (m.is_moe()) {
    auto routing = ExpertRouting::Create(w.routing, m.moe.num_routed_experts, w.seed);
    if (!routing.ok()) {
      return routing.status().WithPrefix(fmt::format("experiment '{}'", experiment.name));
    }
    b.routing_ = *routing;
    for (int64_t layer = 0; layer < RoutedLayers(experiment); ++layer) {
      b.routing_distributions_.push_back(b.routing_->Distribution(layer));
    }
    if (p.redundant_experts > 0) {
      // EPLB per MoE layer: balanced for the measured loads (one row for all
      // layers, or one per MoE layer), else for the routing distribution.
      // An MTP block's layer balances for the routing distribution, or the
      // last measured row.
      b.replicas_.resize(static_cast<size_t>(RoutedLayers(experiment)));
      int64_t moe_index = 0;
      for (int64_t layer = 0; layer < RoutedLayers(experiment); ++layer) {
        if (layer < m.num_layers && !m.IsMoeLayer(layer)) continue;
        const size_t row = std::min(static_cast<size_t>(moe_index), p.expert_load.size() - 1);
        const std::vector<double> load =
            p.expert_load.empty() ? b.routing_distributions_[layer].p : p.expert_load[row];
        b.replicas_[layer] = BalanceExperts(load, p.redundant_experts, p.ep);
        ++moe_index;
      }
    }
  }
  // Micro-batches: as configured (0: one per stage), at most the largest
  // replica's requests, the same count everywhere.
  const int64_t replicas = p.dp * p.ep;
  const int64_t most_requests = (w.batch_size + replicas - 1) / replicas;
  const int64_t wanted = p.micro_batches > 0 ? p.micro_batches : p.pp;
  b.micro_batches_ = std::max<int64_t>(1, std::min(wanted, most_requests));
  if (experiment.two_batch_overlap) {
    // Two micro-batches per replica when it has two requests (else one batch).
    if (p.pp > 1 || p.sp > 1) {
      return InvalidArgument(
          "experiment '{}': two-batch overlap is modelled without pipeline or sequence "
          "parallelism (pp {}, sp {})",
          experiment.name, p.pp, p.sp);
    }
    b.micro_batches_ = std::min<int64_t>(2, most_requests);
  }
  return b;
}

StatusOr<PhaseProgram> ProgramBuilder::Build(Phase phase, int64_t decode_step) const {
  if (decode_step < 0 || (phase == Phase::kPrefill && decode_step != 0)) {
    return InvalidArgument("experiment '{}': no {} step {}", experiment_.name, PhaseName(phase),
                           decode_step);
  }
  PhaseProgram program;
  program.phase = phase;
  SetStep(program, decode_step);
  program.micro_batches = micro_batches_;
  RoutingCache cache(experiment_.parallel, micro_batches_, RoutedLayers(experiment_),
                     ExpertSlots(experiment_));
  program.ranks.resize(placement_.world_size());
  size_t expected_ops = 0;  // the previous rank's count: growing the vector moved every Op
  for (int64_t r = 0; r < placement_.world_size(); ++r) {
    RankProgram& rp = program.ranks[r];
    rp.rank = r;
    RankBuilder(*this, cache, r, phase, decode_step, rp).Run(expected_ops);
    expected_ops = rp.ops.size();
  }
  return program;
}

Status ProgramBuilder::Update(PhaseProgram& program, int64_t decode_step, bool* same_ops,
                              UpdatedOps* updated) const {
  if (same_ops) *same_ops = false;
  if (decode_step < 0) {
    return InvalidArgument("experiment '{}': no decode step {}", experiment_.name, decode_step);
  }
  bool ours = program.phase == Phase::kDecode && program.micro_batches == micro_batches_ &&
              static_cast<int64_t>(program.ranks.size()) == placement_.world_size();
  for (size_t r = 0; ours && r < program.ranks.size(); ++r) {
    ours = program.ranks[r].rank == static_cast<int64_t>(r);
  }
  if (!ours) {
    return InvalidArgument("experiment '{}': Update needs a decode program of this builder",
                           experiment_.name);
  }
  SetStep(program, decode_step);
  RoutingCache cache(experiment_.parallel, micro_batches_, RoutedLayers(experiment_),
                     ExpertSlots(experiment_));
  bool patched = true;  // every rank in place so far
  if (updated) updated->by_rank.assign(program.ranks.size(), {});
  for (int64_t r = 0; r < placement_.world_size(); ++r) {
    RankProgram& rp = program.ranks[r];
    const std::vector<Op>& ops = rp.ops;
    std::vector<int32_t>* changed = updated ? &updated->by_rank[r] : nullptr;
    // A rank without ops is built (RankBuilder patches existing ops only).
    const bool was_empty = ops.empty();
    bool rebuilt = was_empty;
    if (!RankBuilder(*this, cache, r, Phase::kDecode, decode_step, rp, changed).Run(0)) {
      // Another op sequence (under sp the KV append moves around the ring): rebuild.
      const size_t expected_ops = ops.size();
      rp.ops.clear();
      rp.deps.clear();
      RankBuilder(*this, cache, r, Phase::kDecode, decode_step, rp).Run(expected_ops);
      patched = false;
      rebuilt = true;
    }
    if (was_empty && !ops.empty()) patched = false;
    if (rebuilt && changed) {  // every op is new
      changed->resize(ops.size());
      for (size_t i = 0; i < ops.size(); ++i) (*changed)[i] = static_cast<int32_t>(i);
    }
  }
  if (same_ops) *same_ops = patched;
  return Status::Ok();
}

int64_t ProgramBuilder::DecodeContext(int64_t decode_step) const {
  const int64_t seq = experiment_.workload.sequence_length;
  if (!experiment_.speculative.enabled()) return seq + decode_step;
  // Deterministic-fractional: every step adds the expected accepted tokens.
  return seq + static_cast<int64_t>(std::floor(static_cast<double>(decode_step) *
                                               experiment_.speculative.TokensPerStep()));
}

void ProgramBuilder::SetStep(PhaseProgram& program, int64_t decode_step) const {
  const int64_t seq = experiment_.workload.sequence_length;
  const bool prefill = program.phase == Phase::kPrefill;
  program.step = decode_step;
  program.context_len = prefill ? 0 : DecodeContext(decode_step);
  program.new_tokens = prefill ? seq
                       : experiment_.speculative.enabled()
                           ? experiment_.speculative.draft_tokens + 1
                           : 1;
}

}  // namespace shardscope
