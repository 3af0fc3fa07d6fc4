#include "config/experiment_json.h"

#include <nlohmann/json.hpp>

#include "model/model_yaml.h"

namespace shardscope {

using nlohmann::json;

json ModelToJson(const ModelSpec& m) {
  json j = {{"name", m.name},
            {"architecture", m.architecture},
            {"vocab_size", m.vocab_size},
            {"hidden_size", m.hidden_size},
            {"num_layers", m.num_layers},
            {"num_heads", m.num_heads},
            {"num_kv_heads", m.num_kv_heads},
            {"head_dim", m.head_dim},
            {"attention", AttentionKindName(m.attention)},
            {"qkv_bias", m.qkv_bias},
            {"o_bias", m.o_bias},
            {"qk_norm", m.qk_norm},
            {"tie_embeddings", m.tie_embeddings},
            {"activation", ActivationName(m.activation)},
            {"norm", NormKindName(m.norm)},
            {"intermediate_size", m.intermediate_size},
            {"mlp_bias", m.mlp_bias},
            {"rope_theta", m.rope_theta},
            {"max_position_embeddings", m.max_position_embeddings},
            {"dtype", DTypeName(m.dtype)}};
  if (m.attention == AttentionKind::kMla) {
    j["mla"] = {{"q_lora_rank", m.mla.q_lora_rank},
                {"kv_lora_rank", m.mla.kv_lora_rank},
                {"qk_nope_head_dim", m.mla.qk_nope_head_dim},
                {"qk_rope_head_dim", m.mla.qk_rope_head_dim},
                {"v_head_dim", m.mla.v_head_dim}};
  }
  if (m.is_moe()) {
    j["moe"] = {{"num_routed_experts", m.moe.num_routed_experts},
                {"experts_per_token", m.moe.experts_per_token},
                {"num_shared_experts", m.moe.num_shared_experts},
                {"expert_intermediate_size", m.moe.expert_intermediate_size},
                {"first_dense_layers", m.moe.first_dense_layers},
                {"moe_layer_freq", m.moe.moe_layer_freq},
                {"router", RouterKindName(m.moe.router)},
                {"n_group", m.moe.n_group},
                {"topk_group", m.moe.topk_group}};
  }
  return j;
}

json ClusterToJson(const ClusterSpec& c) {
  json peaks = json::object();
  for (const auto& [dtype, flops] : c.device.peak_flops)
    peaks[std::string(DTypeName(dtype))] = flops;
  json j = {{"name", c.name},
            {"num_nodes", c.num_nodes},
            {"devices_per_node", c.devices_per_node},
            {"device",
             {{"name", c.device.name},
              {"kind", DeviceKindName(c.device.kind)},
              {"peak_flops", peaks},
              {"memory_bytes", c.device.memory_bytes},
              {"datasheet_memory_bytes", c.device.datasheet_memory_bytes},
              {"memory_bandwidth", c.device.memory_bandwidth},
              {"l2_cache_bytes", c.device.l2_cache_bytes},
              {"sram_bytes", c.device.sram_bytes},
              {"launch_overhead", c.device.launch_overhead}}},
            {"scale_up",
             {{"kind", ScaleUpKindName(c.scale_up.kind)},
              {"domain_size", c.scale_up.domain_size},
              {"bandwidth_per_device", c.scale_up.bandwidth_per_device},
              {"link_bandwidth", c.scale_up.link_bandwidth},
              {"torus_dims", c.scale_up.torus_dims},
              {"wraparound", c.scale_up.wraparound},
              {"latency", c.scale_up.latency}}},
            {"scale_out",
             {{"nic_bandwidth_per_device", c.scale_out.nic_bandwidth_per_device},
              {"latency", c.scale_out.latency},
              {"topology", c.scale_out.topology}}}};
  // Only when set, so traces of clusters without it keep their bytes.
  if (c.node_memory_bandwidth > 0) j["node_memory_bandwidth"] = c.node_memory_bandwidth;
  return j;
}

json ExperimentToJson(const Experiment& e) {
  const ParallelSpec& p = e.parallel;
  json order = json::array();
  for (Dim d : p.order) order.push_back(DimName(d));
  json placement = json::object();
  for (const auto& [expert, rank] : p.expert_to_ep_rank) placement[std::to_string(expert)] = rank;
  const Workload& w = e.workload;
  json routing = {{"distribution", RoutingKindName(w.routing.kind)}};
  if (w.routing.kind == RoutingKind::kZipf) routing["s"] = w.routing.zipf_s;
  if (w.routing.kind == RoutingKind::kFixed) routing["weights"] = w.routing.fixed_weights;
  if (!w.routing.layer_weights.empty()) {
    json layers = json::object();
    for (const auto& [layer, weights] : w.routing.layer_weights) {
      layers[std::to_string(layer)] = weights;
    }
    routing["layer_weights"] = layers;
  }
  json claims = json::object();
  for (const auto& [k, v] : e.claims) claims[k] = v;
  json j = {{"name", e.name},
            {"sweep", e.sweep_name},
            {"description", e.description},
            {"source_file", e.source_file},
            {"backend", RunnerKindName(e.backend)},
            {"enable_profiling", e.enable_profiling},
            {"model", ModelToJson(e.model)},
            {"cluster", ClusterToJson(e.cluster)},
            {"parallelism",
             {{"strategy", p.strategy},
              {"tp_size", p.tp},
              {"seq_parallel_size", p.sp},
              {"ep_size", p.ep},
              {"dp_size", p.dp},
              {"pp_size", p.pp},
              {"world_size", p.world_size()},
              {"order", order},
              {"ring_variant", SpVariantName(p.sp_variant)},
              {"micro_batches", p.micro_batches},
              {"layer_to_stage", p.layer_to_stage},
              {"expert_placement", placement}}},
            {"workload",
             {{"batch_size", w.batch_size},
              {"sequence_length", w.sequence_length},
              {"tokens_to_generate", w.tokens_to_generate},
              {"dtype", DTypeName(w.dtype)},
              {"kv_dtype", DTypeName(w.kv_dtype)},
              {"seed", w.seed},
              {"routing", routing},
              {"warmup_iterations", w.warmup_iterations},
              {"measured_iterations", w.measured_iterations},
              {"checkpoint", w.checkpoint.empty() ? json(nullptr) : json(w.checkpoint)},
              {"prompts", w.prompts.empty() ? json(nullptr) : json(w.prompts)}}},
            {"claims", claims},
            {"units",
             {{"time", "s"},
              {"memory", "bytes"},
              {"bandwidth", "bytes/s, one direction"},
              {"compute", "FLOP/s"}}}};
  // Only when set, so traces of experiments without it keep their bytes.
  if (e.trace_steps >= 0) j["trace_steps"] = e.trace_steps;
  if (e.trace_compression != TraceCompression::kNone) {
    j["trace_compression"] = TraceCompressionName(e.trace_compression);
  }
  if (e.serving) j["serving"] = ServingToJson(*e.serving);
  if (e.communication != CommunicationSpec{}) {
    const CommunicationSpec& c = e.communication;
    json comm = {{"algorithm", AlgorithmName(c.algorithm)},
                 {"protocol", ProtocolName(c.protocol)},
                 {"all_to_all",
                  {{"prefill", AllToAllKindName(c.prefill_all_to_all)},
                   {"decode", AllToAllKindName(c.decode_all_to_all)}}}};
    if (c.dispatch_dtype) comm["dispatch_dtype"] = DTypeName(*c.dispatch_dtype);
    if (c.combine_dtype) comm["combine_dtype"] = DTypeName(*c.combine_dtype);
    j["communication"] = comm;
  }
  if (w.lm_head_dtype) j["workload"]["lm_head_dtype"] = DTypeName(*w.lm_head_dtype);
  if (w.embedding_dtype) j["workload"]["embedding_dtype"] = DTypeName(*w.embedding_dtype);
  if (p.redundant_experts > 0) j["parallelism"]["redundant_experts"] = p.redundant_experts;
  if (!p.expert_load_path.empty()) j["parallelism"]["expert_load"] = p.expert_load_path;
  if (e.speculative.enabled()) j["speculative"] = SpeculativeToJson(e.speculative);
  if (e.two_batch_overlap) j["two_batch_overlap"] = true;
  if (e.precision.given()) {  // the resolved roles, and the device's FP8 GEMM term they use
    const Precision r = PrecisionOf(e);
    j["precision"] = {{"schemes", e.precision.schemes},
                      {"weights", r.WeightName()},
                      {"weight_scales", ScalesName(r.weight_scales)},
                      {"gemm_inputs", DTypeName(r.gemm_inputs)},
                      {"input_scales", ScalesName(r.input_scales)},
                      {"gemm_dtype", DTypeName(r.GemmDType())},
                      {"activations", DTypeName(r.activations)},
                      {"kv_cache", DTypeName(r.kv_cache)},
                      {"lm_head", DTypeName(r.lm_head)},
                      {"embedding", DTypeName(r.embedding)},
                      {"all_reduce", DTypeName(r.all_reduce)},
                      {"fp8_gemm_efficiency", e.cluster.device.fp8_gemm_efficiency}};
  }
  return j;
}

}  // namespace shardscope
