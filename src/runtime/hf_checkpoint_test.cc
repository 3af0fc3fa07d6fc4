// Weights from Hugging Face checkpoints: (1) the name/transpose mapping checked
// element by element against hand-coded values (every HF tensor holds
// id·65536 + row·256 + column, exact in fp32) for Llama with biases, DeepSeek
// with q_lora and Mixtral, on sharded ranks; (2) a one-token forward pass of a
// hand-built checkpoint against the same pass written from the HF formulas;
// (3) the seeded weights of tiny-dense and tiny-moe-mla exported in HF layout
// give bit-identical logits; (4) errors name the file, the tensor and the model
// fields. `weights: {checkpoint: ...}` through `shardscope run` on 2 ranks is in
// backends/cpu_run_checkpoint_test.cc.
// The MPI plans (TP2, PP2, EP2, ...) are in hf_checkpoint_mpi_test.cc.
#include "runtime/weights/hf_checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "config/experiment_loader.h"
#include "plan/test_experiments.h"
#include "program/program_builder.h"
#include "runtime/comm/local_communicator.h"
#include "runtime/executor.h"
#include "runtime/hf_checkpoint_test_util.h"
#include "testing/scratch_dir.h"

namespace shardscope::runtime {
namespace {

namespace fs = std::filesystem;

// A checkpoint whose tensor number `id` (1, 2, … in the order added) holds
// id·65536 + i·256 + j at (i, j) (a vector: id·65536 + j).
class PatternCheckpoint {
 public:
  void Add(const std::string& name, std::vector<int64_t> shape) {
    const int64_t id = static_cast<int64_t>(ids_.size()) + 1;
    ids_[name] = id;
    const int64_t rows = shape.size() == 2 ? shape[0] : 1, cols = shape.back();
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) v[i * cols + j] = static_cast<float>(Value(id, i, j));
    }
    tensors_.push_back({name, std::move(shape), std::move(v), SafetensorsDtype::kF32});
  }
  // Element (i, j) of HF tensor `name`.
  float At(const std::string& name, int64_t i, int64_t j) const {
    auto it = ids_.find(name);
    EXPECT_NE(it, ids_.end()) << name;
    return it == ids_.end() ? -1.0f : static_cast<float>(Value(it->second, i, j));
  }
  float At(const std::string& name, int64_t j) const { return At(name, 0, j); }
  Status Write(const std::string& dir, int shards = 1) const {
    return WriteSafetensorsCheckpoint(dir, tensors_, shards);
  }
  std::vector<SafetensorsTensor>& tensors() { return tensors_; }

 private:
  static int64_t Value(int64_t id, int64_t i, int64_t j) { return id * 65536 + i * 256 + j; }
  std::map<std::string, int64_t> ids_;
  std::vector<SafetensorsTensor> tensors_;
};

class HfCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = scratch_.path(); }

  // An experiment of `model` with plan `p` (the cluster from the zoo, any model).
  static Experiment Make(const ModelSpec& model, ParallelSpec p = {}, int64_t batch = 2,
                         int64_t prompt = 8, int64_t generate = 3) {
    Experiment e =
        shardscope::testing::ZooExperiment("tiny-dense", "h100-sxm", p, batch, prompt, generate);
    e.model = model;
    return e;
  }
  static ModelSpec Zoo(const std::string& name) {
    return shardscope::testing::ZooExperiment(name, "h100-sxm", {}, 1, 1).model;
  }

  // The rank of `e`'s plan with tp coordinate `tp` and ep coordinate `ep` (pp, sp, dp 0).
  static int64_t RankAt(const Placement& pl, int64_t tp, int64_t ep) {
    for (int64_t r = 0; r < pl.world_size(); ++r) {
      if (pl.Coord(r, Dim::kTp) == tp && pl.Coord(r, Dim::kEp) == ep &&
          pl.Coord(r, Dim::kPp) == 0 && pl.Coord(r, Dim::kSp) == 0 && pl.Coord(r, Dim::kDp) == 0) {
        return r;
      }
    }
    ADD_FAILURE() << "no rank at tp " << tp << " ep " << ep;
    return 0;
  }

  StatusOr<Weights> Load(const Experiment& e, int64_t tp_coord, int64_t ep_coord = 0) {
    auto pl = Placement::Create(e);
    if (!pl.ok()) return pl.status();
    return Weights::Create(e, *pl, RankAt(*pl, tp_coord, ep_coord));
  }

  shardscope::testing::ScratchDir scratch_{"hf_ckpt"};
  fs::path dir_;
};

