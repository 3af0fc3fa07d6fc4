#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>

#include "runtime/rank_status.h"

namespace shardscope::runtime {
namespace {

// Per-rank copy of a (max logit, global index) pair, as the TP all-gather moves it.
struct ArgMaxPair {
  float value = 0.0f;
  int32_t index = 0;
};
static_assert(sizeof(ArgMaxPair) == 8);

// A cache of one request in one layer: rows appended in position order
// (GQA: K and V rows; MLA: the latent [c_kv | k_rope] rows in `k`).
struct KvCache {
  std::vector<float> k, v;
  std::vector<int64_t> pos;
};

}  // namespace

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Everything a phase's micro-batch computes, by the name its ops use.
struct MicroBatch {
  std::vector<int64_t> requests;  // global request indices
  int64_t tokens = 0;             // T: rows of the activations
  int64_t local = 0;              // tokens per request
  std::vector<int64_t> pos;       // position of each row
  std::vector<int32_t> ids;       // input token id of each row
  Tensor x, hn, proj, ffn_out;    // residual stream, normed input, block outputs
  Tensor qkv, qa, kv_a, kvb;      // projections (GQA fused qkv; MLA q in qkv)
  Tensor attn, q_lat, o_lat;      // attention output (merged); MLA absorbed decode
  std::vector<Tensor> partials;   // ring attention: [T, hq·dv] then [T, hq] per step
  std::vector<Tensor> blocks;     // ring attention: the K/V block held at each step
  std::vector<Tensor> retired;    // earlier layers' blocks, alive until sends finish
  std::vector<Tensor> block_kvb;  // MLA ring: each block up-projected
  Tensor packed, gathered;        // SP decode: partial out + lse, all-gathered
  Tensor up, act;                 // dense FFN
  // MoE.
  Tensor router_logits, router_w, perm, sh_up, sh_act, shared_out;
  std::vector<int32_t> router_idx;
  std::vector<int64_t> row_of, slot_counts, send_rows;
  std::vector<int64_t> recv_counts;  // [member][local expert], member-major
  Tensor recv, expert_in, expert_up, expert_act, expert_out, combine_send, combined;
  std::vector<int64_t> expert_rows;  // rows per local expert
  // Head.
  Tensor final_hn, logits;
  std::vector<ArgMaxPair> local_best, all_best;
  std::vector<int32_t> out_ids;  // sampled token per request
  bool ids_ready = false;
};

struct Executor::State {
  std::map<std::pair<int64_t, int64_t>, KvCache> cache;  // (layer, request)
  std::map<int64_t, int32_t> next_token;                 // request → token to feed next
};

namespace {

// One op's execution within a phase; keeps the in-flight requests.
class PhaseRunner {
 public:
  PhaseRunner(const Experiment& e, const Placement& pl, int64_t rank, Kernels& k, Communicator& c,
              const Weights& w, Executor::State& st, const ExecutorOptions& options,
              const PhaseProgram& program, std::vector<OpRecord>* records,
              std::vector<SampleRecord>* samples)
      : e_(e),
        m_(e.model),
        pl_(pl),
        rank_(rank),
        k_(k),
        c_(c),
        w_(w),
        st_(st),
        opt_(options),
        prog_(program),
        records_(records),
        samples_(samples) {
    const ParallelSpec& p = e.parallel;
    tp_ = p.tp, sp_ = p.sp, ep_ = p.ep, dp_ = p.dp;
    c_tp_ = pl.Coord(rank, Dim::kTp), c_sp_ = pl.Coord(rank, Dim::kSp);
    c_ep_ = pl.Coord(rank, Dim::kEp), c_dp_ = pl.Coord(rank, Dim::kDp);
    prefill_ = program.phase == Phase::kPrefill;
    phase_index_ = prefill_ ? 0 : static_cast<int32_t>(program.step + 1);
    h_ = m_.hidden_size;
    seq_ = e.workload.sequence_length;
    hq_ = m_.num_heads / tp_;
    mla_ = m_.attention == AttentionKind::kMla;
    if (mla_) {
      nope_ = m_.mla.qk_nope_head_dim, rope_ = m_.mla.qk_rope_head_dim;
      r_ = m_.mla.kv_lora_rank, vd_ = m_.mla.v_head_dim;
      qk_ = nope_ + rope_;
      latent_ = r_ + rope_;
      rope_spec_.style = RopeStyle::kInterleaved;
    } else {
      d_ = m_.head_dim;
      hkv_ = tp_ > m_.num_kv_heads ? 1 : m_.num_kv_heads / tp_;
      qk_ = vd_ = d_;
      rope_spec_.style = RopeStyle::kHalfSplit;
    }
    rope_spec_.theta = m_.rope_theta;
    rope_spec_.scaling = m_.rope_scaling;
    double scale = 1.0 / std::sqrt(static_cast<double>(qk_));
    const RopeScaling& rs = m_.rope_scaling;
    if (mla_ && rs.kind == RopeScalingKind::kYarn && rs.mscale_all_dim > 0) {
      // DeepSeek's MLA: softmax scale × mscale(factor, mscale_all_dim)².
      const double ms = YarnMscale(rs.factor, rs.mscale_all_dim);
      scale *= ms * ms;
    }
    scale_ = static_cast<float>(scale);
  }

  Status Run() {
    if (sp_ > 1) {
      ASSIGN_OR_RETURN(layout_, SpLayout::Create(e_.parallel.sp_variant, seq_, sp_));
    }
    RETURN_IF_ERROR(SetUpMicroBatches());
    const RankProgram& rp = prog_.ranks[static_cast<size_t>(rank_)];
    PositionGuard position(opt_.position, &rp, phase_index_);
    inflight_.resize(rp.ops.size());
    for (const Op& op : rp.ops) {
      position.Enter(op.id);
      Status s;
      try {
        s = RunOp(op);
      } catch (const std::exception& ex) {  // a kernel's std::bad_alloc, a library's throw
        s = InternalError("exception: {}", ex.what());
      }
      if (!s.ok()) return Failed(op, s);
    }
    for (size_t i = 0; i < inflight_.size(); ++i) {
      position.Enter(static_cast<int32_t>(i));
      Status s = Complete(static_cast<int32_t>(i));
      if (!s.ok()) return Failed(rp.ops[i], s);
    }
    // Token ids for the next phase: from sampling, the SP broadcast or the PP return.
    for (MicroBatch& mb : mbs_) {
      if (!mb.ids_ready) continue;
      for (size_t r = 0; r < mb.requests.size(); ++r) {
        st_.next_token[mb.requests[r]] = mb.out_ids[r];
      }
    }
    if (opt_.record_ops) {
      for (Pending& p : pending_records_) records_->push_back(std::move(p.record));
    }
    return Status::Ok();
  }

