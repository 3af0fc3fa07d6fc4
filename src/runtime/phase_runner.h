// PhaseRunner: one phase of one rank's Program on real tensors, for the
// Executor. The op loop is runtime/phase_runner.cc; the op families live
// beside it: communication (comm_ops.cc), attention with the ring / SP forms
// (attention_ops.cc), MoE (moe_ops.cc), the head and sampling (head_ops.cc).
// Internal to the runtime; one per Executor::Run, not thread-safe.
#ifndef SHARDSCOPE_RUNTIME_PHASE_RUNNER_H_
#define SHARDSCOPE_RUNTIME_PHASE_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/executor.h"

namespace shardscope::runtime {

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

// Runs one phase's ops of this rank, in list order; keeps the in-flight requests.
class PhaseRunner {
 public:
  PhaseRunner(const Experiment& e, const Placement& pl, int64_t rank, Kernels& k, Communicator& c,
              const Weights& w, Executor::State& st, const ExecutorOptions& options,
              const PhaseProgram& program, std::vector<OpRecord>* records,
              std::vector<SampleRecord>* samples);

  Status Run();

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
      if (p_ == nullptr) return;
      p_->op.store(op, std::memory_order_relaxed);
      p_->entered.fetch_add(1, std::memory_order_relaxed);
    }

   private:
    OpPosition* const p_;
  };

  Status Failed(const Op& op, const Status& s) const;

  // ---- Setup.

  Status SetUpMicroBatches();

  // ---- Op loop.

  Status RunOp(const Op& op);

  // Drives progress and timestamps comm ops that have finished.
  Status Poll();

  void Finish(Inflight& f);

  Status Complete(int32_t id);

  // ---- Communication.

  int Tag(const Op& op) const { return 1 + static_cast<int>(op.seq % 30000); }

  // One case per role and no default: -Werror=switch names a role left out.
  StatusOr<Request> PostComm(const Op& op, MicroBatch& mb, OpRecord* rec);

  const Group& EpGroup() const { return pl_.GroupOf(rank_, Dim::kEp); }

  StatusOr<Request> Dispatch(const Op& op, MicroBatch& mb, OpRecord* rec);

  StatusOr<Request> Combine(const Op& op, MicroBatch& mb, OpRecord* rec);

  // ---- Compute.

  const LayerWeights& L(const Op& op) const { return w_.layer(op.layer); }

  // y[m × n] = x[m × k] · W (+ bias); W may be a column window of a wider matrix.
  void Linear(const float* x, int64_t lda, int64_t m, int64_t kk, const Tensor& w, int64_t col,
              int64_t n, const Tensor& bias, float* y, int64_t ldc);
  Tensor Linear(const Tensor& x, const Tensor& w, const Tensor& bias);

  void Norm(const Tensor& x, const Tensor& w, Tensor* y);

  void Activation(const Tensor& up, Tensor* act);

  // One case per role and no default: -Werror=switch names a role left out.
  Status RunCompute(const Op& op, MicroBatch& mb);

  Status RunRope(const Op& op, MicroBatch& mb);

  // The K/V rows of this rank's new tokens: GQA [T, 2·hkv·d] (K | V), MLA the latent rows.
  Tensor OwnBlock(const MicroBatch& mb);

  Status KvAppend(const Op& op, MicroBatch& mb);

  // MLA: per-head K = [k_nope | shared k_rope] and V from a latent block and its up-projection.
  void ExpandMla(const Tensor& latent, const Tensor& kvb, Tensor* k, Tensor* v);

  Status KvUpProj(const Op& op, MicroBatch& mb);

  // Attention of each request's queries over one K/V set (same rows per request).
  void AttendPerRequest(const MicroBatch& mb, const float* k, int64_t k_stride, const float* v,
                        int64_t v_stride, int64_t kv_heads, const std::vector<int64_t>& kpos,
                        int64_t keys_per_request, Tensor* out, Tensor* lse);

  Status PrefillAttention(MicroBatch& mb);

  // Ring step j: this rank's queries over the block that came from rank (c − j) mod sp.
  Status RingStep(const Op& op, MicroBatch& mb);

  Status DecodeAttention(const Op& op, MicroBatch& mb);

  Status Merge(MicroBatch& mb);

  // ---- MoE.

  Status Router(const Op& op, MicroBatch& mb);

  // Groups the assignments by EP rank, then by that rank's experts (slot order).
  Status Permute(MicroBatch& mb);

  Status ExpertGateUp(const Op& op, MicroBatch& mb);

  Status ExpertDown(const Op& op, MicroBatch& mb);

  // ---- Head.

  Status HeadNorm(MicroBatch& mb);

  Status Sampling(const Op& op, MicroBatch& mb);

  void Sampled(MicroBatch& mb);

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

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_PHASE_RUNNER_H_