// Expects row-major [rows × cols] `t` to equal want(i, j) everywhere.
template <typename F>
void ExpectTensor(const Tensor& t, int64_t rows, int64_t cols, F want, const std::string& what) {
  ASSERT_EQ(t.size(), rows * cols) << what;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      ASSERT_EQ(t[i * cols + j], want(i, j)) << what << " (" << i << ", " << j << ")";
    }
  }
}

ModelSpec HandLlama() {
  ModelSpec m;
  m.name = "hand-llama";
  m.architecture = "LlamaForCausalLM";
  m.vocab_size = 16, m.hidden_size = 8, m.num_layers = 1;
  m.num_heads = 4, m.num_kv_heads = 2, m.head_dim = 2;
  m.qkv_bias = m.o_bias = m.mlp_bias = true;
  m.intermediate_size = 6;
  m.max_position_embeddings = 64;
  return m;
}

void AddLlama(PatternCheckpoint* c) {
  const std::string a = "model.layers.0.self_attn.", f = "model.layers.0.mlp.";
  c->Add("model.embed_tokens.weight", {16, 8});
  c->Add("model.norm.weight", {8});
  c->Add("lm_head.weight", {16, 8});
  c->Add("model.layers.0.input_layernorm.weight", {8});
  c->Add("model.layers.0.post_attention_layernorm.weight", {8});
  c->Add(a + "q_proj.weight", {8, 8});
  c->Add(a + "q_proj.bias", {8});
  c->Add(a + "k_proj.weight", {4, 8});
  c->Add(a + "k_proj.bias", {4});
  c->Add(a + "v_proj.weight", {4, 8});
  c->Add(a + "v_proj.bias", {4});
  c->Add(a + "o_proj.weight", {8, 8});
  c->Add(a + "o_proj.bias", {8});
  for (const char* w : {"gate_proj", "up_proj"}) {
    c->Add(f + w + ".weight", {6, 8});
    c->Add(f + w + ".bias", {6});
  }
  c->Add(f + "down_proj.weight", {8, 6});
  c->Add(f + "down_proj.bias", {8});
}

