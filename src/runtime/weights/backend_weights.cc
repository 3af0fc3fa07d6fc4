#include "runtime/weights/backend_weights.h"

#include <algorithm>

namespace shardscope::runtime {
namespace {

// Visits every tensor of a layer and its backend twin, in one order.
template <typename L, typename F>
void ForEachLayerTensor(L& host, BackendLayerWeights* dev, F&& f) {
  auto ffn = [&](auto& h, BackendExpertWeights* d) {
    f(h.gate_up, d ? &d->gate_up : nullptr);
    f(h.gate_up_bias, d ? &d->gate_up_bias : nullptr);
    f(h.down, d ? &d->down : nullptr);
    f(h.down_bias, d ? &d->down_bias : nullptr);
  };
#define SHARDSCOPE_VISIT(field) f(host.field, dev ? &dev->field : nullptr)
  SHARDSCOPE_VISIT(input_norm);
  SHARDSCOPE_VISIT(post_norm);
  SHARDSCOPE_VISIT(qkv);
  SHARDSCOPE_VISIT(qkv_bias);
  SHARDSCOPE_VISIT(q_a);
  SHARDSCOPE_VISIT(q_a_bias);
  SHARDSCOPE_VISIT(q_a_norm);
  SHARDSCOPE_VISIT(q_b);
  SHARDSCOPE_VISIT(q);
  SHARDSCOPE_VISIT(kv_a);
  SHARDSCOPE_VISIT(kv_a_bias);
  SHARDSCOPE_VISIT(kv_a_norm);
  SHARDSCOPE_VISIT(kv_b);
  SHARDSCOPE_VISIT(o);
  SHARDSCOPE_VISIT(o_bias);
  SHARDSCOPE_VISIT(router);
  SHARDSCOPE_VISIT(router_bias);
#undef SHARDSCOPE_VISIT
  ffn(host.ffn, dev ? &dev->ffn : nullptr);
  ffn(host.shared, dev ? &dev->shared : nullptr);
  if (dev) dev->experts.resize(host.experts.size());
  for (size_t i = 0; i < host.experts.size(); ++i) {
    ffn(host.experts[i], dev ? &dev->experts[i] : nullptr);
  }
}

int64_t Aligned(int64_t bytes) {
  const int64_t a = Arena::kAlignment;
  return (std::max<int64_t>(bytes, 1) + a - 1) / a * a;
}

}  // namespace

int64_t BackendWeights::UploadBytes(const Weights& w, DType dtype) {
  int64_t total = 0;
  auto add = [&](const Tensor& t, TensorRef*) {
    if (!t.empty()) total += Aligned(t.size() * DTypeSize(dtype));
  };
  add(w.embedding(), nullptr);
  add(w.final_norm(), nullptr);
  add(w.lm_head(), nullptr);
  for (const LayerWeights& l : w.layers()) ForEachLayerTensor(l, nullptr, add);
  return total;
}

StatusOr<BackendWeights> BackendWeights::Upload(const Weights& w, Backend& backend, Arena& arena,
                                                DType dtype) {
  Status status;
  auto copy = [&](const Tensor& t, TensorRef* dst) {
    if (t.empty() || !status.ok()) return;
    StatusOr<TensorRef> d = backend.NewTensor(arena, dtype, t.shape());
    if (d.ok()) status = backend.CopyFromHost(t.data(), *d);
    if (!d.ok()) status = d.status();
    if (status.ok()) *dst = *d;
  };
  BackendWeights b;
  b.vocab_ = w.vocab();
  copy(w.embedding(), &b.embedding_);
  copy(w.final_norm(), &b.final_norm_);
  copy(w.lm_head(), &b.lm_head_);
  for (const LayerWeights& l : w.layers()) {
    BackendLayerWeights d;
    d.layer = l.layer;
    ForEachLayerTensor(l, &d, copy);
    b.layers_.push_back(std::move(d));
  }
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(backend.Synchronize());
  return b;
}

bool BackendWeights::has_layer(int64_t l) const {
  for (const BackendLayerWeights& lw : layers_) {
    if (lw.layer == l) return true;
  }
  return false;
}

const BackendLayerWeights& BackendWeights::layer(int64_t l) const {
  for (const BackendLayerWeights& lw : layers_) {
    if (lw.layer == l) return lw;
  }
  return layers_.front();  // callers check has_layer
}

}  // namespace shardscope::runtime
