#include "runtime/backend_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "runtime/dtype_convert.h"

namespace shardscope::runtime {
namespace {

// Shapes of a case's inputs and output; `in_place` names the input that is
// also the output (add: y, rope: x), −1 when the output is its own tensor.
struct Layout {
  std::vector<std::vector<int64_t>> inputs;
  std::vector<int64_t> output;
  int in_place = -1;
};

Layout LayoutOf(const OpCase& c) {
  const int64_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
  switch (c.op) {
    case BackendOp::kGemm:
      return {{{c.m, c.k}, {c.k, c.n}}, {c.m, c.n}};
    case BackendOp::kAdd:
      return {{{c.m, c.n}, {c.m, c.n}}, {}, 1};
    case BackendOp::kRmsNorm:
      return {{{c.m, c.n}, {c.n}}, {c.m, c.n}};
    case BackendOp::kRope:
      return {{{c.m, q}}, {}, 0};
    case BackendOp::kSwiGlu:
      return {{{c.m, 2 * c.n}}, {c.m, c.n}};
    case BackendOp::kGelu:
      return {{{c.m, c.n}}, {c.m, c.n}};
    case BackendOp::kAttention:
      return {{{c.m, q}, {c.m, kv}, {c.m, kv}}, {c.m, q}};
  }
  return {};
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Inputs in [−1, 1), norm weights near 1; rounded to `dtype` so that every
// backend starts from the same stored values.
std::vector<std::vector<float>> Inputs(const OpCase& c, const Layout& l, DType dtype,
                                       uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::vector<float>> in;
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    std::vector<float> v(static_cast<size_t>(Elements(l.inputs[i])));
    const bool norm_weight = c.op == BackendOp::kRmsNorm && i == 1;
    for (float& x : v) x = RoundTo(dtype, norm_weight ? 1.0f + 0.1f * u(rng) : u(rng));
    in.push_back(std::move(v));
  }
  return in;
}

Status Invoke(const OpCase& c, Backend& b, const std::vector<TensorRef>& in, const TensorRef& out) {
  switch (c.op) {
    case BackendOp::kGemm:
      return b.Gemm(in[0], in[1], out);
    case BackendOp::kAdd:
      return b.Add(in[0], in[1]);
    case BackendOp::kRmsNorm:
      return b.RmsNorm(in[0], in[1], 1e-6f, out);
    case BackendOp::kRope: {
      RopeOpArgs a;
      a.heads = c.heads, a.head_dim = c.head_dim;
      a.spec.style = c.rope_style;
      for (int64_t t = 0; t < c.m; ++t) a.positions.push_back(3 + 5 * t);
      return b.Rope(a, in[0]);
    }
    case BackendOp::kSwiGlu:
      return b.SwiGlu(in[0], out);
    case BackendOp::kGelu:
      return b.Gelu(in[0], out);
    case BackendOp::kAttention: {
      AttentionOpArgs a;
      a.heads = c.heads, a.kv_heads = c.kv_heads, a.head_dim = c.head_dim;
      a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
      return b.Attention(a, in[0], in[1], in[2], out);
    }
  }
  return InternalError("unknown backend op");
}

// Tensors of the case on `b` (a fresh step of its arena), inputs copied in.
Status Prepare(const OpCase& c, const Layout& l, DType dtype, Backend& b,
               const std::vector<std::vector<float>>& host, std::vector<TensorRef>* in,
               TensorRef* out) {
  RETURN_IF_ERROR(b.ResetArena());
  in->clear();
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    ASSIGN_OR_RETURN(TensorRef t, b.NewTensor(dtype, l.inputs[i]));
    RETURN_IF_ERROR(b.CopyFromHost(host[i].data(), t));
    in->push_back(std::move(t));
  }
  if (l.in_place >= 0) {
    *out = (*in)[static_cast<size_t>(l.in_place)];
  } else {
    ASSIGN_OR_RETURN(*out, b.NewTensor(dtype, l.output));
  }
  return Status::Ok();
}

}  // namespace

std::string OpCase::Name() const {
  switch (op) {
    case BackendOp::kGemm:
      return fmt::format("gemm m={} n={} k={}", m, n, k);
    case BackendOp::kRope:
      return fmt::format("rope t={} heads={} d={} {}", m, heads, head_dim,
                         rope_style == RopeStyle::kHalfSplit ? "half-split" : "interleaved");
    case BackendOp::kAttention:
      return fmt::format("attention t={} heads={}/{} d={}", m, heads, kv_heads, head_dim);
    case BackendOp::kAdd:
    case BackendOp::kRmsNorm:
    case BackendOp::kSwiGlu:
    case BackendOp::kGelu:
      break;
  }
  return fmt::format("{} m={} n={}", BackendOpName(op), m, n);
}