TEST_F(HfCheckpointTest, LlamaNamesAndTransposesOnTensorParallelRanks) {
  PatternCheckpoint c;
  AddLlama(&c);
  ASSERT_TRUE(c.Write(dir_.string(), 2).ok());
  ParallelSpec p;
  p.tp = 2;
  Experiment e = Make(HandLlama(), p);
  e.workload.checkpoint = dir_.string();
  const std::string a = "model.layers.0.self_attn.", f = "model.layers.0.mlp.";
  // tp coordinate 1: vocabulary [8, 16), q heads 2–3 (rows 4–7 of q_proj), KV head 1
  // (rows 2–3 of k_proj and v_proj), FFN rows [3, 6).
  auto w = Load(e, 1);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ExpectTensor(
      w->embedding(), 8, 8,
      [&](int64_t r, int64_t c2) { return c.At("model.embed_tokens.weight", 8 + r, c2); },
      "embedding");
  ExpectTensor(
      w->lm_head(), 8, 8, [&](int64_t i, int64_t v) { return c.At("lm_head.weight", 8 + v, i); },
      "lm_head");
  ExpectTensor(
      w->final_norm(), 1, 8, [&](int64_t, int64_t j) { return c.At("model.norm.weight", j); },
      "final_norm");
  const LayerWeights& l = w->layer(0);
  ExpectTensor(
      l.input_norm, 1, 8,
      [&](int64_t, int64_t j) { return c.At("model.layers.0.input_layernorm.weight", j); },
      "input_norm");
  ExpectTensor(
      l.post_norm, 1, 8,
      [&](int64_t, int64_t j) { return c.At("model.layers.0.post_attention_layernorm.weight", j); },
      "post_norm");
  // Fused [q heads 2–3 | k head 1 | v head 1], 4 + 2 + 2 columns.
  ExpectTensor(
      l.qkv, 8, 8,
      [&](int64_t i, int64_t col) {
        if (col < 4) return c.At(a + "q_proj.weight", 4 + col, i);
        if (col < 6) return c.At(a + "k_proj.weight", 2 + col - 4, i);
        return c.At(a + "v_proj.weight", 2 + col - 6, i);
      },
      "qkv");
  ExpectTensor(
      l.qkv_bias, 1, 8,
      [&](int64_t, int64_t col) {
        if (col < 4) return c.At(a + "q_proj.bias", 4 + col);
        if (col < 6) return c.At(a + "k_proj.bias", 2 + col - 4);
        return c.At(a + "v_proj.bias", 2 + col - 6);
      },
      "qkv_bias");
  ExpectTensor(
      l.o, 4, 8, [&](int64_t r, int64_t col) { return c.At(a + "o_proj.weight", col, 4 + r); },
      "o");
  EXPECT_TRUE(l.o_bias.empty());  // the row-parallel bias lives on tp coordinate 0
  ExpectTensor(
      l.ffn.gate_up, 8, 6,
      [&](int64_t i, int64_t col) {
        return col < 3 ? c.At(f + "gate_proj.weight", 3 + col, i)
                       : c.At(f + "up_proj.weight", col, i);
      },
      "gate_up");
  ExpectTensor(
      l.ffn.gate_up_bias, 1, 6,
      [&](int64_t, int64_t col) {
        return col < 3 ? c.At(f + "gate_proj.bias", 3 + col) : c.At(f + "up_proj.bias", col);
      },
      "gate_up_bias");
  ExpectTensor(
      l.ffn.down, 3, 8,
      [&](int64_t r, int64_t col) { return c.At(f + "down_proj.weight", col, 3 + r); }, "down");
  EXPECT_TRUE(l.ffn.down_bias.empty());
  // tp coordinate 0 holds the row-parallel biases.
  auto w0 = Load(e, 0);
  ASSERT_TRUE(w0.ok()) << w0.status().message();
  ExpectTensor(
      w0->layer(0).o_bias, 1, 8, [&](int64_t, int64_t j) { return c.At(a + "o_proj.bias", j); },
      "o_bias");
  ExpectTensor(
      w0->layer(0).ffn.down_bias, 1, 8,
      [&](int64_t, int64_t j) { return c.At(f + "down_proj.bias", j); }, "down_bias");
}

TEST_F(HfCheckpointTest, TiedEmbeddingsAndReplicatedKvHeads) {
  ModelSpec m = HandLlama();
  m.tie_embeddings = true;
  m.qkv_bias = m.o_bias = m.mlp_bias = false;
  PatternCheckpoint c;
  const std::string a = "model.layers.0.self_attn.", f = "model.layers.0.mlp.";
  c.Add("model.embed_tokens.weight", {16, 8});
  c.Add("model.norm.weight", {8});
  c.Add("model.layers.0.input_layernorm.weight", {8});
  c.Add("model.layers.0.post_attention_layernorm.weight", {8});
  c.Add(a + "q_proj.weight", {8, 8});
  c.Add(a + "k_proj.weight", {4, 8});
  c.Add(a + "v_proj.weight", {4, 8});
  c.Add(a + "o_proj.weight", {8, 8});
  c.Add(f + "gate_proj.weight", {6, 8});
  c.Add(f + "up_proj.weight", {6, 8});
  c.Add(f + "down_proj.weight", {8, 6});
  ASSERT_TRUE(c.Write(dir_.string()).ok());
  ParallelSpec p;
  p.tp = 4;  // more ranks than KV heads: rank 3 (q head 3) uses KV head 1
  Experiment e = Make(m, p);
  e.workload.checkpoint = dir_.string();
  auto w = Load(e, 3);
  ASSERT_TRUE(w.ok()) << w.status().message();
  ExpectTensor(
      w->lm_head(), 8, 4,
      [&](int64_t i, int64_t v) { return c.At("model.embed_tokens.weight", 12 + v, i); },
      "tied lm_head");
  ExpectTensor(
      w->layer(0).qkv, 8, 6,
      [&](int64_t i, int64_t col) {
        if (col < 2) return c.At(a + "q_proj.weight", 6 + col, i);
        if (col < 4) return c.At(a + "k_proj.weight", 2 + col - 2, i);
        return c.At(a + "v_proj.weight", 2 + col - 4, i);
      },
      "qkv");
}

