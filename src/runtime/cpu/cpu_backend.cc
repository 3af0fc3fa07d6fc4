// The CPU backend: Fp32HostBackend (tensors in their own dtype in host memory,
// ops computed in fp32, timed by the host clock) whose fp32 loops are the
// OpenBLAS kernels of cpu_kernels.h, views passed with their strides so that an
// fp32 tensor is never copied.
#include <memory>
#include <string_view>

#include "runtime/cpu/cpu_kernels.h"
#include "runtime/device/backend.h"
#include "runtime/device/fp32_host_backend.h"

namespace shardscope::runtime {
namespace {

class CpuBackend final : public Fp32HostBackend {
 public:
  std::string_view name() const override { return "cpu"; }

 protected:
  void GemmF32(const F32Mat& a, const F32Mat& b, bool trans_b, const F32Mat& c) override {
    cpu::Gemm(c.rows, c.cols, a.cols, a.p, a.ld, b.p, b.ld, trans_b, c.p, c.ld, 0.0f);
  }
  void AddF32(const float* x, float* y, int64_t n) override { cpu::Add(x, y, n); }
  void AddBiasF32(const float* bias, const F32Mat& y) override {
    for (int64_t i = 0; i < y.rows; ++i) cpu::Add(bias, y.p + i * y.ld, y.cols);
  }
  void RmsNormF32(const F32Mat& x, const float* w, float eps, const F32Mat& y) override {
    cpu::RmsNorm(x.p, x.ld, w, y.p, y.ld, x.rows, x.cols, eps);
  }
  void RopeF32(const RopeOpArgs& a, const F32Mat& x) override {
    cpu::Rope(x.p, x.rows, x.ld, a.heads, a.head_stride, a.head_dim, a.positions.data(), a.spec);
  }
  void SwiGluF32(const float* gate_up, int64_t m, int64_t inter, float* out) override {
    cpu::SwiGlu(gate_up, m, inter, out);
  }
  void GeluF32(const float* x, int64_t n, float* out) override { cpu::Gelu(x, n, out); }
  void AttentionF32(const AttentionOpArgs& a, const F32Mat& q, const F32Mat& k, const F32Mat& v,
                    const F32Mat& out, const F32Mat& lse) override {
    cpu::AttentionArgs args;
    args.q = q.p, args.q_stride = q.ld;
    args.k = k.p, args.k_stride = k.ld;
    args.v = v.p, args.v_stride = v.ld;
    args.tq = q.rows, args.tk = k.rows, args.hq = a.heads, args.hkv = a.kv_heads;
    args.dqk = a.head_dim, args.dv = a.head_dim_v;
    args.qpos = a.q_positions.data(), args.kpos = a.k_positions.data();
    args.scale = a.scale;
    args.out = out.p, args.out_stride = out.ld;
    args.lse = lse.p;  // cpu::Attention: lse rows are hq wide
    if (lse.p != nullptr && lse.ld != a.heads) {
      for (int64_t i = 0; i < q.rows; ++i) {  // a strided lse: one query row at a time
        cpu::AttentionArgs row = args;
        row.q = q.p + i * q.ld, row.tq = 1, row.qpos = args.qpos + i;
        row.out = out.p + i * out.ld, row.lse = lse.p + i * lse.ld;
        cpu::Attention(row);
      }
      return;
    }
    cpu::Attention(args);
  }
  void DecodeAttentionF32(const DecodeAttentionOpArgs& a, const F32Mat& q,
                          const std::vector<F32Mat>& k, const std::vector<F32Mat>& v,
                          const F32Mat& out, const F32Mat& lse) override {
    cpu::DecodeAttentionArgs args;
    args.q = q.p, args.q_stride = q.ld;
    for (size_t r = 0; r < k.size(); ++r) {
      args.k.push_back(k[r].p);
      args.v.push_back(v[r].p);
      args.len.push_back(k[r].rows);
    }
    args.k_stride = k.empty() ? 0 : k[0].ld;
    args.v_stride = v.empty() ? 0 : v[0].ld;
    args.hq = a.heads, args.hkv = a.kv_heads, args.dqk = a.head_dim, args.dv = a.head_dim_v;
    args.scale = a.scale;
    args.out = out.p, args.out_stride = out.ld;
    args.lse = lse.p;
    if (lse.p != nullptr && lse.ld != a.heads) {
      for (size_t r = 0; r < k.size(); ++r) {  // a strided lse: one request at a time
        cpu::DecodeAttentionArgs one = args;
        const int64_t i = static_cast<int64_t>(r);
        one.q = q.p + i * q.ld, one.k = {args.k[r]}, one.v = {args.v[r]}, one.len = {args.len[r]};
        one.out = out.p + i * out.ld, one.lse = lse.p + i * lse.ld;
        cpu::DecodeAttention(one);
      }
      return;
    }
    cpu::DecodeAttention(args);
  }
  void AttentionMergeF32(const std::vector<const float*>& outs,
                         const std::vector<const float*>& lses, const F32Mat& out) override {
    cpu::AttentionMerge(outs, lses, out.rows, out.cols, out.p, nullptr);
  }
  void RouterF32(const RouterOpArgs& a, const F32Mat& logits, const float* bias,
                 std::span<int32_t> idx, float* weight) override {
    cpu::Router(logits.p, logits.rows, logits.cols, a, bias, idx.data(), weight);
  }
  void PermuteF32(const F32Mat& x, std::span<const int32_t> idx, int64_t k,
                  std::span<int64_t> row_of, std::span<int64_t> counts,
                  const F32Mat& out) override {
    cpu::Permute(x.p, x.rows, x.cols, idx.data(), k, static_cast<int64_t>(counts.size()), out.p,
                 row_of.data(), counts.data());
  }
  void UnpermuteF32(const F32Mat& y, std::span<const int64_t> row_of, const float* weight,
                    int64_t k, const float* shared, const F32Mat& out) override {
    cpu::Unpermute(y.p, out.rows, out.cols, row_of.data(), weight, k, shared, out.p);
  }
  void EmbeddingF32(std::span<const int32_t> ids, const F32Mat& table, int64_t vocab_begin,
                    const F32Mat& out) override {
    if (table.ld == table.cols && out.ld == out.cols) {
      cpu::Embedding(ids.data(), static_cast<int64_t>(ids.size()), table.p, vocab_begin, table.rows,
                     table.cols, out.p);
      return;
    }
    for (size_t t = 0; t < ids.size(); ++t) {  // views: a row at a time
      cpu::Embedding(ids.data() + t, 1, table.p, vocab_begin, table.rows, table.cols,
                     out.p + static_cast<int64_t>(t) * out.ld);
    }
  }
  void ArgMaxF32(const F32Mat& x, int64_t index_offset, std::span<float> max_value,
                 std::span<int32_t> index) override {
    if (x.ld == x.cols) {
      cpu::ArgMax(x.p, x.rows, x.cols, index_offset, max_value.data(), index.data());
      return;
    }
    for (int64_t i = 0; i < x.rows; ++i) {
      cpu::ArgMax(x.p + i * x.ld, 1, x.cols, index_offset, max_value.data() + i, index.data() + i);
    }
  }
  void CopyF32(const F32Mat& src, const F32Mat& dst) override {
    cpu::CopyRows(src.p, src.ld, dst.p, dst.ld, src.rows, src.cols);
  }
};

}  // namespace

std::unique_ptr<Backend> NewCpuBackend() { return std::make_unique<CpuBackend>(); }

}  // namespace shardscope::runtime