 private:
  struct Inflight {
    Request request;
    int64_t record = -1;  // index into pending_records_
    bool done = true;
  };
  struct Pending {
    OpRecord record;
  };

  // Records the op this rank is in; clears the record when the phase ends.
  class PositionGuard {
   public:
    PositionGuard(OpPosition* p, const RankProgram* program, int32_t phase_index) : p_(p) {
      if (p_ == nullptr) return;
      p_->op.store(-1, std::memory_order_relaxed);
      p_->program.store(program, std::memory_order_relaxed);
      p_->phase_index.store(phase_index, std::memory_order_relaxed);
    }
    ~PositionGuard() {
      if (p_ != nullptr) p_->program.store(nullptr, std::memory_order_relaxed);
    }
    PositionGuard(const PositionGuard&) = delete;
    PositionGuard& operator=(const PositionGuard&) = delete;
    void Enter(int32_t op) {
      if (p_ != nullptr) p_->op.store(op, std::memory_order_relaxed);
    }

   private:
    OpPosition* const p_;
  };

  Status Failed(const Op& op, const Status& s) const {
    return Status(s.code(), fmt::format("rank {} failed in {}: {}", rank_,
                                        OpContext(op, phase_index_), s.message()));
  }

  // ---- Setup.

  int64_t ReplicaOffset(int64_t replica, int64_t replicas) const {
    int64_t off = 0;
    for (int64_t i = 0; i < replica; ++i) off += SplitCount(e_.workload.batch_size, replicas, i);
    return off;
  }

  Status SetUpMicroBatches() {
    const int64_t replicas = dp_ * ep_;
    const int64_t replica = c_dp_ * ep_ + c_ep_;
    const int64_t count = SplitCount(e_.workload.batch_size, replicas, replica);
    int64_t first = ReplicaOffset(replica, replicas);
    mbs_.resize(static_cast<size_t>(prog_.micro_batches));
    std::vector<int64_t> local_pos;
    if (prefill_) {
      for (int64_t p = 0; p < seq_; ++p) {
        if (sp_ == 1 || layout_->OwnerOf(p) == c_sp_) local_pos.push_back(p);
      }
    }
    for (int64_t mb = 0; mb < prog_.micro_batches; ++mb) {
      MicroBatch& b = mbs_[static_cast<size_t>(mb)];
      const int64_t n = SplitCount(count, prog_.micro_batches, mb);
      for (int64_t i = 0; i < n; ++i) b.requests.push_back(first + i);
      first += n;
      b.local = prefill_ ? static_cast<int64_t>(local_pos.size()) : 1;
      b.tokens = n * b.local;
      for (int64_t req : b.requests) {
        if (prefill_) {
          for (int64_t p : local_pos) {
            b.pos.push_back(p);
            b.ids.push_back(PromptToken(e_.workload.seed, req, p, m_.vocab_size));
          }
        } else {
          b.pos.push_back(prog_.context_len);
          auto it = st_.next_token.find(req);
          b.ids.push_back(it == st_.next_token.end() ? -1 : it->second);
        }
      }
      b.out_ids.assign(b.requests.size(), -1);
      b.x = Tensor({b.tokens, h_});
    }
    return Status::Ok();
  }

  // ---- Op loop.

  Status RunOp(const Op& op) {
    if (op.micro_batch < 0 || op.micro_batch >= static_cast<int32_t>(mbs_.size())) {
      return InternalError("micro-batch {} out of range", op.micro_batch);
    }
    if (opt_.fault.active() && opt_.fault.Matches(rank_, phase_index_, op)) {
      RETURN_IF_ERROR(InjectFault(opt_.fault));
    }
    for (int32_t d : op.deps) RETURN_IF_ERROR(Complete(d));
    MicroBatch& mb = mbs_[static_cast<size_t>(op.micro_batch)];
    Pending rec;
    rec.record.phase_index = phase_index_;
    rec.record.op = op;
    if (op.is_comm()) {
      rec.record.start_ns = NowNs();
      Inflight f;
      ASSIGN_OR_RETURN(f.request, PostComm(op, mb, &rec.record));
      f.done = false;
      f.record = static_cast<int64_t>(pending_records_.size());
      pending_records_.push_back(std::move(rec));
      inflight_[static_cast<size_t>(op.id)] = std::move(f);
    } else {
      if (op.layer >= 0 && !w_.has_layer(op.layer)) {
        return InternalError("layer {} is not on this rank's stage", op.layer);
      }
      rec.record.start_ns = NowNs();
      RETURN_IF_ERROR(RunCompute(op, mb));
      rec.record.end_ns = NowNs();
      pending_records_.push_back(std::move(rec));
    }
    return Poll();
  }

  // Drives progress and timestamps comm ops that have finished.
  Status Poll() {
    for (size_t i = 0; i < inflight_.size(); ++i) {
      Inflight& f = inflight_[i];
      if (f.done) continue;
      ASSIGN_OR_RETURN(bool done, f.request->Test());
      if (done) Finish(f);
    }
    return Status::Ok();
  }

  void Finish(Inflight& f) {
    f.done = true;
    pending_records_[static_cast<size_t>(f.record)].record.end_ns = NowNs();
    f.request.reset();
  }

  Status Complete(int32_t id) {
    if (id < 0 || id >= static_cast<int32_t>(inflight_.size())) return Status::Ok();
    Inflight& f = inflight_[static_cast<size_t>(id)];
    if (f.done) return Status::Ok();
    RETURN_IF_ERROR(f.request->Wait());
    Finish(f);
    return Status::Ok();
  }

  // ---- Communication.

  int Tag(const Op& op) const { return 1 + static_cast<int>(op.seq % 30000); }