ModelSpec HandDeepseek() {
  ModelSpec m;
  m.name = "hand-deepseek";
  m.architecture = "DeepseekV3ForCausalLM";
  m.vocab_size = 16, m.hidden_size = 8, m.num_layers = 2;
  m.num_heads = 2, m.num_kv_heads = 2, m.head_dim = 0;
  m.attention = AttentionKind::kMla;
  m.mla = {.q_lora_rank = 4,
           .kv_lora_rank = 4,
           .qk_nope_head_dim = 2,
           .qk_rope_head_dim = 2,
           .v_head_dim = 2};
  m.qkv_bias = m.o_bias = true;  // attention_bias
  m.intermediate_size = 6;
  m.moe = {.num_routed_experts = 4,
           .experts_per_token = 2,
           .num_shared_experts = 1,
           .expert_intermediate_size = 4,
           .first_dense_layers = 1,
           .moe_layer_freq = 1,
           .router = RouterKind::kSigmoidBias,
           .n_group = 2,
           .topk_group = 1};
  m.max_position_embeddings = 64;
  return m;
}

TEST_F(HfCheckpointTest, DeepseekNamesOnAnExpertAndTensorParallelRank) {
  PatternCheckpoint c;
  c.Add("model.embed_tokens.weight", {16, 8});
  c.Add("model.norm.weight", {8});
  c.Add("lm_head.weight", {16, 8});
  auto ffn = [&](const std::string& p, int64_t inter) {
    c.Add(p + "gate_proj.weight", {inter, 8});
    c.Add(p + "up_proj.weight", {inter, 8});
    c.Add(p + "down_proj.weight", {8, inter});
  };
  for (int l = 0; l < 2; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l), a = p + "self_attn.";
    c.Add(p + "input_layernorm.weight", {8});
    c.Add(p + "post_attention_layernorm.weight", {8});
    c.Add(a + "q_a_proj.weight", {4, 8});
    c.Add(a + "q_a_proj.bias", {4});
    c.Add(a + "q_a_layernorm.weight", {4});
    c.Add(a + "q_b_proj.weight", {8, 4});  // 2 heads × (nope 2 + rope 2)
    c.Add(a + "kv_a_proj_with_mqa.weight", {6, 8});
    c.Add(a + "kv_a_proj_with_mqa.bias", {6});
    c.Add(a + "kv_a_layernorm.weight", {4});
    c.Add(a + "kv_b_proj.weight", {8, 4});  // 2 heads × (nope 2 + v 2)
    c.Add(a + "o_proj.weight", {8, 4});
    c.Add(a + "o_proj.bias", {8});
    if (l == 0) {
      ffn(p + "mlp.", 6);
      continue;
    }
    c.Add(p + "mlp.gate.weight", {4, 8});
    c.Add(p + "mlp.gate.e_score_correction_bias", {4});
    for (int x = 0; x < 4; ++x) ffn(fmt::format("{}mlp.experts.{}.", p, x), 4);
    ffn(p + "mlp.shared_experts.", 4);
  }
  ASSERT_TRUE(c.Write(dir_.string(), 3).ok());
  ParallelSpec p;
  p.tp = 2, p.ep = 2;
  Experiment e = Make(HandDeepseek(), p, 4);
  e.workload.checkpoint = dir_.string();
  auto w = Load(e, /*tp=*/1, /*ep=*/1);  // head 1; experts 2 and 3; FFN rows [2, 4) / [3, 6)
  ASSERT_TRUE(w.ok()) << w.status().message();
  const std::string a = "model.layers.1.self_attn.", mlp = "model.layers.1.mlp.";
  const LayerWeights& l = w->layer(1);
  ExpectTensor(
      l.q_a, 8, 4, [&](int64_t i, int64_t j) { return c.At(a + "q_a_proj.weight", j, i); }, "q_a");
  ExpectTensor(
      l.q_a_bias, 1, 4, [&](int64_t, int64_t j) { return c.At(a + "q_a_proj.bias", j); },
      "q_a_bias");
  ExpectTensor(
      l.q_a_norm, 1, 4, [&](int64_t, int64_t j) { return c.At(a + "q_a_layernorm.weight", j); },
      "q_a_norm");
  ExpectTensor(
      l.q_b, 4, 4,
      [&](int64_t i, int64_t j) {
        return c.At(a + "q_b_proj.weight", 4 + j, i);  // head 1 = rows [4, 8): nope | rope
      },
      "q_b");
  ExpectTensor(
      l.kv_a, 8, 6,
      [&](int64_t i, int64_t j) { return c.At(a + "kv_a_proj_with_mqa.weight", j, i); }, "kv_a");
  ExpectTensor(
      l.kv_a_bias, 1, 6, [&](int64_t, int64_t j) { return c.At(a + "kv_a_proj_with_mqa.bias", j); },
      "kv_a_bias");
  ExpectTensor(
      l.kv_a_norm, 1, 4, [&](int64_t, int64_t j) { return c.At(a + "kv_a_layernorm.weight", j); },
      "kv_a_norm");
  ExpectTensor(
      l.kv_b, 4, 4,
      [&](int64_t i, int64_t j) {
        return c.At(a + "kv_b_proj.weight", 4 + j, i);  // head 1 = rows [4, 8): k_nope | v
      },
      "kv_b");
  ExpectTensor(
      l.o, 2, 8, [&](int64_t r, int64_t j) { return c.At(a + "o_proj.weight", j, 2 + r); }, "o");
  EXPECT_TRUE(l.o_bias.empty());
  ExpectTensor(
      l.router, 8, 4, [&](int64_t i, int64_t x) { return c.At(mlp + "gate.weight", x, i); },
      "router");
  ExpectTensor(
      l.router_bias, 1, 4,
      [&](int64_t, int64_t x) { return c.At(mlp + "gate.e_score_correction_bias", x); },
      "router_bias");
  ASSERT_EQ(l.experts.size(), 2u);
  for (int k = 0; k < 2; ++k) {
    const std::string x = fmt::format("{}experts.{}.", mlp, 2 + k);
    ExpectTensor(
        l.experts[k].gate_up, 8, 4,
        [&](int64_t i, int64_t j) {
          return j < 2 ? c.At(x + "gate_proj.weight", 2 + j, i) : c.At(x + "up_proj.weight", j, i);
        },
        x + "gate_up");
    ExpectTensor(
        l.experts[k].down, 2, 8,
        [&](int64_t r, int64_t j) { return c.At(x + "down_proj.weight", j, 2 + r); }, x + "down");
  }
  const std::string s = mlp + "shared_experts.";
  ExpectTensor(
      l.shared.gate_up, 8, 4,
      [&](int64_t i, int64_t j) {
        return j < 2 ? c.At(s + "gate_proj.weight", 2 + j, i) : c.At(s + "up_proj.weight", j, i);
      },
      "shared gate_up");
  ExpectTensor(
      l.shared.down, 2, 8,
      [&](int64_t r, int64_t j) { return c.At(s + "down_proj.weight", j, 2 + r); }, "shared down");
  const std::string d = "model.layers.0.mlp.";
  ExpectTensor(
      w->layer(0).ffn.gate_up, 8, 6,
      [&](int64_t i, int64_t j) {
        return j < 3 ? c.At(d + "gate_proj.weight", 3 + j, i) : c.At(d + "up_proj.weight", j, i);
      },
      "dense gate_up");
}

