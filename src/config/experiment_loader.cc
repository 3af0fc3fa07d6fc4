#include "config/experiment_loader.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>

#include "cluster/cluster_yaml.h"
#include "config/prompts.h"
#include "config/serving.h"
#include "core/yaml_reader.h"
#include "model/hf_config.h"
#include "model/model_yaml.h"
#include "model/params.h"

namespace shardscope {
namespace fs = std::filesystem;
namespace {

// Fields that may be given as a list to sweep, with the short tag used to name
// the expanded experiments ("_seq4096").
struct SweepField {
  std::initializer_list<const char*> section;  // the maps holding it: {} for the experiment
  const char* key;
  const char* tag;
};
const SweepField kSweepFields[] = {
    {{}, "batch_size", "b"},
    {{}, "sequence_length", "seq"},
    {{}, "tokens_to_generate", "gen"},
    {{}, "seed", "seed"},
    {{"parallelism"}, "tp_size", "tp"},
    {{"parallelism"}, "pp_size", "pp"},
    {{"parallelism"}, "seq_parallel_size", "sp"},
    {{"parallelism"}, "dp_size", "dp"},
    {{"parallelism"}, "ep_size", "ep"},
    {{"parallelism"}, "micro_batches", "mb"},
    // Served workloads (config/serving.h): the load and the scheduler's caps.
    {{"workload", "arrivals"}, "rate_per_s", "rate"},
    {{"workload", "arrivals"}, "concurrency", "conc"},
    {{"workload"}, "requests", "req"},
    {{"scheduler"}, "max_num_seqs", "seqs"},
    {{"scheduler"}, "max_num_batched_tokens", "tokens"},
};

// The map holding a sweep field: the node itself, or its (nested) section;
// undefined when a level is missing. (reset() rebinds; `=` would assign into
// the node it holds.)
YAML::Node SectionNode(const YAML::Node& node, const SweepField& f) {
  YAML::Node at;
  at.reset(node);
  for (const char* part : f.section) {
    if (!at.IsDefined() || !at.IsMap() || !at[part].IsDefined()) {
      return YAML::Node(YAML::NodeType::Undefined);
    }
    YAML::Node next = at[part];
    at.reset(next);
  }
  return at;
}

// The field's context: "workload.arrivals.rate_per_s" named level by level.
YamlContext FieldContext(const YamlContext& ctx, const SweepField& f) {
  YamlContext c = ctx;
  for (const char* part : f.section) c = c.Child(part);
  return c.Child(f.key);
}

const std::vector<std::string> kExperimentKeys = {"name",
                                                  "communication",
                                                  "description",
                                                  "model",
                                                  "parallelism",
                                                  "batch_size",
                                                  "sequence_length",
                                                  "tokens_to_generate",
                                                  "dtype",
                                                  "kv_dtype",
                                                  "lm_head_dtype",
                                                  "embedding_dtype",
                                                  "precision",
                                                  "hardware",
                                                  "backend",
                                                  "enable_profiling",
                                                  "trace_steps",
                                                  "trace_compression",
                                                  "seed",
                                                  "claims",
                                                  "routing",
                                                  "warmup_iterations",
                                                  "measured_iterations",
                                                  "weights",
                                                  "prompts",
                                                  "speculative",
                                                  "two_batch_overlap"};

const std::vector<std::string> kParallelKeys = {
    "strategy",          "tp_size",       "pp_size",        "seq_parallel_size",
    "sp_size",           "dp_size",       "ep_size",        "order",
    "ring_variant",      "micro_batches", "layer_to_stage", "expert_placement",
    "redundant_experts", "expert_load"};

std::string ZooDir(const LoaderOptions& options, const std::string& config_path, const char* sub) {
  const std::string& given =
      std::string(sub) == "models" ? options.models_dir : options.hardware_dir;
  if (!given.empty()) return given;
  fs::path beside = fs::path(config_path).parent_path() / sub;
  if (fs::is_directory(beside)) return beside.string();
  return (fs::path(SHARDSCOPE_SOURCE_DIR) / "configs" / sub).string();
}

std::string ListYamlStems(const std::string& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".yaml") names.insert(entry.path().stem().string());
  }
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The zoo folders of one load and the zoo files read so far, each parsed once:
// a sweep's points share their model and hardware files (parsing them again for
// every point was most of a long sweep's load time).
struct Zoo {
  std::string models_dir;
  std::string hardware_dir;
  std::map<std::string, YAML::Node> parsed;  // by file path
};

// Loads zoo entry `name` from `dir` as a YAML node (a copy the caller may change).
StatusOr<YAML::Node> LoadZooNode(const std::string& dir, const std::string& name,
                                 const YamlContext& ctx, const char* what, Zoo* zoo) {
  fs::path file = fs::path(dir) / (name + ".yaml");
  if (auto it = zoo->parsed.find(file.string()); it != zoo->parsed.end()) {
    return YAML::Clone(it->second);
  }
  if (name.find('/') != std::string::npos || !fs::exists(file)) {
    return Status(StatusCode::kNotFound, ctx.Error(fmt::format("unknown {} '{}' (known in {}: {})",
                                                               what, name, dir, ListYamlStems(dir)))
                                             .message());
  }
  ASSIGN_OR_RETURN(YAML::Node node, LoadYamlFile(file.string()));
  zoo->parsed.emplace(file.string(), node);
  return YAML::Clone(node);
}

// A zoo reference, resolved to the YAML to parse and the context naming it:
// NAME → the zoo file; {base: NAME, <overrides>} → the zoo file with the
// overrides merged over it; any other map as it is (a full spec inline).
struct ZooRef {
  YAML::Node node;
  YamlContext ctx;
};

StatusOr<ZooRef> ResolveZooRef(const YAML::Node& node, const YamlContext& ctx,
                               const std::string& dir, const char* what, Zoo* zoo) {
  if (!node.IsDefined() || node.IsNull()) return ctx.Error("is required but missing");
  if (node.IsScalar()) {
    ASSIGN_OR_RETURN(YAML::Node file, LoadZooNode(dir, node.Scalar(), ctx, what, zoo));
    return ZooRef{file, YamlContext{(fs::path(dir) / (node.Scalar() + ".yaml")).string(), "", ""}};
  }
  ASSIGN_OR_RETURN(YamlMap map, YamlMap::From(node, ctx));
  if (!map.Has("base")) return ZooRef{YAML::Clone(node), ctx};
  std::string base;
  RETURN_IF_ERROR(map.Required("base", &base));
  ASSIGN_OR_RETURN(YAML::Node file, LoadZooNode(dir, base, ctx.Child("base"), what, zoo));
  YAML::Node overrides = YAML::Clone(node);
  overrides.remove("base");
  return ZooRef{MergeYaml(file, overrides), ctx};
}

// model: a zoo reference, or {hf_config: PATH} (relative to the experiments file).
StatusOr<ModelSpec> ResolveModel(const YAML::Node& node, const YamlContext& ctx, Zoo* zoo,
                                 const std::string& config_path) {
  if (node.IsDefined() && node.IsMap() && node["hf_config"].IsDefined()) {
    ASSIGN_OR_RETURN(YamlMap map, YamlMap::From(node, ctx));
    RETURN_IF_ERROR(map.CheckKeys({"hf_config"}));
    std::string hf;
    RETURN_IF_ERROR(map.Required("hf_config", &hf));
    fs::path p(hf);
    if (p.is_relative()) p = fs::path(config_path).parent_path() / p;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      return map.context()
          .Child("hf_config")
          .Error(
              fmt::format("no such file: {} (a Hugging Face config.json; a relative path is taken "
                          "from the experiments file's folder)",
                          p.string()));
    }
    return ModelFromHfConfig(p.string());
  }
  ASSIGN_OR_RETURN(ZooRef ref, ResolveZooRef(node, ctx, zoo->models_dir, "model", zoo));
  return ModelFromYaml(ref.node, ref.ctx);
}