std::vector<OpCase> DefaultOpCases() {
  std::vector<OpCase> cases;
  auto add = [&](OpCase c) { cases.push_back(c); };
  add({.op = BackendOp::kGemm, .m = 7, .n = 33, .k = 64});
  add({.op = BackendOp::kGemm, .m = 1, .n = 130, .k = 17});
  add({.op = BackendOp::kAdd, .m = 5, .n = 41});
  add({.op = BackendOp::kRmsNorm, .m = 6, .n = 96});
  add({.op = BackendOp::kRope, .m = 5, .heads = 3, .head_dim = 16});
  add({.op = BackendOp::kRope,
       .m = 4,
       .heads = 2,
       .head_dim = 8,
       .rope_style = RopeStyle::kInterleaved});
  add({.op = BackendOp::kSwiGlu, .m = 4, .n = 37});
  add({.op = BackendOp::kGelu, .m = 3, .n = 50});
  add({.op = BackendOp::kAttention, .m = 9, .heads = 4, .kv_heads = 2, .head_dim = 16});
  add({.op = BackendOp::kAttention, .m = 1, .heads = 2, .kv_heads = 2, .head_dim = 8});
  return cases;
}

std::vector<OpCase> BenchOpCases() {
  // A 1B-class model's shapes: hidden 2048, 32 heads of 64 (8 KV heads), FFN 8192.
  std::vector<OpCase> cases;
  for (int64_t t : {1, 128}) {
    cases.push_back({.op = BackendOp::kGemm, .m = t, .n = 2048, .k = 2048});
    cases.push_back({.op = BackendOp::kAdd, .m = t, .n = 2048});
    cases.push_back({.op = BackendOp::kRmsNorm, .m = t, .n = 2048});
    cases.push_back({.op = BackendOp::kRope, .m = t, .heads = 32, .head_dim = 64});
    cases.push_back({.op = BackendOp::kSwiGlu, .m = t, .n = 8192});
    cases.push_back({.op = BackendOp::kGelu, .m = t, .n = 8192});
  }
  cases.push_back(
      {.op = BackendOp::kAttention, .m = 128, .heads = 32, .kv_heads = 8, .head_dim = 64});
  return cases;
}

double Nmse(const std::vector<float>& out, const std::vector<float>& ref) {
  if (out.size() != ref.size()) return INFINITY;
  double err = 0.0, mag = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double d = static_cast<double>(out[i]) - ref[i];
    err += d * d;
    mag += static_cast<double>(ref[i]) * ref[i];
  }
  if (std::isnan(err)) return INFINITY;
  if (mag == 0.0) return err == 0.0 ? 0.0 : INFINITY;
  return err / mag;
}

double NmseTolerance(DType dtype) {
  // A last-bit difference in every output element costs about ulp² / 3:
  // bf16 (8 bits) 5e-6, fp16 (11 bits) 8e-8; fp32 sums in another order.
  switch (dtype) {
    case DType::kBf16:
      return 1e-4;
    case DType::kFp16:
      return 1e-6;
    default:
      return 1e-9;
  }
}

StatusOr<std::vector<float>> RunOp(const OpCase& c, DType dtype, Backend& b, uint32_t seed) {
  if (!b.Supports(c.op, dtype)) {
    return Unimplemented("not implemented: {} on {} tensors in backend '{}'", BackendOpName(c.op),
                         DTypeName(dtype), b.name());
  }
  const Layout l = LayoutOf(c);
  const std::vector<std::vector<float>> host = Inputs(c, l, dtype, seed);
  std::vector<TensorRef> in;
  TensorRef out;
  RETURN_IF_ERROR(Prepare(c, l, dtype, b, host, &in, &out));
  RETURN_IF_ERROR(Invoke(c, b, in, out));
  RETURN_IF_ERROR(b.Synchronize());
  std::vector<float> result(static_cast<size_t>(out.elements()));
  RETURN_IF_ERROR(b.CopyToHost(out, result.data()));
  return result;
}

StatusOr<double> CompareOp(const OpCase& c, DType dtype, Backend& backend, Backend& reference,
                           uint32_t seed) {
  ASSIGN_OR_RETURN(std::vector<float> out, RunOp(c, dtype, backend, seed));
  ASSIGN_OR_RETURN(std::vector<float> ref, RunOp(c, dtype, reference, seed));
  return Nmse(out, ref);
}

StatusOr<int64_t> TimeOp(const OpCase& c, DType dtype, Backend& b, int reps) {
  const Layout l = LayoutOf(c);
  const std::vector<std::vector<float>> host = Inputs(c, l, dtype, 1);
  std::vector<TensorRef> in;
  TensorRef out;
  RETURN_IF_ERROR(Prepare(c, l, dtype, b, host, &in, &out));
  RETURN_IF_ERROR(Invoke(c, b, in, out));  // warm-up
  std::unique_ptr<OpTimer> timer = b.NewTimer();
  std::vector<int64_t> ns;
  for (int r = 0; r < reps; ++r) {
    RETURN_IF_ERROR(timer->Start());
    RETURN_IF_ERROR(Invoke(c, b, in, out));
    RETURN_IF_ERROR(timer->Stop());
    ASSIGN_OR_RETURN(int64_t t, timer->ElapsedNs());
    ns.push_back(t);
  }
  if (ns.empty()) return int64_t{0};
  std::nth_element(ns.begin(), ns.begin() + ns.size() / 2, ns.end());
  return ns[ns.size() / 2];
}

}  // namespace shardscope::runtime
