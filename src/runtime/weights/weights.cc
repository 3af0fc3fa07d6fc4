#include "runtime/weights/weights.h"

#include <cmath>
#include <set>
#include <utility>

#include "program/program_builder.h"
#include "runtime/weights/hf_checkpoint.h"

namespace shardscope::runtime {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t HashName(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

float MatScale(int64_t fan_in) { return static_cast<float>(std::sqrt(3.0 / fan_in)); }

using Init = WeightSource::Init;

// Norm weights near 1, so norms neither vanish nor are trivially exact.
StatusOr<Tensor> NormWeight(const WeightSource& src, const std::string& name, int64_t n) {
  return src.Columns(name, 1, n, {{0, n}}, {0.1f, 1.0f});
}

// An FFN of global intermediate width `inter` split over tp: gate/up columns, down rows.
StatusOr<ExpertWeights> Ffn(const WeightSource& src, const std::string& prefix, const ModelSpec& m,
                            int64_t inter, Slice local, bool down_bias) {
  ExpertWeights w;
  const int64_t h = m.hidden_size;
  const bool glu = m.activation == Activation::kSwiGlu;
  // Global gate_up is [h × 2·inter]: gate columns [0, inter), up columns [inter, 2·inter).
  std::vector<Slice> cols = {local};
  if (glu) cols.push_back({inter + local.begin, local.count});
  const int64_t width = glu ? 2 * inter : inter;
  ASSIGN_OR_RETURN(w.gate_up, src.Columns(prefix + ".gate_up", h, width, cols, {MatScale(h)}));
  ASSIGN_OR_RETURN(w.down, src.Rows(prefix + ".down", inter, h, local, {MatScale(inter)}));
  if (m.mlp_bias) {
    ASSIGN_OR_RETURN(w.gate_up_bias, src.Columns(prefix + ".gate_up_bias", 1, width, cols, {0.1f}));
    if (down_bias) {
      ASSIGN_OR_RETURN(w.down_bias, src.Columns(prefix + ".down_bias", 1, h, {{0, h}}, {0.1f}));
    }
  }
  return w;
}

class SeededSource : public WeightSource {
 public:
  explicit SeededSource(uint64_t seed) : seed_(seed) {}
  StatusOr<Tensor> Columns(const std::string& name, int64_t rows, int64_t cols,
                           const std::vector<Slice>& slices, Init init) const override {
    return InitColumns(seed_, name, rows, cols, slices, init.scale, init.offset);
  }
  StatusOr<Tensor> Rows(const std::string& name, int64_t rows, int64_t cols, Slice slice,
                        Init init) const override {
    return InitRows(seed_, name, rows, cols, slice, init.scale, init.offset);
  }

 private:
  const uint64_t seed_;
};

}  // namespace

float InitValue(uint64_t seed, const std::string& name, int64_t index, float scale) {
  const uint64_t r = SplitMix(SplitMix(seed ^ HashName(name)) + static_cast<uint64_t>(index));
  const double u = static_cast<double>(r >> 11) * 0x1.0p-53;  // [0, 1)
  return static_cast<float>((2.0 * u - 1.0) * scale);
}

Tensor InitColumns(uint64_t seed, const std::string& name, int64_t rows, int64_t cols,
                   const std::vector<Slice>& slices, float scale, float offset) {
  int64_t width = 0;
  for (const Slice& s : slices) width += s.count;
  Tensor t(rows == 1 ? std::vector<int64_t>{width} : std::vector<int64_t>{rows, width});
  for (int64_t i = 0; i < rows; ++i) {
    int64_t at = 0;
    for (const Slice& s : slices) {
      for (int64_t j = 0; j < s.count; ++j) {
        t[i * width + at++] = offset + InitValue(seed, name, i * cols + s.begin + j, scale);
      }
    }
  }
  return t;
}

Tensor InitRows(uint64_t seed, const std::string& name, int64_t rows, int64_t cols, Slice slice,
                float scale, float offset) {
  Tensor t({slice.count, cols});
  for (int64_t i = 0; i < slice.count; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      t[i * cols + j] = offset + InitValue(seed, name, (slice.begin + i) * cols + j, scale);
    }
  }
  return t;
}

int32_t PromptToken(uint64_t seed, int64_t request, int64_t pos, int64_t vocab) {
  const uint64_t r =
      SplitMix(SplitMix(seed ^ 0x70726f6d7074ull) ^
               SplitMix(static_cast<uint64_t>(request) * 1000003ull + static_cast<uint64_t>(pos)));
  return static_cast<int32_t>(r % static_cast<uint64_t>(vocab));
}

std::unique_ptr<WeightSource> SeededWeightSource(uint64_t seed) {
  return std::make_unique<SeededSource>(seed);
}

StatusOr<Weights> Weights::Create(const Experiment& e, const Placement& pl, int64_t rank) {
  if (e.workload.checkpoint.empty()) return Create(e, pl, rank, SeededSource(e.workload.seed));
  ASSIGN_OR_RETURN(std::unique_ptr<WeightSource> source,
                   OpenHfCheckpoint(e.workload.checkpoint, e.model));
  return Create(e, pl, rank, *source);
}