TEST_F(HfCheckpointTest, MixtralExpertNames) {
  ModelSpec m = HandLlama();
  m.name = "hand-mixtral";
  m.architecture = "MixtralForCausalLM";
  m.qkv_bias = m.o_bias = m.mlp_bias = false;
  m.moe.num_routed_experts = 4;
  m.moe.experts_per_token = 2;
  m.moe.expert_intermediate_size = 6;
  PatternCheckpoint c;
  const std::string a = "model.layers.0.self_attn.", moe = "model.layers.0.block_sparse_moe.";
  c.Add("model.embed_tokens.weight", {16, 8});
  c.Add("model.norm.weight", {8});
  c.Add("lm_head.weight", {16, 8});
  c.Add("model.layers.0.input_layernorm.weight", {8});
  c.Add("model.layers.0.post_attention_layernorm.weight", {8});
  c.Add(a + "q_proj.weight", {8, 8});
  c.Add(a + "k_proj.weight", {4, 8});
  c.Add(a + "v_proj.weight", {4, 8});
  c.Add(a + "o_proj.weight", {8, 8});
  c.Add(moe + "gate.weight", {4, 8});
  for (int x = 0; x < 4; ++x) {
    const std::string e = fmt::format("{}experts.{}.", moe, x);
    c.Add(e + "w1.weight", {6, 8});
    c.Add(e + "w3.weight", {6, 8});
    c.Add(e + "w2.weight", {8, 6});
  }
  ASSERT_TRUE(c.Write(dir_.string()).ok());
  ParallelSpec p;
  p.ep = 2;
  Experiment e = Make(m, p, 4);
  e.workload.checkpoint = dir_.string();
  auto w = Load(e, 0, 1);
  ASSERT_TRUE(w.ok()) << w.status().message();
  const LayerWeights& l = w->layer(0);
  ExpectTensor(
      l.router, 8, 4, [&](int64_t i, int64_t x) { return c.At(moe + "gate.weight", x, i); },
      "router");
  ASSERT_EQ(l.experts.size(), 2u);
  const std::string x3 = moe + "experts.3.";
  ExpectTensor(
      l.experts[1].gate_up, 8, 12,
      [&](int64_t i, int64_t j) {
        return j < 6 ? c.At(x3 + "w1.weight", j, i) : c.At(x3 + "w3.weight", j - 6, i);
      },
      "expert 3 gate_up = w1 | w3");
  ExpectTensor(
      l.experts[1].down, 6, 8, [&](int64_t r, int64_t j) { return c.At(x3 + "w2.weight", j, r); },
      "expert 3 down = w2");
}