  StatusOr<Request> PostComm(const Op& op, MicroBatch& mb, OpRecord* rec) {
    const std::string& l = op.label;
    auto floats = [&](Tensor& t) -> StatusOr<Request> {
      rec->bytes = t.size() * 4;
      return c_.AllReduce(op.group_id, t.data(), t.size());
    };
    switch (op.collective) {
      case Collective::kAllReduce:
        if (l == "embedding") return floats(mb.x);
        if (l == "attn") return floats(mb.proj);
        if (l == "ffn") return floats(mb.ffn_out);
        break;
      case Collective::kAllGather:
        if (op.dim == Dim::kTp && l == "sampling") {
          mb.all_best.resize(mb.local_best.size() * static_cast<size_t>(tp_));
          rec->bytes = static_cast<int64_t>(mb.all_best.size() * sizeof(ArgMaxPair));
          return c_.AllGather(op.group_id, mb.local_best.data(),
                              static_cast<int64_t>(mb.local_best.size() * sizeof(ArgMaxPair)),
                              mb.all_best.data());
        }
        if (op.dim == Dim::kSp && l == "attn") {
          mb.gathered = Tensor({sp_, mb.packed.size()});
          rec->bytes = mb.gathered.size() * 4;
          return c_.AllGather(op.group_id, mb.packed.data(), mb.packed.size() * 4,
                              mb.gathered.data());
        }
        break;
      case Collective::kBroadcast:
        if (l == "token_ids") {
          rec->bytes = static_cast<int64_t>(mb.out_ids.size() * 4);
          mb.ids_ready = true;
          return c_.Broadcast(op.group_id, mb.out_ids.data(), rec->bytes, op.peer);
        }
        break;
      case Collective::kSend:
      case Collective::kRecv: {
        const bool send = op.collective == Collective::kSend;
        if (op.dim == Dim::kPp && l == "activations") {
          rec->bytes = mb.x.size() * 4;
          return send ? c_.Send(op.peer, mb.x.data(), rec->bytes, Tag(op))
                      : c_.Recv(op.peer, mb.x.data(), rec->bytes, Tag(op));
        }
        if (op.dim == Dim::kPp && l == "token_ids") {
          rec->bytes = static_cast<int64_t>(mb.out_ids.size() * 4);
          if (!send) mb.ids_ready = true;
          return send ? c_.Send(op.peer, mb.out_ids.data(), rec->bytes, Tag(op))
                      : c_.Recv(op.peer, mb.out_ids.data(), rec->bytes, Tag(op));
        }
        if (op.dim == Dim::kSp && l == "kv") {
          if (mb.blocks.empty()) return InternalError("ring send before the own K/V block exists");
          const std::vector<int64_t> shape = mb.blocks.front().shape();
          if (send) {
            const Tensor& held = mb.blocks[static_cast<size_t>(op.sp_step)];
            rec->bytes = held.size() * 4;
            return c_.Send(op.peer, held.data(), rec->bytes, Tag(op));
          }
          // Blocks all have the shape of this rank's own block (S/sp tokens per request).
          // Moving a Tensor keeps its buffer, so earlier in-flight blocks stay valid.
          mb.blocks.resize(static_cast<size_t>(op.sp_step) + 2);
          Tensor& next = mb.blocks[static_cast<size_t>(op.sp_step) + 1];
          next = Tensor(shape);
          rec->bytes = next.size() * 4;
          return c_.Recv(op.peer, next.data(), rec->bytes, Tag(op));
        }
        break;
      }
      case Collective::kAllToAll:
        if (l == "dispatch") return Dispatch(op, mb, rec);
        if (l == "combine") return Combine(op, mb, rec);
        break;
      default:
        break;
    }
    return Unimplemented("not implemented: comm op {} ({} over {}) in the CPU executor", OpName(op),
                         CollectiveShortName(op.collective), DimName(op.dim));
  }

  const Group& EpGroup() const { return pl_.GroupOf(rank_, Dim::kEp); }

  StatusOr<Request> Dispatch(const Op& op, MicroBatch& mb, OpRecord* rec) {
    const Group& g = EpGroup();
    const int64_t n = static_cast<int64_t>(g.ranks.size());
    int64_t most = 0;
    for (int64_t j = 0; j < n; ++j) {
      most = std::max<int64_t>(most, static_cast<int64_t>(pl_.ExpertsOfEpRank(j).size()));
    }
    // Per member, the counts for each of its local experts (padded to `most`).
    std::vector<int64_t> send(static_cast<size_t>(n * most), 0);
    int64_t slot = 0;
    for (int64_t j = 0; j < n; ++j) {
      const auto& experts = pl_.ExpertsOfEpRank(j);
      for (size_t i = 0; i < experts.size(); ++i) send[j * most + i] = mb.slot_counts[slot++];
    }
    ASSIGN_OR_RETURN(std::vector<int64_t> recv, c_.ExchangeCounts(op.group_id, send, most));
    const int64_t mine = static_cast<int64_t>(pl_.ExpertsOfEpRank(c_ep_).size());
    mb.recv_counts.assign(static_cast<size_t>(n * mine), 0);
    std::vector<int64_t> send_f(n), recv_f(n);
    int64_t total = 0;
    for (int64_t j = 0; j < n; ++j) {
      int64_t rows = 0;
      for (int64_t i = 0; i < mine; ++i) {
        mb.recv_counts[j * mine + i] = recv[j * most + i];
        rows += recv[j * most + i];
      }
      recv_f[j] = rows * h_;
      send_f[j] = mb.send_rows[j] * h_;
      total += rows;
    }
    mb.recv = Tensor({total, h_});
    rec->bytes = 0;
    for (int64_t j = 0; j < n; ++j) {
      rec->bytes_per_peer.push_back(send_f[j] * 4);
      rec->bytes += send_f[j] * 4;
    }
    return c_.AllToAllV(op.group_id, mb.perm.data(), send_f, mb.recv.data(), recv_f);
  }

  StatusOr<Request> Combine(const Op& op, MicroBatch& mb, OpRecord* rec) {
    const int64_t n = static_cast<int64_t>(EpGroup().ranks.size());
    const int64_t mine = static_cast<int64_t>(pl_.ExpertsOfEpRank(c_ep_).size());
    std::vector<int64_t> send_f(n), recv_f(n);
    for (int64_t j = 0; j < n; ++j) {
      int64_t rows = 0;
      for (int64_t i = 0; i < mine; ++i) rows += mb.recv_counts[j * mine + i];
      send_f[j] = rows * h_;
      recv_f[j] = mb.send_rows[j] * h_;
    }
    mb.combined = Tensor({mb.perm.dim(0), h_});
    rec->bytes = 0;
    for (int64_t j = 0; j < n; ++j) {
      rec->bytes_per_peer.push_back(send_f[j] * 4);
      rec->bytes += send_f[j] * 4;
    }
    return c_.AllToAllV(op.group_id, mb.combine_send.data(), send_f, mb.combined.data(), recv_f);
  }

  // ---- Compute.

  const LayerWeights& L(const Op& op) const { return w_.layer(op.layer); }