// hardware: a zoo reference.
StatusOr<ClusterSpec> ResolveCluster(const YAML::Node& node, const YamlContext& ctx, Zoo* zoo) {
  ASSIGN_OR_RETURN(ZooRef ref, ResolveZooRef(node, ctx, zoo->hardware_dir, "cluster", zoo));
  return ClusterFromYaml(ref.node, ref.ctx);
}

StatusOr<DType> ReadDType(const YamlMap& map, std::string_view key, DType fallback) {
  if (!map.Has(key)) return fallback;
  std::string s;
  RETURN_IF_ERROR(map.Required(key, &s));
  auto d = ParseDType(s);
  if (!d.ok()) return map.context().Child(key).Error(d.status().message());
  return *d;
}

Status ReadParallel(const YamlMap& exp, Experiment* e) {
  if (!exp.Has("parallelism"))
    return exp.context().Child("parallelism").Error("is required but missing");
  ASSIGN_OR_RETURN(YamlMap par, exp.Map("parallelism"));
  RETURN_IF_ERROR(par.CheckKeys(kParallelKeys));
  ParallelSpec& p = e->parallel;
  RETURN_IF_ERROR(par.Optional("strategy", &p.strategy));
  RETURN_IF_ERROR(par.OptionalAtLeast("tp_size", 1, &p.tp));
  RETURN_IF_ERROR(par.OptionalAtLeast("pp_size", 1, &p.pp));
  RETURN_IF_ERROR(par.OptionalAtLeast("sp_size", 1, &p.sp));
  RETURN_IF_ERROR(par.OptionalAtLeast("seq_parallel_size", 1, &p.sp));
  RETURN_IF_ERROR(par.OptionalAtLeast("dp_size", 1, &p.dp));
  RETURN_IF_ERROR(par.OptionalAtLeast("ep_size", 1, &p.ep));
  RETURN_IF_ERROR(par.OptionalAtLeast("micro_batches", 1, &p.micro_batches));
  RETURN_IF_ERROR(par.Optional("layer_to_stage", &p.layer_to_stage));
  if (par.Has("order")) {
    std::vector<std::string> names;
    RETURN_IF_ERROR(par.Optional("order", &names));
    p.order.clear();
    for (const auto& n : names) {
      auto d = ParseDim(n);
      if (!d.ok()) return par.context().Child("order").Error(d.status().message());
      p.order.push_back(*d);
    }
  }
  if (par.Has("ring_variant")) {
    std::string v;
    RETURN_IF_ERROR(par.Required("ring_variant", &v));
    auto sv = ParseSpVariant(v);
    if (!sv.ok()) return par.context().Child("ring_variant").Error(sv.status().message());
    p.sp_variant = *sv;
  }
  if (par.Has("expert_placement")) {
    ASSIGN_OR_RETURN(YamlMap place, par.Map("expert_placement"));
    for (const auto& kv : place.node()) {
      YamlContext c = place.context().Child(kv.first.Scalar());
      ASSIGN_OR_RETURN(int64_t expert, YamlInt(kv.first, c));
      ASSIGN_OR_RETURN(int64_t rank, YamlInt(kv.second, c));
      p.expert_to_ep_rank[expert] = rank;
    }
  }
  // Named pure strategies fix the other sizes to 1; "layerwise" means one layer per stage.
  const std::string& s = p.strategy;
  YamlContext sctx = par.context().Child("strategy");
  auto only = [&](Dim keep) -> Status {
    for (int i = 0; i < kNumDims; ++i) {
      Dim d = static_cast<Dim>(i);
      if (d != keep && p.Size(d) != 1) {
        return sctx.Error(fmt::format("strategy '{}' uses only {}, but {}_size is {}", s,
                                      DimName(keep), DimName(d), p.Size(d)));
      }
    }
    return Status::Ok();
  };
  if (s == "tensor") RETURN_IF_ERROR(only(Dim::kTp));
  if (s == "pipeline") RETURN_IF_ERROR(only(Dim::kPp));
  if (s == "sequence" || s == "ring_attention") RETURN_IF_ERROR(only(Dim::kSp));
  if (s == "data") RETURN_IF_ERROR(only(Dim::kDp));
  if (s == "expert") RETURN_IF_ERROR(only(Dim::kEp));
  if (s == "layerwise") {
    if (!par.Has("pp_size")) p.pp = e->model.num_layers;
    if (p.pp != e->model.num_layers) {
      return sctx.Error(fmt::format("strategy 'layerwise' needs pp_size = {} layers, got {}",
                                    e->model.num_layers, p.pp));
    }
  }
  if (s.empty()) {
    for (Dim d : {Dim::kTp, Dim::kSp, Dim::kEp, Dim::kPp, Dim::kDp}) {
      if (p.Size(d) > 1)
        p.strategy += fmt::format("{}{}{}", p.strategy.empty() ? "" : "_", DimName(d), p.Size(d));
    }
    if (p.strategy.empty()) p.strategy = "single";
  }
  return Status::Ok();
}

