// Test helper: exports the global weights of a one-rank Weights in Hugging Face
// layout, written out from the HF conventions (nn.Linear weights [out × in],
// fused tensors split back into q/k/v and gate/up) rather than through
// HfPartsOf, so the loader's mapping is checked against an independent writer.
#ifndef SHARDSCOPE_RUNTIME_HF_CHECKPOINT_TEST_UTIL_H_
#define SHARDSCOPE_RUNTIME_HF_CHECKPOINT_TEST_UTIL_H_

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "plan/placement.h"
#include "program/program_builder.h"
#include "runtime/comm/local_communicator.h"
#include "runtime/executor.h"
#include "runtime/weights/safetensors.h"
#include "runtime/weights/weights.h"

namespace shardscope::runtime::testing {

// Columns [col, col + n) of row-major [rows × cols] `t`, transposed: [n × rows].
inline std::vector<float> TransposedColumns(const Tensor& t, int64_t col, int64_t n) {
  const int64_t rows = t.rank() == 1 ? 1 : t.dim(0), cols = t.dim(t.rank() - 1);
  std::vector<float> out(static_cast<size_t>(n * rows));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < rows; ++i) out[j * rows + i] = t[i * cols + col + j];
  }
  return out;
}

inline std::vector<float> Slice1d(const Tensor& t, int64_t begin, int64_t n) {
  return std::vector<float>(t.vec().begin() + begin, t.vec().begin() + begin + n);
}

// The HF tensors of `w`, which must hold every layer at tp = 1 and every expert.
inline std::vector<SafetensorsTensor> ExportHf(const ModelSpec& m, const Weights& w,
                                               SafetensorsDtype dtype) {
  std::vector<SafetensorsTensor> out;
  auto add = [&](std::string name, std::vector<int64_t> shape, std::vector<float> v) {
    out.push_back({std::move(name), std::move(shape), std::move(v), dtype});
  };
  const int64_t h = m.hidden_size, V = m.vocab_size;
  // nn.Linear(in, out).weight is [out × in]: our [in × out] columns [col, col + n) transposed.
  auto linear = [&](const std::string& name, const Tensor& t, int64_t col, int64_t n) {
    add(name + ".weight", {n, t.dim(0)}, TransposedColumns(t, col, n));
  };
  auto ffn = [&](const std::string& gate, const std::string& up, const std::string& down,
                 const ExpertWeights& f) {
    const int64_t inter = f.down.dim(0);
    linear(gate, f.gate_up, 0, inter);
    linear(up, f.gate_up, inter, inter);
    linear(down, f.down, 0, h);
    if (!f.gate_up_bias.empty()) {
      add(gate + ".bias", {inter}, Slice1d(f.gate_up_bias, 0, inter));
      add(up + ".bias", {inter}, Slice1d(f.gate_up_bias, inter, inter));
      add(down + ".bias", {h}, f.down_bias.vec());
    }
  };
  add("model.embed_tokens.weight", {V, h}, w.embedding().vec());
  add("model.norm.weight", {h}, w.final_norm().vec());
  if (!m.tie_embeddings) linear("lm_head", w.lm_head(), 0, V);
  const bool mixtral = m.attention == AttentionKind::kGqa && m.is_moe();
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const LayerWeights& lw = w.layer(l);
    const std::string p = fmt::format("model.layers.{}.", l), a = p + "self_attn.";
    add(p + "input_layernorm.weight", {h}, lw.input_norm.vec());
    add(p + "post_attention_layernorm.weight", {h}, lw.post_norm.vec());
    if (m.attention == AttentionKind::kGqa) {
      const int64_t q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim;
      linear(a + "q_proj", lw.qkv, 0, q);
      linear(a + "k_proj", lw.qkv, q, kv);
      linear(a + "v_proj", lw.qkv, q + kv, kv);
      if (m.qkv_bias) {
        add(a + "q_proj.bias", {q}, Slice1d(lw.qkv_bias, 0, q));
        add(a + "k_proj.bias", {kv}, Slice1d(lw.qkv_bias, q, kv));
        add(a + "v_proj.bias", {kv}, Slice1d(lw.qkv_bias, q + kv, kv));
      }
    } else {
      if (m.mla.q_lora_rank > 0) {
        linear(a + "q_a_proj", lw.q_a, 0, m.mla.q_lora_rank);
        if (m.qkv_bias) add(a + "q_a_proj.bias", {m.mla.q_lora_rank}, lw.q_a_bias.vec());
        add(a + "q_a_layernorm.weight", {m.mla.q_lora_rank}, lw.q_a_norm.vec());
        linear(a + "q_b_proj", lw.q_b, 0, lw.q_b.dim(1));
      } else {
        linear(a + "q_proj", lw.q, 0, lw.q.dim(1));
      }
      linear(a + "kv_a_proj_with_mqa", lw.kv_a, 0, lw.kv_a.dim(1));
      if (m.qkv_bias) add(a + "kv_a_proj_with_mqa.bias", {lw.kv_a.dim(1)}, lw.kv_a_bias.vec());
      add(a + "kv_a_layernorm.weight", {m.mla.kv_lora_rank}, lw.kv_a_norm.vec());
      linear(a + "kv_b_proj", lw.kv_b, 0, lw.kv_b.dim(1));
    }
    linear(a + "o_proj", lw.o, 0, h);
    if (m.o_bias) add(a + "o_proj.bias", {h}, lw.o_bias.vec());
    if (!m.IsMoeLayer(l)) {
      const std::string mlp = p + "mlp.";
      ffn(mlp + "gate_proj", mlp + "up_proj", mlp + "down_proj", lw.ffn);
      continue;
    }
    const std::string moe = p + (mixtral ? "block_sparse_moe." : "mlp.");
    linear(moe + "gate", lw.router, 0, m.moe.num_routed_experts);
    if (!lw.router_bias.empty()) {
      add(moe + "gate.e_score_correction_bias", {m.moe.num_routed_experts}, lw.router_bias.vec());
    }
    for (size_t x = 0; x < lw.experts.size(); ++x) {
      const std::string e = fmt::format("{}experts.{}.", moe, x);
      if (mixtral) {
        ffn(e + "w1", e + "w3", e + "w2", lw.experts[x]);
      } else {
        ffn(e + "gate_proj", e + "up_proj", e + "down_proj", lw.experts[x]);
      }
    }
    if (m.moe.num_shared_experts > 0) {
      const std::string s = p + "mlp.shared_experts.";
      ffn(s + "gate_proj", s + "up_proj", s + "down_proj", lw.shared);
    }
  }
  return out;
}