  // y[m × n] = x[m × k] · W (+ bias); W may be a column window of a wider matrix.
  void Linear(const float* x, int64_t lda, int64_t m, int64_t kk, const Tensor& w, int64_t col,
              int64_t n, const Tensor& bias, float* y, int64_t ldc) {
    const int64_t ldw = w.dim(w.rank() - 1);
    k_.Gemm(m, n, kk, x, lda, w.data() + col, ldw, false, y, ldc, 0.0f);
    if (!bias.empty()) {
      for (int64_t i = 0; i < m; ++i) k_.Add(bias.data() + col, y + i * ldc, n);
    }
  }
  Tensor Linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
    const int64_t m = x.rank() == 2 ? x.dim(0) : 0;
    Tensor y({m, w.dim(1)});
    Linear(x.data(), x.dim(1), m, x.dim(1), w, 0, w.dim(1), bias, y.data(), w.dim(1));
    return y;
  }

  void Norm(const Tensor& x, const Tensor& w, Tensor* y) {
    *y = Tensor(x.shape());
    k_.RmsNorm(x.data(), x.dim(1), w.data(), y->data(), y->dim(1), x.dim(0), x.dim(1),
               static_cast<float>(m_.norm_eps));
  }

  void Activation(const Tensor& up, Tensor* act) {
    const int64_t m = up.dim(0);
    if (m_.activation == Activation::kSwiGlu) {
      *act = Tensor({m, up.dim(1) / 2});
      k_.SwiGlu(up.data(), m, up.dim(1) / 2, act->data());
    } else {
      *act = Tensor(up.shape());
      k_.Gelu(up.data(), up.size(), act->data());
    }
  }

  Status RunCompute(const Op& op, MicroBatch& mb) {
    const std::string& l = op.label;
    const int64_t T = mb.tokens;
    switch (op.kind) {
      case OpKind::kEmbedding:
        for (int32_t id : mb.ids) {
          if (id < 0) return InternalError("no input token for a request (missing prefill?)");
        }
        k_.Embedding(mb.ids.data(), T, w_.embedding().data(), w_.vocab().begin, w_.vocab().count,
                     h_, mb.x.data());
        return Status::Ok();
      case OpKind::kNorm:
        if (l == "input") return Norm(mb.x, L(op).input_norm, &mb.hn), Status::Ok();
        if (l == "post_attention") return Norm(mb.x, L(op).post_norm, &mb.hn), Status::Ok();
        if (l == "q_a") return Norm(mb.qa, L(op).q_a_norm, &mb.qa), Status::Ok();
        if (l == "kv_a") {
          k_.RmsNorm(mb.kv_a.data(), latent_, L(op).kv_a_norm.data(), mb.kv_a.data(), latent_, T,
                     r_, static_cast<float>(m_.norm_eps));
          return Status::Ok();
        }
        if (l == "final") return HeadNorm(mb);
        break;
      case OpKind::kQkvProj: {
        const LayerWeights& lw = L(op);
        mb.qkv = Linear(mb.hn, lw.qkv, lw.qkv_bias);
        return Status::Ok();
      }
      case OpKind::kQProj: {
        const LayerWeights& lw = L(op);
        if (!mla_ && l == "q") {  // GQA with replicated KV heads: the q columns alone
          mb.qkv = Tensor({T, lw.qkv.dim(1)});
          Linear(mb.hn.data(), h_, T, h_, lw.qkv, 0, hq_ * d_, lw.qkv_bias, mb.qkv.data(),
                 lw.qkv.dim(1));
          return Status::Ok();
        }
        if (l == "q") return mb.qkv = Linear(mb.hn, lw.q, Tensor()), Status::Ok();
        if (l == "q_a") return mb.qa = Linear(mb.hn, lw.q_a, lw.q_a_bias), Status::Ok();
        if (l == "q_b") return mb.qkv = Linear(mb.qa, lw.q_b, Tensor()), Status::Ok();
        break;
      }
      case OpKind::kKvProj: {
        const LayerWeights& lw = L(op);
        if (!mla_ && l == "kv") {
          const int64_t at = hq_ * d_;
          Linear(mb.hn.data(), h_, T, h_, lw.qkv, at, 2 * hkv_ * d_, lw.qkv_bias,
                 mb.qkv.data() + at, lw.qkv.dim(1));
          return Status::Ok();
        }
        if (l == "kv_a") return mb.kv_a = Linear(mb.hn, lw.kv_a, lw.kv_a_bias), Status::Ok();
        break;
      }
      case OpKind::kRope:
        return RunRope(op, mb);
      case OpKind::kKvAppend:
        return KvAppend(op, mb);
      case OpKind::kKvUpProj:
        return KvUpProj(op, mb);
      case OpKind::kAttention:
        return op.sp_step >= 0 ? RingStep(op, mb) : PrefillAttention(mb);
      case OpKind::kAttentionDecode:
        return DecodeAttention(op, mb);
      case OpKind::kAttentionMerge:
        return Merge(mb);
      case OpKind::kOutProj: {
        const LayerWeights& lw = L(op);
        mb.proj = Linear(mb.attn, lw.o, lw.o_bias);
        return Status::Ok();
      }
      case OpKind::kResidualAdd:
        if (l == "attn") return k_.Add(mb.proj.data(), mb.x.data(), mb.x.size()), Status::Ok();
        if (l == "ffn") return k_.Add(mb.ffn_out.data(), mb.x.data(), mb.x.size()), Status::Ok();
        break;
      case OpKind::kFfnUp: {
        const ExpertWeights& f = L(op).ffn;
        mb.up = Linear(mb.hn, f.gate_up, f.gate_up_bias);
        return Status::Ok();
      }
      case OpKind::kActivation:
        if (l == "ffn") return Activation(mb.up, &mb.act), Status::Ok();
        if (l == "shared") return Activation(mb.sh_up, &mb.sh_act), Status::Ok();
        if (l == "expert") return Activation(mb.expert_up, &mb.expert_act), Status::Ok();
        break;
      case OpKind::kFfnDown: {
        const ExpertWeights& f = L(op).ffn;
        mb.ffn_out = Linear(mb.act, f.down, f.down_bias);
        return Status::Ok();
      }
      case OpKind::kRouter:
        return Router(op, mb);
      case OpKind::kPermute:
        return Permute(mb);
      case OpKind::kSharedExpert: {
        const ExpertWeights& f = L(op).shared;
        if (l == "gate_up")
          return mb.sh_up = Linear(mb.hn, f.gate_up, f.gate_up_bias), Status::Ok();
        if (l == "down") {
          mb.shared_out = Linear(mb.sh_act, f.down, f.down_bias);
          return Status::Ok();
        }
        break;
      }
      case OpKind::kExpertGemm:
        return ExpertGemm(op, mb);
      case OpKind::kUnpermute: {
        const Tensor& y = ep_ > 1 ? mb.combined : mb.expert_out;
        mb.ffn_out = Tensor({T, h_});
        const int64_t topk = m_.moe.experts_per_token;
        k_.Unpermute(y.data(), T, h_, mb.row_of.data(), mb.router_w.data(), topk,
                     mb.shared_out.empty() ? nullptr : mb.shared_out.data(), mb.ffn_out.data());
        return Status::Ok();
      }
      case OpKind::kLmHead:
        mb.logits = Tensor({mb.final_hn.dim(0), w_.vocab().count});
        LmHead(k_, mb.final_hn.data(), mb.final_hn.dim(0), h_, w_.lm_head().data(),
               w_.vocab().count, mb.logits.data());
        return Status::Ok();
      case OpKind::kSampling:
        return Sampling(op, mb);
      default:
        break;
    }
    return Unimplemented("not implemented: op {} (kind {}, label '{}') in the CPU executor",
                         OpName(op), OpKindName(op.kind), l);
  }