Status Weights::CheckCheckpoint(const Experiment& e, const Placement& pl) {
  if (e.workload.checkpoint.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(std::unique_ptr<WeightSource> source,
                   OpenHfCheckpoint(e.workload.checkpoint, e.model, /*shapes_only=*/true));
  // The tensors a rank reads depend on its stage and expert-parallel coordinate;
  // tensor parallelism only slices them (biases live on tp coordinate 0).
  std::set<std::pair<int64_t, int64_t>> seen;
  for (int64_t rank = 0; rank < pl.world_size(); ++rank) {
    if (pl.Coord(rank, Dim::kTp) != 0) continue;
    if (!seen.insert({pl.Coord(rank, Dim::kPp), pl.Coord(rank, Dim::kEp)}).second) continue;
    RETURN_IF_ERROR(Create(e, pl, rank, *source).status());
  }
  return Status::Ok();
}

StatusOr<Weights> Weights::Create(const Experiment& e, const Placement& pl, int64_t rank,
                                  const WeightSource& src) {
  const ModelSpec& m = e.model;
  if (m.norm != NormKind::kRmsNorm) {
    return Unimplemented("not implemented: LayerNorm in the CPU executor (model '{}')", m.name);
  }
  if (m.qk_norm) {
    return Unimplemented(
        "not implemented: per-head q/k norms (qk_norm) in the CPU and CUDA executors (model '{}')",
        m.name);
  }
  const int64_t h = m.hidden_size;
  const int64_t tp = e.parallel.tp;
  const int64_t ctp = pl.Coord(rank, Dim::kTp);
  const int64_t stage = pl.Coord(rank, Dim::kPp);
  const ShardGeometry geo(m, tp, e.parallel.ep);
  const int64_t hq = geo.q_heads();
  Weights w;
  w.vocab_ = geo.Vocab(ctp);
  if (stage == 0) {
    ASSIGN_OR_RETURN(w.embedding_, src.Rows("embedding", m.vocab_size, h, w.vocab_, {1.0f}));
  }
  if (stage == pl.num_stages() - 1) {
    ASSIGN_OR_RETURN(w.final_norm_, NormWeight(src, "final_norm", h));
    if (m.tie_embeddings) {  // the head is the embedding table transposed
      ASSIGN_OR_RETURN(Tensor rows, src.Rows("embedding", m.vocab_size, h, w.vocab_, {1.0f}));
      w.lm_head_ = Tensor({h, w.vocab_.count});
      for (int64_t i = 0; i < h; ++i) {
        for (int64_t v = 0; v < w.vocab_.count; ++v) {
          w.lm_head_[i * w.vocab_.count + v] = rows[v * h + i];
        }
      }
    } else {
      ASSIGN_OR_RETURN(w.lm_head_,
                       src.Columns("lm_head", h, m.vocab_size, {w.vocab_}, {MatScale(h)}));
    }
  }
  for (int64_t l : pl.LayersOfStage(stage)) {
    const std::string p = "L" + std::to_string(l);
    LayerWeights lw;
    lw.layer = l;
    ASSIGN_OR_RETURN(lw.input_norm, NormWeight(src, p + ".input_norm", h));
    ASSIGN_OR_RETURN(lw.post_norm, NormWeight(src, p + ".post_norm", h));
    if (m.attention == AttentionKind::kGqa) {
      const int64_t d = m.head_dim;
      const int64_t hkv_total = m.num_kv_heads;
      // KV heads of this rank: its share, or the one its query heads use when tp exceeds them.
      const Slice kv = geo.KvHeads(ctp);
      const int64_t qw = m.num_heads * d, kw = hkv_total * d;
      // Global fused [h × (H + 2·Hkv)·d]: all q heads, then k heads, then v heads.
      const std::vector<Slice> cols = {{ctp * hq * d, hq * d},
                                       {qw + kv.begin * d, kv.count * d},
                                       {qw + kw + kv.begin * d, kv.count * d}};
      ASSIGN_OR_RETURN(lw.qkv, src.Columns(p + ".qkv", h, qw + 2 * kw, cols, {MatScale(h)}));
      if (m.qkv_bias) {
        ASSIGN_OR_RETURN(lw.qkv_bias, src.Columns(p + ".qkv_bias", 1, qw + 2 * kw, cols, {0.1f}));
      }
      ASSIGN_OR_RETURN(lw.o, src.Rows(p + ".o", qw, h, {ctp * hq * d, hq * d}, {MatScale(qw)}));
    } else {
      const MlaSpec& a = m.mla;
      const int64_t qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
      const Slice heads_q{ctp * hq * qk, hq * qk};
      if (a.q_lora_rank > 0) {
        const int64_t qr = a.q_lora_rank;
        ASSIGN_OR_RETURN(lw.q_a, src.Columns(p + ".q_a", h, qr, {{0, qr}}, {MatScale(h)}));
        if (m.qkv_bias) {
          ASSIGN_OR_RETURN(lw.q_a_bias, src.Columns(p + ".q_a_bias", 1, qr, {{0, qr}}, {0.1f}));
        }
        ASSIGN_OR_RETURN(lw.q_a_norm, NormWeight(src, p + ".q_a_norm", qr));
        ASSIGN_OR_RETURN(lw.q_b,
                         src.Columns(p + ".q_b", qr, m.num_heads * qk, {heads_q}, {MatScale(qr)}));
      } else {
        ASSIGN_OR_RETURN(lw.q,
                         src.Columns(p + ".q", h, m.num_heads * qk, {heads_q}, {MatScale(h)}));
      }
      const int64_t latent = a.kv_lora_rank + a.qk_rope_head_dim;
      ASSIGN_OR_RETURN(lw.kv_a, src.Columns(p + ".kv_a", h, latent, {{0, latent}}, {MatScale(h)}));
      if (m.qkv_bias) {
        ASSIGN_OR_RETURN(lw.kv_a_bias,
                         src.Columns(p + ".kv_a_bias", 1, latent, {{0, latent}}, {0.1f}));
      }
      ASSIGN_OR_RETURN(lw.kv_a_norm, NormWeight(src, p + ".kv_a_norm", a.kv_lora_rank));
      const int64_t per_head = a.qk_nope_head_dim + a.v_head_dim;
      ASSIGN_OR_RETURN(
          lw.kv_b, src.Columns(p + ".kv_b", a.kv_lora_rank, m.num_heads * per_head,
                               {{ctp * hq * per_head, hq * per_head}}, {MatScale(a.kv_lora_rank)}));
      const int64_t ow = m.num_heads * a.v_head_dim;
      ASSIGN_OR_RETURN(lw.o, src.Rows(p + ".o", ow, h, {ctp * hq * a.v_head_dim, hq * a.v_head_dim},
                                      {MatScale(ow)}));
    }
    if (m.o_bias && ctp == 0) {
      ASSIGN_OR_RETURN(lw.o_bias, src.Columns(p + ".o_bias", 1, h, {{0, h}}, {0.1f}));
    }
    if (m.IsMoeLayer(l)) {
      const MoeSpec& moe = m.moe;
      const int64_t ne = moe.num_routed_experts;
      ASSIGN_OR_RETURN(lw.router, src.Columns(p + ".router", h, ne, {{0, ne}}, {MatScale(h)}));
      if (moe.router == RouterKind::kSigmoidBias) {
        ASSIGN_OR_RETURN(lw.router_bias, src.Columns(p + ".router_bias", 1, ne, {{0, ne}}, {0.1f}));
      }
      const int64_t inter = moe.expert_intermediate_size;
      const Slice local = geo.Intermediate(inter, ctp);
      for (int64_t x : pl.ExpertsOfEpRank(pl.Coord(rank, Dim::kEp))) {
        ASSIGN_OR_RETURN(ExpertWeights f,
                         Ffn(src, p + ".expert" + std::to_string(x), m, inter, local, ctp == 0));
        lw.experts.push_back(std::move(f));
      }
      if (moe.num_shared_experts > 0) {
        const int64_t s_inter = moe.num_shared_experts * inter;
        ASSIGN_OR_RETURN(lw.shared, Ffn(src, p + ".shared", m, s_inter,
                                        geo.Intermediate(s_inter, ctp), ctp == 0));
      }
    } else {
      ASSIGN_OR_RETURN(lw.ffn, Ffn(src, p + ".ffn", m, m.intermediate_size,
                                   geo.Intermediate(m.intermediate_size, ctp), ctp == 0));
    }
    w.layers_.push_back(std::move(lw));
  }
  return w;
}

bool Weights::has_layer(int64_t l) const {
  for (const LayerWeights& lw : layers_) {
    if (lw.layer == l) return true;
  }
  return false;
}

const LayerWeights& Weights::layer(int64_t l) const {
  for (const LayerWeights& lw : layers_) {
    if (lw.layer == l) return lw;
  }
  return layers_.front();  // callers check has_layer; the executor validates the Program
}

int64_t Weights::num_parameters() const {
  int64_t n = embedding_.size() + final_norm_.size() + lm_head_.size();
  auto ffn = [](const ExpertWeights& f) {
    return f.gate_up.size() + f.gate_up_bias.size() + f.down.size() + f.down_bias.size();
  };
  for (const LayerWeights& l : layers_) {
    n += l.input_norm.size() + l.post_norm.size() + l.qkv.size() + l.qkv_bias.size() +
         l.q_a.size() + l.q_a_bias.size() + l.q_a_norm.size() + l.q_b.size() + l.q.size() +
         l.kv_a.size() + l.kv_a_bias.size() + l.kv_a_norm.size() + l.kv_b.size() + l.o.size() +
         l.o_bias.size() + ffn(l.ffn) + l.router.size() + l.router_bias.size() + ffn(l.shared);
    for (const ExpertWeights& x : l.experts) n += ffn(x);
  }
  return n;
}

}  // namespace shardscope::runtime