// y[o] = Σ_i W[o][i] · x[i] with W as nn.Linear stores it, [out × in].
std::vector<double> Apply(const std::vector<std::vector<double>>& w, const std::vector<double>& x) {
  std::vector<double> y(w.size(), 0.0);
  for (size_t o = 0; o < w.size(); ++o) {
    for (size_t i = 0; i < x.size(); ++i) y[o] += w[o][i] * x[i];
  }
  return y;
}

std::vector<double> RmsNorm(const std::vector<double>& x, const std::vector<double>& g) {
  double ss = 0.0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + 1e-6);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * g[i];
  return y;
}

std::vector<float> Flat(const std::vector<std::vector<double>>& w) {
  std::vector<float> out;
  for (const auto& row : w) out.insert(out.end(), row.begin(), row.end());
  return out;
}

// One prompt token at position 0: RoPE is the identity and attention over the one
// key returns its value, so the output follows from v_proj, o_proj, the FFN and
// the norms alone; the reference applies the HF formulas to the HF tensors.
TEST_F(HfCheckpointTest, OneTokenForwardMatchesTheHfFormulas) {
  ModelSpec m;
  m.name = "hand-forward";
  m.architecture = "LlamaForCausalLM";
  m.vocab_size = 4, m.hidden_size = 4, m.num_layers = 1;
  m.num_heads = 2, m.num_kv_heads = 2, m.head_dim = 2;
  m.intermediate_size = 2;
  m.max_position_embeddings = 16;
  using Mat = std::vector<std::vector<double>>;
  const Mat embed(4, {1.0, 1.0, 1.0, 1.0});  // every token: the same row
  const Mat q = {{0.3, -0.2, 0.1, 0.5}, {0.2, 0.2, -0.4, 0.1}, {0.7, 0, 0, 0}, {0, 0, 0.9, 1}};
  const Mat k = {{0.1, 0.4, 0.3, -0.6}, {0, 1, 0, 0}, {0.5, 0.5, 0.5, 0.5}, {1, 0, 0, -1}};
  const Mat v = {{1, 0, 0, 0}, {0, 2, 0, 0}, {0, 0, 3, 0}, {0, 0, 0, 4}};
  const Mat o = {{0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}, {1, 0, 0, 0}};  // out j ← in j + 1
  const Mat gate = {{1, 0, 0, 0}, {0, 0, 1, 0}};
  const Mat up = {{0, 1, 0, 0}, {0, 0, 0, 1}};
  const Mat down = {{1, 0}, {0, 1}, {1, 1}, {0, 0}};
  const Mat lm = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 0, 2}, {1, 1, 1, 1}};
  const std::vector<double> in_norm = {1, 1, 1, 1}, post_norm = {1, 0.5, 2, 1},
                            final_norm = {1, 1, 1, 1};
  const std::string a = "model.layers.0.self_attn.", f = "model.layers.0.mlp.";
  auto t = [](const std::string& name, const Mat& w) {
    return SafetensorsTensor{name,
                             {static_cast<int64_t>(w.size()), static_cast<int64_t>(w[0].size())},
                             Flat(w),
                             SafetensorsDtype::kF32};
  };
  auto vec = [](const std::string& name, const std::vector<double>& x) {
    return SafetensorsTensor{name,
                             {static_cast<int64_t>(x.size())},
                             std::vector<float>(x.begin(), x.end()),
                             SafetensorsDtype::kF32};
  };
  ASSERT_TRUE(WriteSafetensorsCheckpoint(
                  dir_.string(),
                  {t("model.embed_tokens.weight", embed), vec("model.norm.weight", final_norm),
                   t("lm_head.weight", lm), vec("model.layers.0.input_layernorm.weight", in_norm),
                   vec("model.layers.0.post_attention_layernorm.weight", post_norm),
                   t(a + "q_proj.weight", q), t(a + "k_proj.weight", k), t(a + "v_proj.weight", v),
                   t(a + "o_proj.weight", o), t(f + "gate_proj.weight", gate),
                   t(f + "up_proj.weight", up), t(f + "down_proj.weight", down)})
                  .ok());
  // HF forward of one token.
  const std::vector<double> x0 = embed[0];
  const std::vector<double> attn = Apply(v, RmsNorm(x0, in_norm));  // softmax over one key = 1
  std::vector<double> x1 = Apply(o, attn);
  for (size_t i = 0; i < 4; ++i) x1[i] += x0[i];
  const std::vector<double> n2 = RmsNorm(x1, post_norm);
  const std::vector<double> g = Apply(gate, n2), u = Apply(up, n2);
  std::vector<double> act(2);
  for (size_t i = 0; i < 2; ++i) act[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  std::vector<double> x2 = Apply(down, act);
  for (size_t i = 0; i < 4; ++i) x2[i] += x1[i];
  const std::vector<double> want = Apply(lm, RmsNorm(x2, final_norm));

  Experiment e = Make(m, {}, 1, 1, 1);
  e.workload.checkpoint = dir_.string();
  const std::vector<SampleRecord> got = testing::RunSingle(e);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].logits.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(got[0].logits[i], want[i], 1e-5 * std::abs(want[i]));
  EXPECT_EQ(got[0].token, 3);  // logit 3 sums the whole normed state
}

