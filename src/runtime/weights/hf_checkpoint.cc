#include "runtime/weights/hf_checkpoint.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>

#include "runtime/weights/safetensors.h"

namespace shardscope::runtime {
namespace {

enum class Family { kLlama, kMixtral, kDeepseek };

Family FamilyOf(const ModelSpec& m) {
  if (m.attention == AttentionKind::kMla) return Family::kDeepseek;
  return m.is_moe() ? Family::kMixtral : Family::kLlama;
}

// A size of the model with the fields it comes from.
struct Extent {
  int64_t size;
  std::string label;
};

// nn.Linear `base` mapping `in` to `out`: its weight is stored [out × in].
HfPart Linear(const std::string& base, const Extent& out, const Extent& in) {
  return {base + ".weight", {out.size, in.size}, out.label + ", " + in.label, true};
}

HfPart Vector(const std::string& name, const Extent& n) { return {name, {n.size}, n.label, false}; }

std::string ShapeText(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// Parses a leading decimal number of `s` at `*at`.
bool ParseIndex(const std::string& s, size_t* at, int64_t* out) {
  const size_t start = *at;
  int64_t v = 0;
  while (*at < s.size() && std::isdigit(static_cast<unsigned char>(s[*at])) && *at - start < 12) {
    v = v * 10 + (s[(*at)++] - '0');
  }
  *out = v;
  return *at > start;
}

// The parts of FFN weight `what` ("gate_up", "down", or their "_bias") of an FFN
// whose gate, up and down projections are `gate`, `up`, `down` (prefixes).
StatusOr<std::vector<HfPart>> FfnParts(const std::string& what, const std::string& gate,
                                       const std::string& up, const std::string& down,
                                       const Extent& h, const Extent& inter) {
  if (what == "gate_up") return std::vector<HfPart>{Linear(gate, inter, h), Linear(up, inter, h)};
  if (what == "gate_up_bias") {
    return std::vector<HfPart>{Vector(gate + ".bias", inter), Vector(up + ".bias", inter)};
  }
  if (what == "down") return std::vector<HfPart>{Linear(down, h, inter)};
  if (what == "down_bias") return std::vector<HfPart>{Vector(down + ".bias", h)};
  return InvalidArgument("no FFN weight '{}'", what);
}

class HfCheckpointSource : public WeightSource {
 public:
  HfCheckpointSource(SafetensorsReader reader, const ModelSpec& model, bool shapes_only)
      : reader_(std::move(reader)), model_(model), shapes_only_(shapes_only) {}

  StatusOr<Tensor> Columns(const std::string& name, int64_t rows, int64_t cols,
                           const std::vector<Slice>& slices, Init) const override {
    ASSIGN_OR_RETURN(std::vector<HfPart> parts, Parts(name, rows, cols));
    int64_t width = 0;
    for (const Slice& s : slices) width += s.count;
    Tensor t(rows == 1 ? std::vector<int64_t>{width} : std::vector<int64_t>{rows, width});
    if (shapes_only_) {
      RETURN_IF_ERROR(CheckFinite(parts));
      return t;
    }
    int64_t at = 0;
    for (const Slice& s : slices) {
      int64_t p0 = 0;  // first global column of the part
      for (const HfPart& part : parts) {
        const int64_t a = std::max(s.begin, p0);
        const int64_t b = std::min(s.begin + s.count, p0 + part.width());
        if (a < b) {
          // A transposed part's rows are our columns.
          const Block block =
              part.transposed ? Block{a - p0, b - a, 0, rows} : Block{0, rows, a - p0, b - a};
          RETURN_IF_ERROR(reader_.ReadBlock(part.name, block, part.transposed,
                                            t.data() + at + (a - s.begin), width));
        }
        p0 += part.width();
      }
      at += s.count;
    }
    return t;
  }

  StatusOr<Tensor> Rows(const std::string& name, int64_t rows, int64_t cols, Slice slice,
                        Init) const override {
    ASSIGN_OR_RETURN(std::vector<HfPart> parts, Parts(name, rows, cols));
    Tensor t({slice.count, cols});
    if (shapes_only_) {
      RETURN_IF_ERROR(CheckFinite(parts));
      return t;
    }
    int64_t p0 = 0;
    for (const HfPart& part : parts) {
      const Block block = part.transposed ? Block{0, part.width(), slice.begin, slice.count}
                                          : Block{slice.begin, slice.count, 0, part.width()};
      RETURN_IF_ERROR(reader_.ReadBlock(part.name, block, part.transposed, t.data() + p0, cols));
      p0 += part.width();
    }
    return t;
  }

 private:
  // The parts of `name`, each present in the checkpoint with the shape the model needs.
  StatusOr<std::vector<HfPart>> Parts(const std::string& name, int64_t rows, int64_t cols) const {
    ASSIGN_OR_RETURN(std::vector<HfPart> parts, HfPartsOf(model_, name));
    int64_t width = 0;
    for (const HfPart& p : parts) {
      const int64_t in = p.shape.size() == 1 ? 1 : p.shape[p.transposed ? 1 : 0];
      if (in != rows) {
        return InternalError("tensor '{}' has {} rows, its HF part '{}' {}", name, rows, p.name,
                             in);
      }
      width += p.width();
    }
    if (width != cols) {
      return InternalError("tensor '{}' has {} columns, its HF parts {}", name, cols, width);
    }
    for (const HfPart& p : parts) {
      const SafetensorsEntry* e = reader_.Find(p.name);
      if (e == nullptr) {
        return NotFound("{}: no tensor '{}', which model '{}' needs (shape [{}] = {})",
                        reader_.path(), p.name, model_.name, p.dims, ShapeText(p.shape));
      }
      if (e->shape != p.shape) {
        return InvalidArgument("{}: tensor '{}': shape {}, but model '{}' needs [{}] = {}",
                               reader_.FileOf(*e), p.name, ShapeText(e->shape), model_.name, p.dims,
                               ShapeText(p.shape));
      }
    }
    return parts;
  }

  // The check before the ranks start: every tensor's values finite, each scanned once
  // (several ranks and slices read the same tensor).
  Status CheckFinite(const std::vector<HfPart>& parts) const {
    std::lock_guard<std::mutex> lock(checked_mutex_);
    for (const HfPart& part : parts) {
      if (!checked_.insert(part.name).second) continue;
      RETURN_IF_ERROR(reader_.CheckFinite(part.name));
    }
    return Status::Ok();
  }

  SafetensorsReader reader_;
  const ModelSpec model_;
  const bool shapes_only_;  // look tensors up, check shapes and finiteness; read no data
  mutable std::mutex checked_mutex_;
  mutable std::set<std::string> checked_;
};

}  // namespace

StatusOr<std::vector<HfPart>> HfPartsOf(const ModelSpec& m, const std::string& name) {
  if (m.activation != Activation::kSwiGlu) {
    return Unimplemented("not implemented: checkpoints of GELU models (model '{}')", m.name);
  }
  const Family family = FamilyOf(m);
  const Extent h{m.hidden_size, "hidden_size"};
  const Extent vocab{m.vocab_size, "vocab_size"};
  auto bad = [&]() { return InvalidArgument("no checkpoint tensor for weight '{}'", name); };
  if (name == "embedding") {
    return std::vector<HfPart>{
        {"model.embed_tokens.weight", {vocab.size, h.size}, "vocab_size, hidden_size", false}};
  }
  if (name == "final_norm") return std::vector<HfPart>{Vector("model.norm.weight", h)};
  if (name == "lm_head") return std::vector<HfPart>{Linear("lm_head", vocab, h)};

  // "L{layer}.{rest}".
  size_t at = 1;
  int64_t layer = 0;
  if (name.empty() || name[0] != 'L' || !ParseIndex(name, &at, &layer) || at >= name.size() ||
      name[at] != '.' || layer >= m.num_layers) {
    return bad();
  }
  const std::string rest = name.substr(at + 1);
  const std::string pre = fmt::format("model.layers.{}.", layer);
  const std::string attn = pre + "self_attn.";
  if (rest == "input_norm") return std::vector<HfPart>{Vector(pre + "input_layernorm.weight", h)};
  if (rest == "post_norm") {
    return std::vector<HfPart>{Vector(pre + "post_attention_layernorm.weight", h)};
  }
  if (rest == "o_bias") return std::vector<HfPart>{Vector(attn + "o_proj.bias", h)};
  if (family != Family::kDeepseek) {
    const Extent q{m.num_heads * m.head_dim, "num_heads·head_dim"};
    const Extent kv{m.num_kv_heads * m.head_dim, "num_kv_heads·head_dim"};
    if (rest == "qkv") {
      return std::vector<HfPart>{Linear(attn + "q_proj", q, h), Linear(attn + "k_proj", kv, h),
                                 Linear(attn + "v_proj", kv, h)};
    }
    if (rest == "qkv_bias") {
      return std::vector<HfPart>{Vector(attn + "q_proj.bias", q), Vector(attn + "k_proj.bias", kv),
                                 Vector(attn + "v_proj.bias", kv)};
    }
    if (rest == "o") return std::vector<HfPart>{Linear(attn + "o_proj", h, q)};
  } else {
    const MlaSpec& a = m.mla;
    const Extent qk{m.num_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim),
                    "num_heads·(qk_nope_head_dim + qk_rope_head_dim)"};
    const Extent q_lora{a.q_lora_rank, "q_lora_rank"};
    const Extent latent{a.kv_lora_rank + a.qk_rope_head_dim, "kv_lora_rank + qk_rope_head_dim"};
    const Extent r{a.kv_lora_rank, "kv_lora_rank"};
    const Extent kvb{m.num_heads * (a.qk_nope_head_dim + a.v_head_dim),
                     "num_heads·(qk_nope_head_dim + v_head_dim)"};
    const Extent ov{m.num_heads * a.v_head_dim, "num_heads·v_head_dim"};
    if (rest == "q") return std::vector<HfPart>{Linear(attn + "q_proj", qk, h)};
    if (rest == "q_a") return std::vector<HfPart>{Linear(attn + "q_a_proj", q_lora, h)};
    if (rest == "q_a_bias") return std::vector<HfPart>{Vector(attn + "q_a_proj.bias", q_lora)};
    if (rest == "q_a_norm") {
      return std::vector<HfPart>{Vector(attn + "q_a_layernorm.weight", q_lora)};
    }
    if (rest == "q_b") return std::vector<HfPart>{Linear(attn + "q_b_proj", qk, q_lora)};
    if (rest == "kv_a") return std::vector<HfPart>{Linear(attn + "kv_a_proj_with_mqa", latent, h)};
    if (rest == "kv_a_bias") {
      return std::vector<HfPart>{Vector(attn + "kv_a_proj_with_mqa.bias", latent)};
    }
    if (rest == "kv_a_norm") return std::vector<HfPart>{Vector(attn + "kv_a_layernorm.weight", r)};
    if (rest == "kv_b") return std::vector<HfPart>{Linear(attn + "kv_b_proj", kvb, r)};
    if (rest == "o") return std::vector<HfPart>{Linear(attn + "o_proj", h, ov)};
  }