  Status RunRope(const Op& op, MicroBatch& mb) {
    const std::string& l = op.label;
    const int64_t T = mb.tokens;
    const int64_t* pos = mb.pos.data();
    if (!mla_) {
      const int64_t stride = mb.qkv.dim(1);
      if (l.empty() || l == "q") {
        k_.Rope(mb.qkv.data(), T, stride, hq_, d_, d_, pos, rope_spec_);
      }
      if (l.empty() || l == "k") {
        k_.Rope(mb.qkv.data() + hq_ * d_, T, stride, hkv_, d_, d_, pos, rope_spec_);
      }
      return Status::Ok();
    }
    if (l == "q") {
      k_.Rope(mb.qkv.data() + nope_, T, hq_ * qk_, hq_, qk_, rope_, pos, rope_spec_);
      return Status::Ok();
    }
    if (l == "k") {
      k_.Rope(mb.kv_a.data() + r_, T, latent_, 1, rope_, rope_, pos, rope_spec_);
      return Status::Ok();
    }
    return Unimplemented("not implemented: rope label '{}'", l);
  }

  // The K/V rows of this rank's new tokens: GQA [T, 2·hkv·d] (K | V), MLA the latent rows.
  Tensor OwnBlock(const MicroBatch& mb) {
    if (mla_) return mb.kv_a.Clone();
    Tensor b({mb.tokens, 2 * hkv_ * d_});
    k_.CopyRows(mb.qkv.data() + hq_ * d_, mb.qkv.dim(1), b.data(), 2 * hkv_ * d_, mb.tokens,
                2 * hkv_ * d_);
    return b;
  }

  Status KvAppend(const Op& op, MicroBatch& mb) {
    Tensor block = OwnBlock(mb);
    const int64_t width = mla_ ? latent_ : hkv_ * d_;
    for (size_t r = 0; r < mb.requests.size(); ++r) {
      KvCache& c = st_.cache[{op.layer, mb.requests[r]}];
      for (int64_t t = 0; t < mb.local; ++t) {
        const int64_t row = static_cast<int64_t>(r) * mb.local + t;
        const float* src = block.data() + row * block.dim(1);
        c.k.insert(c.k.end(), src, src + width);
        if (!mla_) c.v.insert(c.v.end(), src + width, src + 2 * width);
        c.pos.push_back(mb.pos[static_cast<size_t>(row)]);
      }
    }
    if (prefill_ && sp_ > 1) {
      // A ring send may still read the previous layer's blocks: keep them to the phase end.
      for (Tensor& b : mb.blocks) mb.retired.push_back(std::move(b));
      mb.blocks.clear();
      mb.partials.clear();
      mb.block_kvb.clear();
      mb.blocks.push_back(std::move(block));
    }
    return Status::Ok();
  }

  // MLA: per-head K = [k_nope | shared k_rope] and V from a latent block and its up-projection.
  void ExpandMla(const Tensor& latent, const Tensor& kvb, Tensor* k, Tensor* v) {
    const int64_t n = latent.dim(0), per = nope_ + vd_;
    *k = Tensor({n, hq_ * qk_});
    *v = Tensor({n, hq_ * vd_});
    for (int64_t h = 0; h < hq_; ++h) {
      k_.CopyRows(kvb.data() + h * per, hq_ * per, k->data() + h * qk_, hq_ * qk_, n, nope_);
      k_.CopyRows(latent.data() + r_, latent_, k->data() + h * qk_ + nope_, hq_ * qk_, n, rope_);
      k_.CopyRows(kvb.data() + h * per + nope_, hq_ * per, v->data() + h * vd_, hq_ * vd_, n, vd_);
    }
  }

  Status KvUpProj(const Op& op, MicroBatch& mb) {
    const LayerWeights& lw = L(op);
    const std::string& l = op.label;
    const int64_t per = nope_ + vd_;
    const int64_t R = static_cast<int64_t>(mb.requests.size());
    if (l == "kv_b") {
      const Tensor& src = op.sp_step >= 0 ? mb.blocks[static_cast<size_t>(op.sp_step)] : mb.kv_a;
      Tensor out({src.dim(0), hq_ * per});
      Linear(src.data(), latent_, src.dim(0), r_, lw.kv_b, 0, hq_ * per, Tensor(), out.data(),
             hq_ * per);
      if (op.sp_step >= 0) {
        mb.block_kvb.resize(static_cast<size_t>(op.sp_step) + 1);
        mb.block_kvb[static_cast<size_t>(op.sp_step)] = std::move(out);
      } else {
        mb.kvb = std::move(out);
      }
      return Status::Ok();
    }
    if (l == "uk") {  // absorb W_UK into the query; keep q_rope beside it
      mb.q_lat = Tensor({R, hq_ * latent_});
      for (int64_t h = 0; h < hq_; ++h) {
        k_.Gemm(R, r_, nope_, mb.qkv.data() + h * qk_, hq_ * qk_, lw.kv_b.data() + h * per,
                hq_ * per, true, mb.q_lat.data() + h * latent_, hq_ * latent_, 0.0f);
        k_.CopyRows(mb.qkv.data() + h * qk_ + nope_, hq_ * qk_, mb.q_lat.data() + h * latent_ + r_,
                    hq_ * latent_, R, rope_);
      }
      return Status::Ok();
    }
    if (l == "uv") {
      mb.attn = Tensor({R, hq_ * vd_});
      for (int64_t h = 0; h < hq_; ++h) {
        k_.Gemm(R, vd_, r_, mb.o_lat.data() + h * r_, hq_ * r_, lw.kv_b.data() + h * per + nope_,
                hq_ * per, false, mb.attn.data() + h * vd_, hq_ * vd_, 0.0f);
      }
      return Status::Ok();
    }
    return Unimplemented("not implemented: kv_up_proj label '{}'", l);
  }