// Exports the seeded weights of `model` in HF layout and runs one rank from the
// checkpoint: the logits must equal the seeded run's bit for bit.
void ExpectRoundTrip(const std::string& model, const fs::path& dir, int shards) {
  Experiment e = shardscope::testing::ZooExperiment(model, "h100-sxm", {}, 2, 8, 3);
  e.workload.seed = 7;
  const std::vector<SampleRecord> seeded = testing::RunSingle(e);
  ASSERT_TRUE(
      testing::WriteSeededCheckpoint(e, 7, (dir / "a").string(), SafetensorsDtype::kF32, shards)
          .ok());
  Experiment from = e;
  from.workload.checkpoint = (dir / "a").string();
  const std::vector<SampleRecord> loaded = testing::RunSingle(from);
  ASSERT_EQ(loaded.size(), seeded.size());
  ASSERT_EQ(seeded.size(), 2u * 3u);  // 2 requests × (prefill + 2 decode steps)
  for (size_t i = 0; i < seeded.size(); ++i) {
    EXPECT_EQ(loaded[i].token, seeded[i].token) << model << " sample " << i;
    EXPECT_EQ(loaded[i].logits, seeded[i].logits) << model << " sample " << i;
  }
  // The logits do come from the checkpoint: a doubled lm_head doubles them exactly.
  auto pl = Placement::Create(e);
  ASSERT_TRUE(pl.ok());
  auto w = Weights::Create(e, *pl, 0);
  ASSERT_TRUE(w.ok());
  std::vector<SafetensorsTensor> ts = testing::ExportHf(e.model, *w, SafetensorsDtype::kF32);
  for (SafetensorsTensor& t : ts) {
    if (t.name == "lm_head.weight") {
      for (float& x : t.values) x *= 2.0f;
    }
  }
  ASSERT_TRUE(WriteSafetensorsCheckpoint((dir / "b").string(), ts).ok());
  from.workload.checkpoint = (dir / "b").string();
  const std::vector<SampleRecord> doubled = testing::RunSingle(from);
  ASSERT_FALSE(doubled.empty());
  ASSERT_EQ(doubled[0].logits.size(), seeded[0].logits.size());
  for (size_t v = 0; v < seeded[0].logits.size(); ++v) {
    ASSERT_EQ(doubled[0].logits[v], 2.0f * seeded[0].logits[v]) << "vocabulary entry " << v;
  }
}