// Writes the seeded global weights of `e`'s model (seed `seed`) as a checkpoint in `dir`.
inline Status WriteSeededCheckpoint(Experiment e, uint64_t seed, const std::string& dir,
                                    SafetensorsDtype dtype, int shards) {
  e.parallel = ParallelSpec{};
  e.workload.seed = seed;
  e.workload.checkpoint.clear();
  ASSIGN_OR_RETURN(Placement pl, Placement::Create(e));
  ASSIGN_OR_RETURN(Weights w, Weights::Create(e, pl, 0));
  return WriteSafetensorsCheckpoint(dir, ExportHf(e.model, w, dtype), shards);
}

// The samples (tokens and logits) of one generation of `e` on one rank, CPU kernels.
inline std::vector<SampleRecord> RunSingle(const Experiment& e) {
  auto pl = Placement::Create(e);
  EXPECT_TRUE(pl.ok()) << pl.status().message();
  if (!pl.ok()) return {};
  auto builder = ProgramBuilder::Create(e, *pl);
  EXPECT_TRUE(builder.ok()) << builder.status().message();
  LocalCommunicator comm;
  auto backend = NewCpuBackend();
  ExecutorOptions o;
  o.keep_logits = true;
  auto ex = Executor::Create(e, *pl, backend.get(), &comm, o);
  EXPECT_TRUE(ex.ok()) << ex.status().message();
  if (!builder.ok() || !ex.ok()) return {};
  Status s = RunGeneration(*builder, **ex);
  EXPECT_TRUE(s.ok()) << s.message();
  return (*ex)->samples();
}

}  // namespace shardscope::runtime::testing

#endif  // SHARDSCOPE_RUNTIME_HF_CHECKPOINT_TEST_UTIL_H_