// weights: {checkpoint: PATH} (relative to the experiments file); absent: seeded.
Status ReadWeights(const YamlMap& exp, const std::string& config_path, Workload* w) {
  if (!exp.Has("weights")) return Status::Ok();
  ASSIGN_OR_RETURN(YamlMap weights, exp.Map("weights"));
  RETURN_IF_ERROR(weights.CheckKeys({"checkpoint"}));
  std::string checkpoint;
  RETURN_IF_ERROR(weights.Required("checkpoint", &checkpoint));
  fs::path p(checkpoint);
  if (p.is_relative()) p = fs::path(config_path).parent_path() / p;
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    return weights.context()
        .Child("checkpoint")
        .Error(fmt::format("no such file or directory: {}", p.string()));
  }
  w->checkpoint = p.string();
  return Status::Ok();
}

// prompts: given token ids (config/prompts.h). They set batch_size and
// sequence_length, which may then be left out but must agree when given.
Status ReadGivenPrompts(const YamlMap& exp, const std::string& config_path, Experiment* e) {
  Workload& w = e->workload;
  ASSIGN_OR_RETURN(w.prompts, ReadPrompts(exp, config_path, e->model.vocab_size));
  if (w.prompts.empty()) return Status::Ok();
  const YamlContext ctx = exp.context().Child("prompts");
  const int64_t len = static_cast<int64_t>(w.prompts[0].size());
  for (size_t i = 1; i < w.prompts.size(); ++i) {
    if (static_cast<int64_t>(w.prompts[i].size()) != len) {
      return ctx.Error(fmt::format(
          "prompt {} has {} tokens but prompt 0 has {}: every request of the fixed batch is "
          "prefilled together, so prompts must have the same length",
          i, w.prompts[i].size(), len));
    }
  }
  const int64_t count = static_cast<int64_t>(w.prompts.size());
  if (exp.Has("batch_size") && w.batch_size != count) {
    return ctx.Error(fmt::format("{} prompts but batch_size is {}", count, w.batch_size));
  }
  if (exp.Has("sequence_length") && w.sequence_length != len) {
    return ctx.Error(
        fmt::format("prompts of {} tokens but sequence_length is {}", len, w.sequence_length));
  }
  w.batch_size = count;
  w.sequence_length = len;
  return Status::Ok();
}