  // Attention of each request's queries over one K/V set (same rows per request).
  void AttendPerRequest(const MicroBatch& mb, const float* k, int64_t k_stride, const float* v,
                        int64_t v_stride, int64_t kv_heads, const std::vector<int64_t>& kpos,
                        int64_t keys_per_request, Tensor* out, Tensor* lse) {
    const float* q = mb.qkv.data();
    const int64_t q_stride = mb.qkv.dim(1);
    for (size_t r = 0; r < mb.requests.size(); ++r) {
      const int64_t q0 = static_cast<int64_t>(r) * mb.local;
      const int64_t k0 = static_cast<int64_t>(r) * keys_per_request;
      AttentionArgs a;
      a.q = q + q0 * q_stride, a.q_stride = q_stride;
      a.k = k + k0 * k_stride, a.k_stride = k_stride;
      a.v = v + k0 * v_stride, a.v_stride = v_stride;
      a.tq = mb.local, a.tk = keys_per_request, a.hq = hq_, a.hkv = kv_heads;
      a.dqk = qk_, a.dv = vd_, a.qpos = mb.pos.data() + q0, a.kpos = kpos.data();
      a.scale = scale_;
      a.out = out->data() + q0 * hq_ * vd_, a.out_stride = hq_ * vd_;
      a.lse = lse ? lse->data() + q0 * hq_ : nullptr;
      k_.Attention(a);
    }
  }

  Status PrefillAttention(MicroBatch& mb) {
    mb.attn = Tensor({mb.tokens, hq_ * vd_});
    const std::vector<int64_t> kpos(mb.pos.begin(), mb.pos.begin() + mb.local);
    if (mla_) {
      Tensor k, v;
      ExpandMla(mb.kv_a, mb.kvb, &k, &v);
      AttendPerRequest(mb, k.data(), hq_ * qk_, v.data(), hq_ * vd_, hq_, kpos, mb.local, &mb.attn,
                       nullptr);
    } else {
      const int64_t stride = mb.qkv.dim(1);
      AttendPerRequest(mb, mb.qkv.data() + hq_ * d_, stride, mb.qkv.data() + (hq_ + hkv_) * d_,
                       stride, hkv_, kpos, mb.local, &mb.attn, nullptr);
    }
    return Status::Ok();
  }

  // Ring step j: this rank's queries over the block that came from rank (c − j) mod sp.
  Status RingStep(const Op& op, MicroBatch& mb) {
    const size_t j = static_cast<size_t>(op.sp_step);
    if (j >= mb.blocks.size()) return InternalError("ring block {} has not arrived", j);
    const int64_t src = (c_sp_ - static_cast<int64_t>(j) + sp_) % sp_;
    std::vector<int64_t> kpos;
    for (int64_t p = 0; p < seq_; ++p) {
      if (layout_->OwnerOf(p) == src) kpos.push_back(p);
    }
    Tensor out({mb.tokens, hq_ * vd_}), lse({mb.tokens, hq_});
    const Tensor& block = mb.blocks[j];
    const int64_t n = static_cast<int64_t>(kpos.size());
    if (mla_) {
      if (j >= mb.block_kvb.size()) return InternalError("ring block {} not up-projected", j);
      Tensor k, v;
      ExpandMla(block, mb.block_kvb[j], &k, &v);
      AttendPerRequest(mb, k.data(), hq_ * qk_, v.data(), hq_ * vd_, hq_, kpos, n, &out, &lse);
    } else {
      const int64_t stride = 2 * hkv_ * d_;
      AttendPerRequest(mb, block.data(), stride, block.data() + hkv_ * d_, stride, hkv_, kpos, n,
                       &out, &lse);
    }
    mb.partials.push_back(std::move(out));
    mb.partials.push_back(std::move(lse));
    return Status::Ok();
  }

  Status DecodeAttention(const Op& op, MicroBatch& mb) {
    const int64_t R = static_cast<int64_t>(mb.requests.size());
    DecodeAttentionArgs a;
    a.hq = hq_, a.scale = scale_;
    if (mla_) {
      a.q = mb.q_lat.data(), a.q_stride = hq_ * latent_;
      a.k_stride = a.v_stride = latent_, a.hkv = 1, a.dqk = latent_, a.dv = r_;
    } else {
      a.q = mb.qkv.data(), a.q_stride = mb.qkv.dim(1);
      a.k_stride = a.v_stride = hkv_ * d_, a.hkv = hkv_, a.dqk = a.dv = d_;
    }
    for (int64_t req : mb.requests) {
      KvCache& c = st_.cache[{op.layer, req}];
      a.k.push_back(c.k.data());
      a.v.push_back(mla_ ? c.k.data() : c.v.data());
      a.len.push_back(static_cast<int64_t>(c.pos.size()));
    }
    Tensor& out = mla_ ? mb.o_lat : mb.attn;
    if (sp_ == 1) {
      out = Tensor({R, hq_ * a.dv});
      a.out = out.data(), a.out_stride = hq_ * a.dv;
      k_.DecodeAttention(a);
      return Status::Ok();
    }
    // Partial over this rank's shard of the cache: [R·hq·dv outputs | R·hq lse].
    mb.packed = Tensor({R * hq_ * (a.dv + 1)});
    a.out = mb.packed.data(), a.out_stride = hq_ * a.dv, a.lse = mb.packed.data() + R * hq_ * a.dv;
    k_.DecodeAttention(a);
    return Status::Ok();
  }

