// Fp32HostBackend: a backend that computes in fp32 on host memory and stores
// any storage dtype. fp32 tensors reach the loops in place (views keep their
// row stride); other dtypes are converted into contiguous fp32 scratch (an
// arena of its own, so no op allocates in the steady state) and outputs
// converted back. It checks every op's shapes; subclasses give the fp32 loops
// (the reference loops, the OpenBLAS kernels). The host clock, synchronous.
#ifndef SHARDSCOPE_RUNTIME_DEVICE_FP32_HOST_BACKEND_H_
#define SHARDSCOPE_RUNTIME_DEVICE_FP32_HOST_BACKEND_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "runtime/device/backend.h"

namespace shardscope::runtime {

// An fp32 matrix on the host: rows × cols with ld floats between rows.
struct F32Mat {
  float* p = nullptr;
  int64_t rows = 0, cols = 0, ld = 0;
  float& at(int64_t i, int64_t j) const { return p[i * ld + j]; }
};

class Fp32HostBackend : public Backend {
 public:
  bool Supports(BackendOp op, DType dtype) const override;
  Status CopyFromHost(const float* host, const TensorRef& dst) override;
  Status CopyToHost(const TensorRef& src, float* host) override;
  Status Synchronize() override { return Status::Ok(); }
  std::unique_ptr<OpTimer> NewTimer() override;

  using Backend::Attention;
  using Backend::Gemm;
  Status Gemm(const TensorRef& a, const TensorRef& b, const TensorRef& c, bool trans_b) override;
  Status Add(const TensorRef& x, const TensorRef& y) override;
  Status AddBias(const TensorRef& bias, const TensorRef& y) override;
  Status RmsNorm(const TensorRef& x, const TensorRef& w, float eps, const TensorRef& y) override;
  Status Rope(const RopeOpArgs& args, const TensorRef& x) override;
  Status SwiGlu(const TensorRef& gate_up, const TensorRef& out) override;
  Status Gelu(const TensorRef& x, const TensorRef& out) override;
  Status Attention(const AttentionOpArgs& args, const TensorRef& q, const TensorRef& k,
                   const TensorRef& v, const TensorRef& out, const TensorRef& lse) override;
  Status DecodeAttention(const DecodeAttentionOpArgs& args, const TensorRef& q,
                         std::span<const TensorRef> k, std::span<const TensorRef> v,
                         const TensorRef& out, const TensorRef& lse) override;
  Status AttentionMerge(std::span<const TensorRef> outs, std::span<const TensorRef> lses,
                        const TensorRef& out) override;
  Status Router(const RouterOpArgs& args, const TensorRef& logits, const TensorRef& bias,
                std::span<int32_t> idx, const TensorRef& weight) override;
  Status Permute(const TensorRef& x, std::span<const int32_t> idx, int64_t k,
                 std::span<int64_t> row_of, std::span<int64_t> counts,
                 const TensorRef& out) override;
  Status Unpermute(const TensorRef& y, std::span<const int64_t> row_of, const TensorRef& weight,
                   int64_t k, const TensorRef& shared, const TensorRef& out) override;
  Status Embedding(std::span<const int32_t> ids, const TensorRef& table, int64_t vocab_begin,
                   const TensorRef& out) override;
  Status ArgMax(const TensorRef& x, int64_t index_offset, std::span<float> max_value,
                std::span<int32_t> index) override;
  Status Copy(const TensorRef& src, const TensorRef& dst) override;

  int64_t system_allocations() const override {
    return Backend::system_allocations() + scratch_.system_allocations();
  }

 protected:
  Fp32HostBackend();

  // The fp32 loops, shapes already checked. Matrices are views (ld ≥ cols);
  // those the op contract calls contiguous have ld = cols.
  virtual void GemmF32(const F32Mat& a, const F32Mat& b, bool trans_b, const F32Mat& c) = 0;
  virtual void AddF32(const float* x, float* y, int64_t n) = 0;
  virtual void AddBiasF32(const float* bias, const F32Mat& y) = 0;
  virtual void RmsNormF32(const F32Mat& x, const float* w, float eps, const F32Mat& y) = 0;
  virtual void RopeF32(const RopeOpArgs& args, const F32Mat& x) = 0;
  virtual void SwiGluF32(const float* gate_up, int64_t m, int64_t inter, float* out) = 0;
  virtual void GeluF32(const float* x, int64_t n, float* out) = 0;
  // Positions already filled in (0, 1, … when the caller gave none); lse.p may be null.
  virtual void AttentionF32(const AttentionOpArgs& args, const F32Mat& q, const F32Mat& k,
                            const F32Mat& v, const F32Mat& out, const F32Mat& lse) = 0;
  // Every k[r] (and every v[r]) has the same ld; lse.p may be null.
  virtual void DecodeAttentionF32(const DecodeAttentionOpArgs& args, const F32Mat& q,
                                  const std::vector<F32Mat>& k, const std::vector<F32Mat>& v,
                                  const F32Mat& out, const F32Mat& lse) = 0;
  virtual void AttentionMergeF32(const std::vector<const float*>& outs,
                                 const std::vector<const float*>& lses, const F32Mat& out) = 0;
  virtual void RouterF32(const RouterOpArgs& args, const F32Mat& logits, const float* bias,
                         std::span<int32_t> idx, float* weight) = 0;
  virtual void PermuteF32(const F32Mat& x, std::span<const int32_t> idx, int64_t k,
                          std::span<int64_t> row_of, std::span<int64_t> counts,
                          const F32Mat& out) = 0;
  virtual void UnpermuteF32(const F32Mat& y, std::span<const int64_t> row_of, const float* weight,
                            int64_t k, const float* shared, const F32Mat& out) = 0;
  virtual void EmbeddingF32(std::span<const int32_t> ids, const F32Mat& table, int64_t vocab_begin,
                            const F32Mat& out) = 0;
  virtual void ArgMaxF32(const F32Mat& x, int64_t index_offset, std::span<float> max_value,
                         std::span<int32_t> index) = 0;
  virtual void CopyF32(const F32Mat& src, const F32Mat& dst) = 0;

 private:
  StatusOr<F32Mat> Load(const TensorRef& t);          // fp32 view of t's values
  StatusOr<F32Mat> Stage(const TensorRef& t);         // fp32 room for t's new values
  Status Store(const TensorRef& t, const F32Mat& f);  // back into t's dtype
  // Loads an optional tensor (empty: a null matrix).
  StatusOr<F32Mat> LoadOptional(const TensorRef& t);

  Arena scratch_;
  std::vector<int64_t> iota_;  // 0, 1, …: default positions, grown to the longest
};

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_DEVICE_FP32_HOST_BACKEND_H_