// The workload's size against the model: positions within the context the
// model was trained for, and token counts whose products (activations, logits,
// FLOPs) stay exact in 64-bit integers and doubles.
Status CheckWorkloadSize(const YamlMap& exp, const Experiment& e) {
  const Workload& w = e.workload;
  const ModelSpec& m = e.model;
  const int64_t positions = w.sequence_length + w.tokens_to_generate;
  if (m.max_position_embeddings > 0 && positions > m.max_position_embeddings) {
    return exp.context()
        .Child("sequence_length")
        .Error(fmt::format(
            "sequence_length + tokens_to_generate = {} + {} = {} exceeds the {} positions model "
            "'{}' was trained for (max_position_embeddings; override it in the experiment's "
            "model to simulate beyond)",
            w.sequence_length, w.tokens_to_generate, positions, m.max_position_embeddings, m.name));
  }
  // 2^62: room for a factor of 2 (K and V, bytes) above the largest element count.
  constexpr int64_t kLimit = int64_t{1} << 62;
  const int64_t width = std::max<int64_t>({m.hidden_size, m.vocab_size, 1});
  int64_t tokens = 0, per_token = 0, elements = 0;
  if (__builtin_mul_overflow(w.batch_size, positions, &tokens) ||
      __builtin_mul_overflow(width, std::max<int64_t>(m.num_layers, 1), &per_token) ||
      __builtin_mul_overflow(tokens, per_token, &elements) || elements > kLimit) {
    return exp.context()
        .Child("batch_size")
        .Error(fmt::format("batch_size × (sequence_length + tokens_to_generate) = {} × {} tokens "
                           "is too large: its "
                           "activations ({} layers × {} wide) overflow 64-bit counts",
                           w.batch_size, positions, m.num_layers, width));
  }
  return Status::Ok();
}

Status ReadWorkload(const YamlMap& exp, Experiment* e) {
  Workload& w = e->workload;
  if (exp.Has("prompts")) {  // they give batch_size and sequence_length
    RETURN_IF_ERROR(exp.OptionalAtLeast("batch_size", 1, &w.batch_size));
    RETURN_IF_ERROR(exp.OptionalAtLeast("sequence_length", 1, &w.sequence_length));
  } else {
    RETURN_IF_ERROR(exp.RequiredAtLeast("batch_size", 1, &w.batch_size));
    RETURN_IF_ERROR(exp.RequiredAtLeast("sequence_length", 1, &w.sequence_length));
  }
  RETURN_IF_ERROR(exp.OptionalAtLeast("tokens_to_generate", 1, &w.tokens_to_generate));
  ASSIGN_OR_RETURN(w.dtype, ReadDType(exp, "dtype", DType::kBf16));
  ASSIGN_OR_RETURN(w.kv_dtype, ReadDType(exp, "kv_dtype", w.dtype));
  for (const auto& [key, field] : {std::pair{"lm_head_dtype", &w.lm_head_dtype},
                                   std::pair{"embedding_dtype", &w.embedding_dtype}}) {
    if (!exp.Has(key)) continue;
    ASSIGN_OR_RETURN(*field, ReadDType(exp, key, w.dtype));
  }
  int64_t seed = 0;
  RETURN_IF_ERROR(exp.OptionalAtLeast("seed", 0, &seed));
  w.seed = static_cast<uint64_t>(seed);
  RETURN_IF_ERROR(exp.OptionalAtLeast("warmup_iterations", 0, &w.warmup_iterations));
  RETURN_IF_ERROR(exp.OptionalAtLeast("measured_iterations", 1, &w.measured_iterations));
  if (exp.Has("routing")) {
    ASSIGN_OR_RETURN(YamlMap r, exp.Map("routing"));
    RETURN_IF_ERROR(r.CheckKeys({"distribution", "s", "weights"}));
    std::string dist = "uniform";
    RETURN_IF_ERROR(r.Optional("distribution", &dist));
    if (dist == "uniform") {
      w.routing.kind = RoutingKind::kUniform;
    } else if (dist == "zipf") {
      w.routing.kind = RoutingKind::kZipf;
      RETURN_IF_ERROR(r.OptionalPositive("s", &w.routing.zipf_s));
    } else if (dist == "fixed") {
      w.routing.kind = RoutingKind::kFixed;
      RETURN_IF_ERROR(r.Optional("weights", &w.routing.fixed_weights));
      if (static_cast<int64_t>(w.routing.fixed_weights.size()) != e->model.moe.num_routed_experts) {
        return r.context().Child("weights").Error(
            fmt::format("needs one weight per routed expert ({}), got {}",
                        e->model.moe.num_routed_experts, w.routing.fixed_weights.size()));
      }
      for (double x : w.routing.fixed_weights) {
        if (x < 0) return r.context().Child("weights").Error("weights must not be negative");
      }
    } else {
      return r.context()
          .Child("distribution")
          .Error(fmt::format("unknown routing distribution '{}' (expected uniform, zipf or fixed)",
                             dist));
    }
  }
  return Status::Ok();
}

