// Rotary-embedding math the executor and every backend share: the rope style
// and scaling of a model (RopeSpec), its inverse frequencies and YaRN's
// magnitude, as the models' reference code computes them.
#ifndef SHARDSCOPE_RUNTIME_DEVICE_ROPE_H_
#define SHARDSCOPE_RUNTIME_DEVICE_ROPE_H_

#include <cstdint>
#include <vector>

#include "model/model.h"

namespace shardscope::runtime {

// Rotary embedding. kHalfSplit pairs element i with i + d/2 (Llama, NeoX);
// kInterleaved pairs 2i with 2i + 1 (GPT-J; DeepSeek's MLA rope part).
enum class RopeStyle { kHalfSplit, kInterleaved };

struct RopeSpec {
  RopeStyle style = RopeStyle::kHalfSplit;
  double theta = 10000.0;
  RopeScaling scaling;  // the model's rope_scaling; YaRN with factor ≤ 1 is off
};

// Per-pair inverse frequencies (rot_dim / 2 of them) and the cos/sin magnitude
// YaRN applies (1 otherwise): YaRN exactly as DeepSeek's reference computes it,
// linear and llama3 as transformers' rope initialisers do.
std::vector<double> RopeInvFreq(const RopeSpec& spec, int64_t rot_dim);
double RopeMscale(const RopeSpec& spec);
// DeepSeek's yarn_get_mscale(scale, mscale): 1 for scale ≤ 1.
double YarnMscale(double scale, double mscale);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_DEVICE_ROPE_H_