  Status Merge(MicroBatch& mb) {
    std::vector<const float*> outs, lses;
    if (prefill_) {
      for (size_t i = 0; i + 1 < mb.partials.size(); i += 2) {
        outs.push_back(mb.partials[i].data());
        lses.push_back(mb.partials[i + 1].data());
      }
      mb.attn = Tensor({mb.tokens, hq_ * vd_});
      k_.AttentionMerge(outs, lses, mb.tokens * hq_, vd_, mb.attn.data(), nullptr);
      mb.partials.clear();
      return Status::Ok();
    }
    const int64_t R = static_cast<int64_t>(mb.requests.size());
    const int64_t dv = mla_ ? r_ : vd_;
    const int64_t part = R * hq_ * (dv + 1);
    for (int64_t s = 0; s < sp_; ++s) {
      outs.push_back(mb.gathered.data() + s * part);
      lses.push_back(mb.gathered.data() + s * part + R * hq_ * dv);
    }
    Tensor& out = mla_ ? mb.o_lat : mb.attn;
    out = Tensor({R, hq_ * dv});
    k_.AttentionMerge(outs, lses, R * hq_, dv, out.data(), nullptr);
    return Status::Ok();
  }

  // ---- MoE.

  Status Router(const Op& op, MicroBatch& mb) {
    const LayerWeights& lw = L(op);
    const MoeSpec& moe = m_.moe;
    const int64_t T = mb.tokens;
    mb.router_logits = Linear(mb.hn, lw.router, Tensor());
    RouterArgs a;
    a.experts = moe.num_routed_experts;
    a.top_k = moe.experts_per_token;
    if (moe.router == RouterKind::kSigmoidBias) {
      a.kind = RouterScore::kSigmoidBias;
      a.n_group = moe.n_group, a.topk_group = moe.topk_group;
      a.bias = lw.router_bias.data();
    }
    a.normalize = moe.norm_topk_prob;
    a.scale = moe.routed_scaling_factor;
    mb.router_idx.assign(static_cast<size_t>(T * a.top_k), 0);
    mb.router_w = Tensor({T * a.top_k});
    k_.Router(mb.router_logits.data(), T, a, mb.router_idx.data(), mb.router_w.data());
    return Status::Ok();
  }

  // Groups the assignments by EP rank, then by that rank's experts (slot order).
  Status Permute(MicroBatch& mb) {
    const int64_t E = m_.moe.num_routed_experts, topk = m_.moe.experts_per_token;
    const int64_t n = ep_;
    std::vector<int32_t> slot_of(static_cast<size_t>(E));
    mb.send_rows.assign(static_cast<size_t>(n), 0);
    int32_t slot = 0;
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t x : pl_.ExpertsOfEpRank(j)) slot_of[static_cast<size_t>(x)] = slot++;
    }
    std::vector<int32_t> slots(mb.router_idx.size());
    for (size_t a = 0; a < slots.size(); ++a) slots[a] = slot_of[mb.router_idx[a]];
    mb.perm = Tensor({mb.tokens * topk, h_});
    mb.row_of.assign(slots.size(), 0);
    mb.slot_counts.assign(static_cast<size_t>(E), 0);
    k_.Permute(mb.hn.data(), mb.tokens, h_, slots.data(), topk, E, mb.perm.data(), mb.row_of.data(),
               mb.slot_counts.data());
    slot = 0;
    for (int64_t j = 0; j < n; ++j) {
      for (size_t i = 0; i < pl_.ExpertsOfEpRank(j).size(); ++i) {
        mb.send_rows[j] += mb.slot_counts[slot++];
      }
    }
    return Status::Ok();
  }

  Status ExpertGemm(const Op& op, MicroBatch& mb) {
    const LayerWeights& lw = L(op);
    const int64_t mine = static_cast<int64_t>(lw.experts.size());
    if (op.label == "gate_up") {
      // Rows per local expert, gathered expert-major from source-major arrivals.
      const int64_t n = ep_ > 1 ? ep_ : 1;
      const Tensor& in = ep_ > 1 ? mb.recv : mb.perm;
      std::vector<int64_t> counts(static_cast<size_t>(n * mine));
      if (ep_ > 1) {
        counts = mb.recv_counts;
      } else {
        for (int64_t i = 0; i < mine; ++i) counts[i] = mb.slot_counts[i];
      }
      mb.expert_rows.assign(static_cast<size_t>(mine), 0);
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < mine; ++i) mb.expert_rows[i] += counts[j * mine + i];
      }
      mb.expert_in = Tensor({in.dim(0), h_});
      // Source-major offset of (j, i) → expert-major offset.
      std::vector<int64_t> exp_off(static_cast<size_t>(mine), 0);
      for (int64_t i = 1; i < mine; ++i) exp_off[i] = exp_off[i - 1] + mb.expert_rows[i - 1];
      int64_t src = 0;
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < mine; ++i) {
          const int64_t c = counts[j * mine + i];
          k_.CopyRows(in.data() + src * h_, h_, mb.expert_in.data() + exp_off[i] * h_, h_, c, h_);
          exp_off[i] += c, src += c;
        }
      }
      const int64_t width = lw.experts.empty() ? 0 : lw.experts[0].gate_up.dim(1);
      mb.expert_up = Tensor({in.dim(0), width});
      int64_t row = 0;
      for (int64_t i = 0; i < mine; ++i) {
        const ExpertWeights& f = lw.experts[static_cast<size_t>(i)];
        const int64_t c = mb.expert_rows[i];
        Linear(mb.expert_in.data() + row * h_, h_, c, h_, f.gate_up, 0, width, f.gate_up_bias,
               mb.expert_up.data() + row * width, width);
        row += c;
      }
      return Status::Ok();
    }
    if (op.label == "down") {
      const int64_t inter = mb.expert_act.dim(1);
      mb.expert_out = Tensor({mb.expert_act.dim(0), h_});
      int64_t row = 0;
      for (int64_t i = 0; i < mine; ++i) {
        const ExpertWeights& f = lw.experts[static_cast<size_t>(i)];
        const int64_t c = mb.expert_rows[i];
        Linear(mb.expert_act.data() + row * inter, inter, c, inter, f.down, 0, h_, f.down_bias,
               mb.expert_out.data() + row * h_, h_);
        row += c;
      }
      if (ep_ > 1) {  // back to source-major order for the combine
        mb.combine_send = Tensor({mb.expert_out.dim(0), h_});
        std::vector<int64_t> exp_off(static_cast<size_t>(mine), 0);
        for (int64_t i = 1; i < mine; ++i) exp_off[i] = exp_off[i - 1] + mb.expert_rows[i - 1];
        int64_t dst = 0;
        for (int64_t j = 0; j < ep_; ++j) {
          for (int64_t i = 0; i < mine; ++i) {
            const int64_t c = mb.recv_counts[j * mine + i];
            k_.CopyRows(mb.expert_out.data() + exp_off[i] * h_, h_,
                        mb.combine_send.data() + dst * h_, h_, c, h_);
            exp_off[i] += c, dst += c;
          }
        }
      }
      return Status::Ok();
    }
    return Unimplemented("not implemented: expert_gemm label '{}'", op.label);
  }

  // ---- Head.

  Status HeadNorm(MicroBatch& mb) {
    const int64_t R = static_cast<int64_t>(mb.requests.size());
    Tensor rows({R, h_});
    for (int64_t r = 0; r < R; ++r) {
      int64_t row = -1;
      for (int64_t t = 0; t < mb.local; ++t) {
        if (!prefill_ || mb.pos[static_cast<size_t>(r * mb.local + t)] == seq_ - 1) {
          row = r * mb.local + t;
        }
      }
      if (row < 0) return InternalError("the last prompt token of a request is not on this rank");
      k_.CopyRows(mb.x.data() + row * h_, h_, rows.data() + r * h_, h_, 1, h_);
    }
    mb.final_hn = Tensor({R, h_});
    k_.RmsNorm(rows.data(), h_, w_.final_norm().data(), mb.final_hn.data(), h_, R, h_,
               static_cast<float>(m_.norm_eps));
    return Status::Ok();
  }

  Status Sampling(const Op& op, MicroBatch& mb) {
    const int64_t R = static_cast<int64_t>(mb.requests.size());
    const int64_t V = w_.vocab().count;
    if (op.label.empty() || op.label == "local") {
      std::vector<float> mx(static_cast<size_t>(R));
      std::vector<int32_t> idx(static_cast<size_t>(R));
      k_.ArgMax(mb.logits.data(), R, V, w_.vocab().begin, mx.data(), idx.data());
      mb.local_best.resize(static_cast<size_t>(R));
      for (int64_t r = 0; r < R; ++r) mb.local_best[r] = {mx[r], idx[r]};
      if (op.label.empty()) {
        mb.out_ids = idx;
        Sampled(mb);
      }
      return Status::Ok();
    }
    if (op.label == "select") {  // the largest of the tp shards' maxima; lower index on ties
      for (int64_t r = 0; r < R; ++r) {
        ArgMaxPair best = mb.all_best[r];
        for (int64_t s = 1; s < tp_; ++s) {
          const ArgMaxPair& c = mb.all_best[s * R + r];
          if (c.value > best.value || (c.value == best.value && c.index < best.index)) best = c;
        }
        mb.out_ids[r] = best.index;
      }
      Sampled(mb);
      return Status::Ok();
    }
    return Unimplemented("not implemented: sampling label '{}'", op.label);
  }

  void Sampled(MicroBatch& mb) {
    mb.ids_ready = true;
    const int64_t V = w_.vocab().count;
    for (size_t r = 0; r < mb.requests.size(); ++r) {
      SampleRecord s;
      s.phase_index = phase_index_;
      s.request = mb.requests[r];
      s.token = mb.out_ids[r];
      s.vocab_begin = w_.vocab().begin;
      if (opt_.keep_logits) {
        s.logits.assign(mb.logits.data() + r * V, mb.logits.data() + (r + 1) * V);
      }
      samples_->push_back(std::move(s));
    }
  }

  const Experiment& e_;
  const ModelSpec& m_;
  const Placement& pl_;
  const int64_t rank_;
  Kernels& k_;
  Communicator& c_;
  const Weights& w_;
  Executor::State& st_;
  const ExecutorOptions& opt_;
  const PhaseProgram& prog_;
  std::vector<OpRecord>* records_;
  std::vector<SampleRecord>* samples_;

  int64_t tp_ = 1, sp_ = 1, ep_ = 1, dp_ = 1;
  int64_t c_tp_ = 0, c_sp_ = 0, c_ep_ = 0, c_dp_ = 0;
  bool prefill_ = true, mla_ = false;
  int32_t phase_index_ = 0;
  int64_t h_ = 0, seq_ = 0, hq_ = 0, hkv_ = 1, d_ = 0;
  int64_t nope_ = 0, rope_ = 0, r_ = 0, vd_ = 0, qk_ = 0, latent_ = 0;
  float scale_ = 1.0f;
  RopeSpec rope_spec_;
  std::optional<SpLayout> layout_;
  std::vector<MicroBatch> mbs_;
  std::vector<Inflight> inflight_;
  std::vector<Pending> pending_records_;
};

}  // namespace

