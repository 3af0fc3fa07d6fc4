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
#include "runtime/weights/backend_weights.h"

namespace shardscope::runtime {

// Per-rank copy of a (max logit, global index) pair, as the TP all-gather moves it.
struct ArgMaxPair {
  float value = 0.0f;
  int32_t index = 0;
};
static_assert(sizeof(ArgMaxPair) == 8);

// A cache of one request in one layer: rows appended in position order into
// tensors of the executor's generation arena, sized for the whole generation
// (GQA: K and V rows; MLA: the latent [c_kv | k_rope] rows in `k`).
struct KvCache {
  TensorRef k, v;            // [capacity × width]
  std::vector<int64_t> pos;  // position of each row held
  int64_t rows() const { return static_cast<int64_t>(pos.size()); }
};

// Everything a phase's micro-batch computes, by the name its ops use: tensors
// of the step arena, allocated by the first layer that writes them and reused
// by the later ones (PhaseRunner::Act); ring blocks are fresh per layer, as a
// send may still read the previous layer's.
struct MicroBatch {
  std::vector<int64_t> requests;     // global request indices
  int64_t tokens = 0;                // T: rows of the activations
  int64_t local = 0;                 // tokens per request
  std::vector<int64_t> pos;          // position of each row
  std::vector<int32_t> ids;          // input token id of each row
  TensorRef x, hn, proj, ffn_out;    // residual stream, normed input, block outputs
  TensorRef qkv, qa, kv_a, kvb;      // projections (GQA fused qkv; MLA q in qkv)
  TensorRef attn, q_lat, o_lat;      // attention output (merged); MLA absorbed decode
  std::vector<TensorRef> partials;   // ring attention: [T, hq·dv] then [T, hq] per step
  int64_t partial_count = 0;         // partials of this layer so far
  std::vector<TensorRef> blocks;     // ring attention: the K/V block held at each step
  std::vector<TensorRef> block_kvb;  // MLA ring: each block up-projected
  TensorRef k_exp, v_exp;            // MLA prefill: per-head K and V of a block
  TensorRef packed, gathered;        // SP decode: partial out + lse, all-gathered
  TensorRef up, act;                 // dense FFN
  // MoE. Rows that arrive from EP peers vary by layer and step: their tensors
  // are views of buffers sized for the most that can arrive (moe_rows).
  TensorRef router_logits, router_w, perm, sh_up, sh_act, shared_out;
  std::vector<int32_t> router_idx;
  std::vector<int64_t> row_of, slot_counts, send_rows;
  std::vector<int64_t> recv_counts;  // [member][local expert], member-major
  int64_t moe_rows = 0;
  TensorRef recv_buf, in_buf, up_buf, act_buf, out_buf, send_buf;
  TensorRef recv, expert_in, expert_up, expert_act, expert_out, combine_send, combined;
  std::vector<int64_t> expert_rows;  // rows per local expert
  // Head.
  TensorRef last_rows, final_hn, logits;
  std::vector<ArgMaxPair> local_best, all_best;
  std::vector<float> best_value;
  std::vector<int32_t> out_ids;  // sampled token per request
  bool ids_ready = false;
};

struct Executor::State {
  explicit State(std::unique_ptr<Arena> a) : arena(std::move(a)) {}
  std::unique_ptr<Arena> arena;                          // the KV caches' memory
  std::map<std::pair<int64_t, int64_t>, KvCache> cache;  // (layer, request)
  std::map<int64_t, int32_t> next_token;                 // request → token to feed next
};

// Runs one phase's ops of this rank, in list order; keeps the in-flight requests.
class PhaseRunner {
 public:
  PhaseRunner(const Experiment& e, const Placement& pl, int64_t rank, Backend& b, Communicator& c,
              const BackendWeights& w, Executor::State& st, const ExecutorOptions& options,
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
    PositionGuard(OpPosition* p, const RankProgram* program, int32_t phase_index) : position_(p) {
      if (position_ == nullptr) return;
      position_->op.store(-1, std::memory_order_relaxed);
      position_->program.store(program, std::memory_order_relaxed);
      position_->phase_index.store(phase_index, std::memory_order_relaxed);
    }
    ~PositionGuard() {
      if (position_ != nullptr) position_->program.store(nullptr, std::memory_order_relaxed);
    }
    PositionGuard(const PositionGuard&) = delete;
    PositionGuard& operator=(const PositionGuard&) = delete;
    void Enter(int32_t op) {
      if (position_ == nullptr) return;
      position_->op.store(op, std::memory_order_relaxed);
      position_->entered.fetch_add(1, std::memory_order_relaxed);
    }

   private:
    OpPosition* const position_;
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

  // The sampled ids (int32): broadcast to the other sp ranks, or sent / received over pp.
  StatusOr<Request> PostTokenIds(const Op& op, MicroBatch& mb, OpRecord* rec);

  const Group& EpGroup() const { return placement_.GroupOf(rank_, Dim::kEp); }

  StatusOr<Request> Dispatch(const Op& op, MicroBatch& mb, OpRecord* rec);

  StatusOr<Request> Combine(const Op& op, MicroBatch& mb, OpRecord* rec);

  // ---- Compute.

  const BackendLayerWeights& LayerWeights(const Op& op) const { return weights_.layer(op.layer); }

  // `*t` as an activation of `shape`: the memory it has when its shape is the
  // same (the previous layer's), else new memory of the step arena.
  Status Act(TensorRef* t, std::vector<int64_t> shape);

  // y [m × n] = x [m × k] · W[:, col, col + n) (+ bias[col, col + n)); y may be a view.
  Status Linear(const TensorRef& x, const TensorRef& w, int64_t col, int64_t n,
                const TensorRef& bias, const TensorRef& y);
  // *y = x · W (+ bias), all columns.
  Status Linear(const TensorRef& x, const TensorRef& w, const TensorRef& bias, TensorRef* y);

  Status Norm(const TensorRef& x, const TensorRef& w, TensorRef* y);

  // act = the model's activation of up (act preallocated).
  Status Activation(const TensorRef& up, const TensorRef& act);
  Status Activation(const TensorRef& up, TensorRef* act);

  // One case per role and no default: -Werror=switch names a role left out.
  Status RunCompute(const Op& op, MicroBatch& mb);

  // RunCompute's longer cases.
  Status Embed(MicroBatch& mb);
  Status QProj(const Op& op, MicroBatch& mb);
  Status KvProj(const Op& op, MicroBatch& mb);
  Status ExpertActivation(MicroBatch& mb);
  Status Unpermute(MicroBatch& mb);
  Status LmHead(MicroBatch& mb);

  Status RunRope(const Op& op, MicroBatch& mb);

  // The K/V rows of this rank's new tokens, as a view: GQA [T, 2·hkv·d] (K | V), MLA the latent
  // rows.
  TensorRef NewKv(const MicroBatch& mb) const;

  Status KvAppend(const Op& op, MicroBatch& mb);

  // MLA: per-head K = [k_nope | shared k_rope] and V from a latent block and its up-projection.
  Status ExpandMla(const TensorRef& latent, const TensorRef& kvb, MicroBatch& mb);

  Status KvUpProj(const Op& op, MicroBatch& mb);

  // Attention of each request's queries over one K/V set (same rows per request).
  // k, v: keys_per_request rows per request (heads of qk_ / vd_ columns).
  Status AttendPerRequest(const MicroBatch& mb, const TensorRef& k, const TensorRef& v,
                          int64_t kv_heads, const std::vector<int64_t>& kpos,
                          int64_t keys_per_request, const TensorRef& out, const TensorRef& lse);

  Status PrefillAttention(MicroBatch& mb);

  // Ring step j: this rank's queries over the block that came from rank (c − j) mod sp.
  Status RingStep(const Op& op, MicroBatch& mb);

  Status DecodeAttention(const Op& op, MicroBatch& mb);

  Status Merge(MicroBatch& mb);

  // ---- MoE.

  Status Router(const Op& op, MicroBatch& mb);

  // Groups the assignments by EP rank, then by that rank's experts (slot order).
  Status Permute(MicroBatch& mb);

  // The most rows that can arrive for this rank's experts (every member's
  // tokens, each at most min(top-k, local experts) times), and the buffers.
  Status MoeBuffers(MicroBatch& mb);

  Status ExpertGateUp(const Op& op, MicroBatch& mb);

  Status ExpertDown(const Op& op, MicroBatch& mb);

  // ---- Head.

  Status HeadNorm(MicroBatch& mb);

  Status Sampling(const Op& op, MicroBatch& mb);

  Status Sampled(MicroBatch& mb);

  const Experiment& experiment_;
  const ModelSpec& model_;
  const Placement& placement_;
  const int64_t rank_;
  Backend& backend_;
  Communicator& comm_;
  const BackendWeights& weights_;
  Executor::State& st_;
  const ExecutorOptions& opt_;
  const PhaseProgram& prog_;
  std::vector<OpRecord>* records_;
  std::vector<SampleRecord>* samples_;

  int64_t tp_ = 1, sp_ = 1, ep_ = 1, dp_ = 1;
  int64_t c_tp_ = 0, c_sp_ = 0, c_ep_ = 0, c_dp_ = 0;
  bool prefill_ = true, mla_ = false;
  int32_t phase_index_ = 0;
  int64_t hidden_ = 0, seq_ = 0, hq_ = 0, hkv_ = 1, head_dim_ = 0;
  int64_t nope_ = 0, rope_ = 0, kv_lora_rank_ = 0, vd_ = 0, qk_ = 0, latent_ = 0;
  float scale_ = 1.0f;
  DType dtype_ = DType::kFp32;  // activations (the weights' dtype)
  std::unique_ptr<OpTimer> timer_;
  RopeSpec rope_spec_;
  std::optional<SpLayout> layout_;
  std::vector<MicroBatch> mbs_;
  std::vector<Inflight> inflight_;
  std::vector<Pending> pending_records_;
};

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_PHASE_RUNNER_H_