// `communication:` (docs/configuration.md): algorithm, protocol, the
// all-to-all kind (one for both phases or {prefill, decode}) and the
// expert-parallel payload dtypes.
Status ReadCommunication(const YamlMap& exp, Experiment* e) {
  if (!exp.Has("communication")) return Status::Ok();
  ASSIGN_OR_RETURN(YamlMap c, exp.Map("communication"));
  RETURN_IF_ERROR(
      c.CheckKeys({"algorithm", "protocol", "all_to_all", "dispatch_dtype", "combine_dtype"}));
  CommunicationSpec& spec = e->communication;
  auto parse = [&](const YamlMap& map, std::string_view key, auto parser, auto* out) -> Status {
    if (!map.Has(key)) return Status::Ok();
    std::string text;
    RETURN_IF_ERROR(map.Required(key, &text));
    auto v = parser(text);
    if (!v.ok()) return map.context().Child(key).Error(v.status().message());
    *out = *v;
    return Status::Ok();
  };
  RETURN_IF_ERROR(parse(c, "algorithm", ParseAlgorithm, &spec.algorithm));
  RETURN_IF_ERROR(parse(c, "protocol", ParseProtocol, &spec.protocol));
  if (c.Has("all_to_all") && c.Get("all_to_all").IsMap()) {
    ASSIGN_OR_RETURN(YamlMap kinds, c.Map("all_to_all"));
    RETURN_IF_ERROR(kinds.CheckKeys({"prefill", "decode"}));
    RETURN_IF_ERROR(parse(kinds, "prefill", ParseAllToAllKind, &spec.prefill_all_to_all));
    RETURN_IF_ERROR(parse(kinds, "decode", ParseAllToAllKind, &spec.decode_all_to_all));
  } else {
    RETURN_IF_ERROR(parse(c, "all_to_all", ParseAllToAllKind, &spec.prefill_all_to_all));
    spec.decode_all_to_all = spec.prefill_all_to_all;
  }
  if (c.Has("dispatch_dtype")) {
    ASSIGN_OR_RETURN(spec.dispatch_dtype, ReadDType(c, "dispatch_dtype", DType::kBf16));
  }
  if (c.Has("combine_dtype")) {
    ASSIGN_OR_RETURN(spec.combine_dtype, ReadDType(c, "combine_dtype", DType::kBf16));
  }
  return Status::Ok();
}

// A draft model against the plan and workload: no pipeline stages (vLLM
// refuses them too), the positions the draft was trained for.
Status CheckDraftModel(const YamlMap& exp, const Experiment& e) {
  if (!e.speculative.draft()) return Status::Ok();
  ASSIGN_OR_RETURN(YamlMap spec, exp.Map("speculative"));
  const ModelSpec& d = e.speculative.draft_model;
  if (e.parallel.pp > 1) {
    return spec.context().Child("method").Error(fmt::format(
        "a draft model with pipeline parallelism (pp {}) is not modelled", e.parallel.pp));
  }
  const int64_t positions = e.workload.sequence_length + e.workload.tokens_to_generate;
  if (d.max_position_embeddings > 0 && positions > d.max_position_embeddings) {
    return spec.context()
        .Child("draft_model")
        .Error(fmt::format("sequence_length + tokens_to_generate = {} exceeds the {} positions "
                           "draft model '{}' was "
                           "trained for",
                           positions, d.max_position_embeddings, d.name));
  }
  return Status::Ok();
}

// EPLB's fields in `parallelism:`, `speculative:` and `two_batch_overlap`
// (config/mechanisms.h).
Status ReadMechanisms(const YamlMap& exp, const std::string& config_path, Zoo* zoo, Experiment* e) {
  ASSIGN_OR_RETURN(YamlMap par, exp.Map("parallelism"));
  ParallelSpec& p = e->parallel;
  RETURN_IF_ERROR(par.OptionalAtLeast("redundant_experts", 0, &p.redundant_experts));
  if (p.redundant_experts > 0 || par.Has("expert_load")) {
    const YamlContext ctx = par.context().Child(
        par.Has("expert_load") && p.redundant_experts == 0 ? "expert_load" : "redundant_experts");
    if (!e->model.is_moe()) {
      return ctx.Error(fmt::format("EPLB needs an MoE model; '{}' is dense", e->model.name));
    }
    if (p.redundant_experts == 0) return ctx.Error("expert_load needs redundant_experts > 0");
    if (!p.expert_to_ep_rank.empty()) {
      return ctx.Error("redundant experts are placed by EPLB; drop expert_placement");
    }
    if (e->backend != RunnerKind::kSim) {
      return ctx.Error("redundant experts are simulated only (backend: sim)");
    }
  }
  if (par.Has("expert_load")) {
    RETURN_IF_ERROR(par.Required("expert_load", &p.expert_load_path));
    fs::path file(p.expert_load_path);
    if (file.is_relative()) file = fs::path(config_path).parent_path() / file;
    auto rows =
        ReadExpertLoadFile(file.string(), e->model.moe.num_routed_experts, e->model.NumMoeLayers());
    if (!rows.ok()) return par.context().Child("expert_load").Error(rows.status().message());
    p.expert_load = std::move(*rows);
  }
  ASSIGN_OR_RETURN(
      e->speculative,
      ReadSpeculative(exp, e->model, p.tp, [&](const YamlMap& map, std::string_view key) {
        return ResolveModel(map.Get(key), map.context().Child(key), zoo, config_path);
      }));
  RETURN_IF_ERROR(CheckDraftModel(exp, *e));
  RETURN_IF_ERROR(exp.Optional("two_batch_overlap", &e->two_batch_overlap));
  if ((e->speculative.enabled() || e->two_batch_overlap) && e->backend != RunnerKind::kSim) {
    return exp.context()
        .Child(e->speculative.enabled() ? "speculative" : "two_batch_overlap")
        .Error("is simulated only (backend: sim)");
  }
  return Status::Ok();
}