  // Router and FFNs: Mixtral's block_sparse_moe, else DeepSeek's mlp.
  const Extent experts{m.moe.num_routed_experts, "num_routed_experts"};
  const std::string moe = pre + (family == Family::kMixtral ? "block_sparse_moe." : "mlp.");
  if (rest == "router") return std::vector<HfPart>{Linear(moe + "gate", experts, h)};
  if (rest == "router_bias") {
    return std::vector<HfPart>{Vector(moe + "gate.e_score_correction_bias", experts)};
  }
  const size_t dot = rest.find('.');
  if (dot == std::string::npos) return bad();
  const std::string block = rest.substr(0, dot), what = rest.substr(dot + 1);
  StatusOr<std::vector<HfPart>> parts = bad();
  if (block == "ffn") {
    const std::string mlp = pre + "mlp.";
    parts = FfnParts(what, mlp + "gate_proj", mlp + "up_proj", mlp + "down_proj", h,
                     {m.intermediate_size, "intermediate_size"});
  } else if (block == "shared") {
    if (family != Family::kDeepseek) {
      return Unimplemented(
          "not implemented: checkpoint names for the shared experts of GQA MoE "
          "model '{}'",
          m.name);
    }
    const std::string s = pre + "mlp.shared_experts.";
    parts = FfnParts(what, s + "gate_proj", s + "up_proj", s + "down_proj", h,
                     {m.moe.num_shared_experts * m.moe.expert_intermediate_size,
                      "num_shared_experts·expert_intermediate_size"});
  } else if (block.starts_with("expert")) {
    size_t i = 6;
    int64_t x = 0;
    if (!ParseIndex(block, &i, &x) || i != block.size() || x >= experts.size) return bad();
    const Extent inter{m.moe.expert_intermediate_size, "expert_intermediate_size"};
    const std::string e = fmt::format("{}experts.{}.", moe, x);
    parts = family == Family::kMixtral
                ? FfnParts(what, e + "w1", e + "w3", e + "w2", h, inter)
                : FfnParts(what, e + "gate_proj", e + "up_proj", e + "down_proj", h, inter);
  }
  if (!parts.ok()) return bad();
  return parts;
}

StatusOr<std::unique_ptr<WeightSource>> OpenHfCheckpoint(const std::string& path,
                                                         const ModelSpec& model, bool shapes_only) {
  if (model.activation != Activation::kSwiGlu) {
    return Unimplemented("not implemented: checkpoints of GELU models (model '{}')", model.name);
  }
  ASSIGN_OR_RETURN(SafetensorsReader reader, SafetensorsReader::Open(path));
  return std::unique_ptr<WeightSource>(
      new HfCheckpointSource(std::move(reader), model, shapes_only));
}

}  // namespace shardscope::runtime