TEST_F(HfCheckpointTest, TinyDenseRoundTripGivesIdenticalLogits) {
  ExpectRoundTrip("tiny-dense", dir_, 1);
}

TEST_F(HfCheckpointTest, TinyMoeMlaRoundTripGivesIdenticalLogits) {
  ExpectRoundTrip("tiny-moe-mla", dir_, 3);
}

TEST_F(HfCheckpointTest, ErrorsNameTheFileTheTensorAndTheModelFields) {
  const std::string a = "model.layers.0.self_attn.";
  Experiment e = Make(HandLlama());
  e.workload.checkpoint = dir_.string();
  {
    PatternCheckpoint c;
    AddLlama(&c);
    std::erase_if(c.tensors(), [&](const auto& t) { return t.name == a + "v_proj.weight"; });
    ASSERT_TRUE(c.Write(dir_.string()).ok());
    auto w = Load(e, 0);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
    EXPECT_NE(w.status().message().find(
                  "no tensor 'model.layers.0.self_attn.v_proj.weight', which model 'hand-llama' "
                  "needs (shape [num_kv_heads·head_dim, hidden_size] = [4, 8])"),
              std::string::npos)
        << w.status().message();
  }
  {
    PatternCheckpoint c;
    AddLlama(&c);
    for (SafetensorsTensor& t : c.tensors()) {
      if (t.name == a + "k_proj.weight") t.shape = {2, 16};
    }
    ASSERT_TRUE(c.Write(dir_.string()).ok());
    auto w = Load(e, 0);
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.status().message().find("model.safetensors: tensor "
                                        "'model.layers.0.self_attn.k_proj.weight': shape [2, 16], "
                                        "but model 'hand-llama' needs [num_kv_heads·head_dim, "
                                        "hidden_size] = [4, 8]"),
              std::string::npos)
        << w.status().message();
  }
  {
    PatternCheckpoint c;
    AddLlama(&c);
    ASSERT_TRUE(c.Write(dir_.string()).ok());
    std::string bytes;
    {
      std::ifstream in(dir_ / "model.safetensors", std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    // Relabel the embedding (4-byte F32) as I32: same size, not a float.
    const size_t at = bytes.find(R"("model.embed_tokens.weight":{)");
    ASSERT_NE(at, std::string::npos);
    bytes.replace(bytes.find("F32", at), 3, "I32");
    std::ofstream(dir_ / "model.safetensors", std::ios::binary | std::ios::trunc) << bytes;
    auto w = Load(e, 0);
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.status().message().find(
                  "tensor 'model.embed_tokens.weight': dtype I32 cannot be read as fp32"),
              std::string::npos)
        << w.status().message();
  }
  e.workload.checkpoint = (dir_ / "absent").string();
  EXPECT_EQ(Load(e, 0).status().code(), StatusCode::kNotFound);

  EXPECT_EQ(HfPartsOf(HandLlama(), "L7.qkv").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HfPartsOf(HandLlama(), "L0.expert0.gate_up").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(HfPartsOf(HandLlama(), "L0.ffn.sideways").status().code(),
            StatusCode::kInvalidArgument);
  ModelSpec gelu = HandLlama();
  gelu.activation = Activation::kGelu;
  EXPECT_EQ(OpenHfCheckpoint(dir_.string(), gelu).status().code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace shardscope::runtime