// `precision:` (docs/configuration.md, "Precision"): a preset name, a list of
// them (applied in order), or a map of `scheme` (either form) and role fields.
Status ReadPrecision(const YamlMap& exp, Experiment* e) {
  if (!exp.Has("precision")) return Status::Ok();
  const YamlContext ctx = exp.context().Child("precision");
  PrecisionSpec& spec = e->precision;
  auto apply = [&](const YAML::Node& node, const YamlContext& at) -> Status {
    std::vector<YAML::Node> names;
    if (node.IsSequence()) {
      for (const YAML::Node& n : node) names.push_back(n);
    } else {
      names.push_back(node);
    }
    if (names.empty()) return at.Error("names no scheme");
    for (const YAML::Node& n : names) {
      if (!n.IsScalar()) return at.Error("a scheme is a name (or a list of names)");
      if (Status st = ApplyPrecisionPreset(n.Scalar(), &spec); !st.ok()) {
        return at.Error(st.message());
      }
    }
    return Status::Ok();
  };
  const YAML::Node node = exp.Get("precision");
  if (!node.IsMap()) return apply(node, ctx);
  ASSIGN_OR_RETURN(YamlMap p, exp.Map("precision"));
  RETURN_IF_ERROR(p.CheckKeys({"scheme", "weights", "weight_scales", "gemm_inputs", "input_scales",
                               "activations", "kv_cache", "lm_head", "embedding", "all_reduce"}));
  if (p.Has("scheme")) RETURN_IF_ERROR(apply(p.Get("scheme"), ctx.Child("scheme")));
  auto text = [&](std::string_view key, auto parser, auto* out) -> Status {
    if (!p.Has(key)) return Status::Ok();
    std::string s;
    RETURN_IF_ERROR(p.Required(key, &s));
    auto v = parser(s);
    if (!v.ok()) return ctx.Child(key).Error(v.status().message());
    *out = *v;
    return Status::Ok();
  };
  if (p.Has("weights")) {
    std::pair<DType, int> format;
    RETURN_IF_ERROR(text("weights", ParseWeightFormat, &format));
    spec.weights = format.first;
    spec.weight_bits = format.second;
  }
  RETURN_IF_ERROR(text("weight_scales", ParseScales, &spec.weight_scales));
  RETURN_IF_ERROR(text("gemm_inputs", ParseDType, &spec.gemm_inputs));
  RETURN_IF_ERROR(text("input_scales", ParseScales, &spec.input_scales));
  RETURN_IF_ERROR(text("activations", ParseDType, &spec.activations));
  RETURN_IF_ERROR(text("kv_cache", ParseDType, &spec.kv_cache));
  RETURN_IF_ERROR(text("lm_head", ParseDType, &spec.lm_head));
  RETURN_IF_ERROR(text("embedding", ParseDType, &spec.embedding));
  RETURN_IF_ERROR(text("all_reduce", ParseDType, &spec.all_reduce));
  if (spec.weight_scales && (spec.weight_scales->kind == ScaleKind::kToken ||
                             spec.weight_scales->kind == ScaleKind::kStaticTensor)) {
    return ctx.Child("weight_scales")
        .Error(
            "per-token and static per-tensor scales are for GEMM inputs; weights take "
            "none, tensor, channel, block_N or group_N");
  }
  if (spec.input_scales && (spec.input_scales->kind == ScaleKind::kChannel ||
                            spec.input_scales->kind == ScaleKind::kBlock)) {
    return ctx.Child("input_scales")
        .Error("GEMM inputs take none, tensor, static_tensor, token or group_N scales");
  }
  return Status::Ok();
}

Status ReadClaims(const YamlMap& exp, Experiment* e) {
  if (!exp.Has("claims")) return Status::Ok();
  ASSIGN_OR_RETURN(YamlMap c, exp.Map("claims"));
  RETURN_IF_ERROR(c.CheckKeys(KnownClaimKeys()));
  for (const auto& kv : c.node()) {
    std::string key = kv.first.Scalar();
    double v = 0;
    RETURN_IF_ERROR(c.OptionalPositive(key, &v));
    e->claims[key] = v;
  }
  return Status::Ok();
}