Executor::Executor(const Experiment& e, const Placement& pl, int64_t rank, Kernels* k,
                   Communicator* c, const ExecutorOptions& o, Weights w)
    : experiment_(e),
      placement_(pl),
      rank_(rank),
      kernels_(k),
      comm_(c),
      options_(o),
      weights_(std::move(w)),
      state_(std::make_unique<State>()) {}

Executor::~Executor() = default;

StatusOr<std::unique_ptr<Executor>> Executor::Create(const Experiment& experiment,
                                                     const Placement& placement, Kernels* kernels,
                                                     Communicator* comm,
                                                     const ExecutorOptions& options) {
  const int64_t rank = comm->rank();
  if (placement.world_size() != comm->world_size()) {
    return InvalidArgument("experiment '{}' needs {} ranks, the communicator has {}",
                           experiment.name, placement.world_size(), comm->world_size());
  }
  ASSIGN_OR_RETURN(Weights w, Weights::Create(experiment, placement, rank));
  return std::unique_ptr<Executor>(
      new Executor(experiment, placement, rank, kernels, comm, options, std::move(w)));
}

void Executor::Reset() {
  state_ = std::make_unique<State>();
  records_.clear();
  samples_.clear();
}

Status Executor::Run(const PhaseProgram& program) {
  if (static_cast<int64_t>(program.ranks.size()) != placement_.world_size()) {
    return InvalidArgument("the Program has {} ranks, the plan {}", program.ranks.size(),
                           placement_.world_size());
  }
  PhaseRunner runner(experiment_, placement_, rank_, *kernels_, *comm_, weights_, *state_, options_,
                     program, &records_, &samples_);
  return runner.Run();
}

Status RunGeneration(const ProgramBuilder& builder, Executor& executor) {
  executor.Reset();
  ASSIGN_OR_RETURN(PhaseProgram prefill, builder.Build(Phase::kPrefill, 0));
  RETURN_IF_ERROR(executor.Run(prefill));
  const int64_t steps = builder.experiment().workload.tokens_to_generate - 1;
  for (int64_t k = 0; k < steps; ++k) {
    ASSIGN_OR_RETURN(PhaseProgram step, builder.Build(Phase::kDecode, k));
    RETURN_IF_ERROR(executor.Run(step));
  }
  return Status::Ok();
}

}  // namespace shardscope::runtime