StatusOr<Experiment> ReadExperiment(const YAML::Node& node, const YamlContext& ctx,
                                    const std::string& path, Zoo* zoo) {
  ASSIGN_OR_RETURN(YamlMap exp, YamlMap::From(node, ctx));
  std::vector<std::string> known = kExperimentKeys;
  known.insert(known.end(), ServingKeys().begin(), ServingKeys().end());  // served workloads
  RETURN_IF_ERROR(exp.CheckKeys(known));
  Experiment e;
  e.source_file = path;
  e.name = ctx.experiment;
  RETURN_IF_ERROR(exp.Optional("description", &e.description));
  ASSIGN_OR_RETURN(e.model, ResolveModel(exp.Get("model"), ctx.Child("model"), zoo, path));
  ASSIGN_OR_RETURN(e.cluster, ResolveCluster(exp.Get("hardware"), ctx.Child("hardware"), zoo));
  RETURN_IF_ERROR(ReadParallel(exp, &e));
  RETURN_IF_ERROR(ReadWorkload(exp, &e));
  RETURN_IF_ERROR(ReadGivenPrompts(exp, path, &e));
  RETURN_IF_ERROR(CheckWorkloadSize(exp, e));
  RETURN_IF_ERROR(ReadWeights(exp, path, &e.workload));
  std::string backend = "sim";
  RETURN_IF_ERROR(exp.Optional("backend", &backend));
  auto b = ParseRunnerKind(backend);
  if (!b.ok()) return ctx.Child("backend").Error(b.status().message());
  e.backend = *b;
  RETURN_IF_ERROR(exp.Optional("enable_profiling", &e.enable_profiling));
  RETURN_IF_ERROR(exp.OptionalAtLeast("trace_steps", 0, &e.trace_steps));
  std::string compression = "none";
  RETURN_IF_ERROR(exp.Optional("trace_compression", &compression));
  auto c = ParseTraceCompression(compression);
  if (!c.ok()) return ctx.Child("trace_compression").Error(c.status().message());
  e.trace_compression = *c;
  RETURN_IF_ERROR(ReadClaims(exp, &e));
  RETURN_IF_ERROR(ReadCommunication(exp, &e));
  RETURN_IF_ERROR(ReadPrecision(exp, &e));
  // A preset that dispatches in FP8 (deepseek-fp8) sets the all-to-all's
  // payload unless `communication.dispatch_dtype` names one.
  if (e.precision.dispatch && !e.communication.dispatch_dtype) {
    e.communication.dispatch_dtype = e.precision.dispatch;
  }
  EngineContext engine_context;
  engine_context.tp = e.parallel.tp;
  engine_context.pp = e.parallel.pp;
  engine_context.device_memory_bytes = e.cluster.device.memory_bytes;
  {
    // trtllm-bench's tables (bench/build/tuning.py BYTES_PER_ELEM): FP8 weights
    // and KV 1 byte, everything else counted as 2.
    const Precision p = PrecisionOf(e);
    engine_context.param_count = static_cast<double>(CountParameters(e.model).total);
    engine_context.bytes_per_weight = p.weights == DType::kFp8 ? 1 : 2;
    engine_context.bytes_per_kv_value = p.kv_cache == DType::kFp8 ? 1 : 2;
    engine_context.attention_layers = e.model.num_layers;
    engine_context.kv_heads = e.model.num_kv_heads;
    engine_context.head_dim = e.model.QkHeadDim();
    engine_context.mla = e.model.attention == AttentionKind::kMla;
  }
  ASSIGN_OR_RETURN(e.serving, ReadServing(exp, e.model, path, engine_context));
  RETURN_IF_ERROR(ReadMechanisms(exp, path, zoo, &e));
  if (e.serving) FitTrtllmGraphSizes(e.speculative.draft_tokens, &*e.serving);
  return e;
}

// One swept field of an experiment and its values.
struct SweepAxis {
  const SweepField* field;
  YAML::Node values;
};

// An experiment node's sweep: its axes in kSweepFields order and the node with
// the swept lists removed, so that each point clones only scalars (cloning the
// lists into every point made expansion quadratic in memory).
struct Sweep {
  YAML::Node base;
  std::vector<SweepAxis> axes;
  int64_t points = 1;
};

StatusOr<Sweep> ReadSweep(const YAML::Node& node, const YamlContext& ctx, int64_t max_points) {
  Sweep sweep;
  sweep.base = YAML::Clone(node);
  for (const SweepField& f : kSweepFields) {
    YAML::Node holder = SectionNode(node, f);
    // (IsDefined first: yaml-cpp throws on type queries of missing nodes.)
    if (!holder.IsDefined() || !holder.IsMap()) continue;
    if (!holder[f.key].IsDefined() || !holder[f.key].IsSequence()) continue;
    YAML::Node values = holder[f.key];
    YamlContext fctx = FieldContext(ctx, f);
    if (values.size() == 0) return fctx.Error("sweep list is empty");
    std::set<std::string> seen;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!values[i].IsScalar()) return fctx.Index(i).Error("expected a number in the sweep list");
      if (!seen.insert(values[i].Scalar()).second) {
        return fctx.Error(fmt::format("sweep lists {} more than once", values[i].Scalar()));
      }
    }
    const int64_t n = static_cast<int64_t>(values.size());
    if (sweep.points > max_points / n) {  // also keeps the product from overflowing
      return ctx.Error(fmt::format(
          "the sweep expands to more than {} experiments (the limit); split it into several",
          max_points));
    }
    sweep.points *= n;
    SectionNode(sweep.base, f).remove(f.key);
    sweep.axes.push_back({&f, values});
  }
  return sweep;
}

// The node of one point: the base with each axis set to its indexed value.
// The value is set as text, not as the list's node: assigning a node of another
// document makes yaml-cpp merge that document's node set into this one, and the
// list's document then carries every earlier point's nodes, which made loading a
// sweep quadratic in its points (4,000 points: 44 s).
YAML::Node SweepPointNode(const Sweep& sweep, const std::vector<size_t>& index) {
  YAML::Node copy = YAML::Clone(sweep.base);
  for (size_t a = 0; a < sweep.axes.size(); ++a) {
    const SweepField& f = *sweep.axes[a].field;
    SectionNode(copy, f)[f.key] = sweep.axes[a].values[index[a]].Scalar();
  }
  return copy;
}

// Calls `fn(point name, index)` for every point of the sweep, the last axis
// varying fastest; names are "<name>_<tag><value>…" in kSweepFields order.
Status ForEachSweepPoint(
    const Sweep& sweep, const std::string& name,
    const std::function<Status(const std::string&, const std::vector<size_t>&)>& fn) {
  std::vector<size_t> index(sweep.axes.size(), 0);
  for (int64_t p = 0; p < sweep.points; ++p) {
    std::string point_name = name;
    for (size_t a = 0; a < sweep.axes.size(); ++a) {
      point_name +=
          fmt::format("_{}{}", sweep.axes[a].field->tag, sweep.axes[a].values[index[a]].Scalar());
    }
    RETURN_IF_ERROR(fn(point_name, index));
    for (size_t a = sweep.axes.size(); a-- > 0;) {
      if (++index[a] < sweep.axes[a].values.size()) break;
      index[a] = 0;
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<Experiment>> ExperimentsFromYaml(const YAML::Node& root,
                                                      const std::string& path,
                                                      const LoaderOptions& options) {
  YamlContext file_ctx{path, "", ""};
  ASSIGN_OR_RETURN(YamlMap top, YamlMap::From(root, file_ctx));
  RETURN_IF_ERROR(top.CheckKeys({"defaults", "experiments"}));
  YAML::Node defaults = top.Get("defaults");
  if (defaults.IsDefined() && !defaults.IsNull() && !defaults.IsMap()) {
    return file_ctx.Child("defaults").Error("expected a map of experiment fields");
  }
  YAML::Node list = top.Get("experiments");
  if (!list.IsDefined() || !list.IsSequence() || list.size() == 0) {
    return file_ctx.Child("experiments").Error("expected a non-empty list of experiments");
  }
  // First every entry's name and sweep shape (cheap), so that the points to read
  // are counted before the first is resolved; then the points.
  struct Entry {
    std::string name;
    Sweep sweep;
    bool whole;  // every point is read (else only the point named options.only)
  };
  std::vector<Entry> entries;
  int64_t total = 0;                     // the points to resolve, for options.progress
  std::vector<std::string> sweep_names;  // each entry's name, for messages
  for (size_t i = 0; i < list.size(); ++i) {
    YamlContext ictx = file_ctx.Child("experiments").Index(i);
    if (!list[i].IsMap()) return ictx.Error("expected a map describing an experiment");
    std::string name;
    if (!list[i]["name"].IsDefined() || !list[i]["name"].IsScalar() ||
        list[i]["name"].Scalar().empty()) {
      return ictx.Child("name").Error("is required but missing");
    }
    name = list[i]["name"].Scalar();
    // Names are printed in messages and tables: an escape sequence would reach the terminal.
    for (const char c : name) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 || byte == 0x7f) {
        return ictx.Child("name").Error(fmt::format(
            "contains the control character 0x{:02x}; a name must be printable text", byte));
      }
    }
    YAML::Node merged =
        MergeYaml(defaults.IsDefined() && defaults.IsMap() ? defaults : YAML::Node(), list[i]);
    ASSIGN_OR_RETURN(Sweep sweep,
                     ReadSweep(merged, YamlContext{path, name, ""}, options.max_experiments));
    sweep_names.push_back(name);
    const bool whole = options.only.empty() || options.only == name;
    if (whole) total += sweep.points;
    entries.push_back({name, std::move(sweep), whole});
  }
  if (total == 0) total = 1;  // options.only names one point of a sweep
  Zoo zoo{ZooDir(options, path, "models"), ZooDir(options, path, "hardware"), {}};
  std::vector<Experiment> out;
  std::set<std::string> names;
  for (const Entry& entry : entries) {
    const YamlContext ctx{path, entry.name, ""};
    RETURN_IF_ERROR(ForEachSweepPoint(
        entry.sweep, entry.name,
        [&](const std::string& exp_name, const std::vector<size_t>& index) -> Status {
          if (!names.insert(exp_name).second) {
            return ctx.Child("name").Error(fmt::format("duplicate experiment name '{}'", exp_name));
          }
          if (!entry.whole && options.only != exp_name) return Status::Ok();
          YamlContext ectx{path, exp_name, ""};
          ASSIGN_OR_RETURN(Experiment e,
                           ReadExperiment(SweepPointNode(entry.sweep, index), ectx, path, &zoo));
          e.sweep_name = entry.name;
          out.push_back(std::move(e));
          if (options.progress) options.progress(static_cast<int64_t>(out.size()), total);
          return Status::Ok();
        }));
  }
  if (out.empty() && !options.only.empty()) {
    return NotFound("{}: no experiment named '{}' (experiments: {})", path, options.only,
                    fmt::join(sweep_names, ", "));
  }
  return out;
}

StatusOr<std::vector<Experiment>> LoadExperiments(const std::string& path,
                                                  const LoaderOptions& options) {
  ASSIGN_OR_RETURN(YAML::Node root, LoadYamlFile(path));
  return ExperimentsFromYaml(root, path, options);
}

StatusOr<std::vector<Experiment>> SelectExperiments(std::vector<Experiment> all,
                                                    const std::string& name,
                                                    const std::string& path) {
  if (name.empty()) return all;
  std::vector<Experiment> out;
  for (auto& e : all) {
    if (e.name == name || e.sweep_name == name) out.push_back(std::move(e));
  }
  if (!out.empty()) return out;
  std::string known;
  std::set<std::string> seen;
  for (const auto& e : all) {
    if (seen.insert(e.sweep_name).second) known += (known.empty() ? "" : ", ") + e.sweep_name;
  }
  return NotFound("{}: no experiment named '{}' (experiments: {})", path, name, known);
}

}  // namespace shardscope
