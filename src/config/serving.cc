#include "config/serving.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "config/engine_profile.h"
#include "config/request_file.h"
#include "config/trtllm_bench_limits.h"
#include "core/enum_names.h"
#include "core/yaml_reader.h"

namespace shardscope {
namespace {

constexpr auto kArrivalProcessNames =
    MakeEnumNames<ArrivalProcess>({{ArrivalProcess::kPoisson, "poisson"},
                                   {ArrivalProcess::kGamma, "gamma"},
                                   {ArrivalProcess::kClosedLoop, "closed_loop"},
                                   {ArrivalProcess::kFile, "file"}});
constexpr auto kAdmissionNames =
    MakeEnumNames<Admission>({{Admission::kRecompute, "recompute"},
                              {Admission::kGuaranteedNoEvict, "guaranteed_no_evict"},
                              {Admission::kNewTokenRatio, "new_token_ratio"}});
constexpr auto kKvMemoryRuleNames =
    MakeEnumNames<KvMemoryRule>({{KvMemoryRule::kShareOfCapacity, "capacity"},
                                 {KvMemoryRule::kShareOfFree, "free"},
                                 {KvMemoryRule::kStaticShare, "static"}});
constexpr auto kLongPromptsNames =
    MakeEnumNames<LongPrompts>({{LongPrompts::kRefuse, "refuse"}, {LongPrompts::kChunk, "chunk"}});
constexpr auto kSchedulerLimitsNames = MakeEnumNames<SchedulerLimits>(
    {{SchedulerLimits::kGiven, "given"}, {SchedulerLimits::kTrtllmBench, "trtllm-bench"}});
constexpr auto kRouterPolicyNames =
    MakeEnumNames<RouterPolicy>({{RouterPolicy::kRoundRobin, "round_robin"},
                                 {RouterPolicy::kLeastOutstanding, "least_outstanding"}});

// The most requests one served run may simulate (`workload.requests`, or rate ×
// duration_s when no count is given): 10 000 take about 9 s; far more would run
// for hours or exhaust memory.
constexpr int64_t kMaxServedRequests = 1'000'000;

namespace fs = std::filesystem;

// `key: 512` (fixed) or `key: {distribution: uniform|normal|lognormal, ...}`.
Status ReadLength(const YamlMap& m, std::string_view key, LengthDist* out) {
  if (!m.Has(key)) return m.context().Child(key).Error("is required but missing");
  const YAML::Node node = m.Get(key);
  if (node.IsScalar()) {
    int64_t v = 0;
    RETURN_IF_ERROR(m.RequiredAtLeast(key, 1, &v));
    *out = LengthDist{};
    out->value = v;
    out->min = out->max = v;
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(YamlMap d, m.Map(key));
  RETURN_IF_ERROR(d.CheckKeys({"distribution", "min", "max", "mean", "stddev"}));
  std::string kind;
  RETURN_IF_ERROR(d.Required("distribution", &kind));
  RETURN_IF_ERROR(d.OptionalAtLeast("min", 1, &out->min));
  RETURN_IF_ERROR(d.OptionalAtLeast("max", 1, &out->max));
  if (kind == "uniform") {
    out->kind = LengthDist::Kind::kUniform;
    RETURN_IF_ERROR(d.RequiredAtLeast("min", 1, &out->min));
    RETURN_IF_ERROR(d.RequiredAtLeast("max", 1, &out->max));
  } else if (kind == "normal" || kind == "lognormal") {
    out->kind = kind == "normal" ? LengthDist::Kind::kNormal : LengthDist::Kind::kLognormal;
    RETURN_IF_ERROR(d.Required("mean", &out->mean));
    if (out->mean <= 0) return d.context().Child("mean").Error("must be > 0");
    RETURN_IF_ERROR(d.Required("stddev", &out->stddev));
    if (out->stddev < 0) return d.context().Child("stddev").Error("must be ≥ 0");
  } else {
    return d.context()
        .Child("distribution")
        .Error(fmt::format(
            "unknown length distribution '{}' (expected uniform, normal or lognormal, or a number)",
            kind));
  }
  if (out->max < out->min) {
    return d.context().Child("max").Error(
        fmt::format("max {} is below min {}", out->max, out->min));
  }
  return Status::Ok();
}

Status ReadArrivals(const YamlMap& w, const ModelSpec& model, const std::string& config_path,
                    ArrivalSpec* a) {
  if (!w.Has("arrivals")) return w.context().Child("arrivals").Error("is required but missing");
  ASSIGN_OR_RETURN(YamlMap m, w.Map("arrivals"));
  RETURN_IF_ERROR(m.CheckKeys({"process", "rate_per_s", "cv", "concurrency", "path"}));
  std::string process;
  RETURN_IF_ERROR(m.Required("process", &process));
  if (process == "poisson" || process == "gamma") {
    a->process = process == "poisson" ? ArrivalProcess::kPoisson : ArrivalProcess::kGamma;
    RETURN_IF_ERROR(m.Required("rate_per_s", &a->rate));
    if (a->rate <= 0) return m.context().Child("rate_per_s").Error("must be > 0");
    if (a->process == ArrivalProcess::kGamma) RETURN_IF_ERROR(m.OptionalPositive("cv", &a->cv));
  } else if (process == "closed_loop") {
    a->process = ArrivalProcess::kClosedLoop;
    RETURN_IF_ERROR(m.RequiredAtLeast("concurrency", 1, &a->concurrency));
  } else if (process == "file") {
    a->process = ArrivalProcess::kFile;
    RETURN_IF_ERROR(m.Required("path", &a->path));
    fs::path p(a->path);
    if (p.is_relative()) p = fs::path(config_path).parent_path() / p;
    auto requests = ReadRequestFile(p.string(), model.max_position_embeddings);
    if (!requests.ok()) return m.context().Child("path").Error(requests.status().message());
    a->file_requests = std::move(*requests);
  } else {
    return m.context().Child("process").Error(fmt::format(
        "unknown arrival process '{}' (expected poisson, gamma, closed_loop or file)", process));
  }
  return Status::Ok();
}

Status ReadScheduler(const YamlMap& exp, SchedulerSpec* s) {
  if (!exp.Has("scheduler")) return Status::Ok();
  ASSIGN_OR_RETURN(YamlMap m, exp.Map("scheduler"));
  RETURN_IF_ERROR(m.CheckKeys(
      {"max_num_batched_tokens", "max_num_seqs", "block_size", "gpu_memory_utilization",
       "gpu_memory_utilization_of", "kv_blocks", "chunked_prefill", "mix_prompts_with_decodes",
       "admission", "num_scheduler_steps", "cuda_graph_batch_sizes", "router",
       "grid_points_per_octave", "long_prompts", "limits_from", "overlap_schedule"}));
  RETURN_IF_ERROR(m.OptionalAtLeast("max_num_batched_tokens", 1, &s->max_num_batched_tokens));
  RETURN_IF_ERROR(m.OptionalAtLeast("max_num_seqs", 1, &s->max_num_seqs));
  RETURN_IF_ERROR(m.OptionalAtLeast("block_size", 1, &s->block_size));
  RETURN_IF_ERROR(m.OptionalPositive("gpu_memory_utilization", &s->gpu_memory_utilization));
  if (s->gpu_memory_utilization > 1) {
    return m.context().Child("gpu_memory_utilization").Error("must be in (0, 1]");
  }
  std::string of(KvMemoryRuleName(s->memory_rule));
  RETURN_IF_ERROR(m.Optional("gpu_memory_utilization_of", &of));
  const std::optional<KvMemoryRule> rule = kKvMemoryRuleNames.Parse(of);
  if (!rule) {
    return m.context()
        .Child("gpu_memory_utilization_of")
        .Error(fmt::format("unknown '{}' (expected capacity, free or static)", of));
  }
  s->memory_rule = *rule;
  RETURN_IF_ERROR(m.OptionalAtLeast("kv_blocks", 1, &s->kv_blocks));
  RETURN_IF_ERROR(m.Optional("chunked_prefill", &s->chunked_prefill));
  RETURN_IF_ERROR(m.Optional("mix_prompts_with_decodes", &s->mix_prompts_with_decodes));
  RETURN_IF_ERROR(m.Optional("overlap_schedule", &s->overlap_schedule));
  std::string admission(AdmissionName(s->admission));
  RETURN_IF_ERROR(m.Optional("admission", &admission));
  const std::optional<Admission> adm = kAdmissionNames.Parse(admission);
  if (!adm) {
    return m.context()
        .Child("admission")
        .Error(fmt::format(
            "unknown admission '{}' (expected recompute, guaranteed_no_evict or new_token_ratio)",
            admission));
  }
  s->admission = *adm;
  RETURN_IF_ERROR(m.OptionalAtLeast("num_scheduler_steps", 1, &s->num_scheduler_steps));
  std::string long_prompts(LongPromptsName(s->long_prompts));
  RETURN_IF_ERROR(m.Optional("long_prompts", &long_prompts));
  const std::optional<LongPrompts> lp = kLongPromptsNames.Parse(long_prompts);
  if (!lp) {
    return m.context()
        .Child("long_prompts")
        .Error(fmt::format("unknown '{}' (expected refuse or chunk)", long_prompts));
  }
  s->long_prompts = *lp;
  if (m.Has("limits_from")) {
    std::string from;
    RETURN_IF_ERROR(m.Required("limits_from", &from));
    const std::optional<SchedulerLimits> limits = kSchedulerLimitsNames.Parse(from);
    if (!limits) {
      return m.context()
          .Child("limits_from")
          .Error(fmt::format("unknown '{}' (expected given or trtllm-bench)", from));
    }
    s->limits_from = *limits;
    for (const char* key : {"max_num_seqs", "max_num_batched_tokens"}) {
      if (s->limits_from != SchedulerLimits::kGiven && m.Has(key)) {
        return m.context().Child(key).Error(
            fmt::format("is set by limits_from: {}; drop one of them", from));
      }
    }
  }
  if (m.Has("cuda_graph_batch_sizes")) {
    RETURN_IF_ERROR(m.Optional("cuda_graph_batch_sizes", &s->cuda_graph_batch_sizes));
    const std::vector<int64_t>& b = s->cuda_graph_batch_sizes;
    for (size_t i = 0; i < b.size(); ++i) {
      if (b[i] < 1 || (i > 0 && b[i] <= b[i - 1])) {
        return m.context()
            .Child("cuda_graph_batch_sizes")
            .Error("must be batch sizes ≥ 1 in ascending order");
      }
    }
  }
  RETURN_IF_ERROR(m.OptionalAtLeast("grid_points_per_octave", 0, &s->grid_points_per_octave));
  std::string router = "round_robin";
  RETURN_IF_ERROR(m.Optional("router", &router));
  if (router == "round_robin") {
    s->router = RouterPolicy::kRoundRobin;
  } else if (router == "least_outstanding") {
    s->router = RouterPolicy::kLeastOutstanding;
  } else {
    return m.context().Child("router").Error(
        fmt::format("unknown router '{}' (expected round_robin or least_outstanding)", router));
  }
  return Status::Ok();
}

// `engine: vllm` or `engine: {name, version, *_overhead_us}`: the profile's
// scheduler defaults and serving-path terms, before `scheduler:` overrides them.
Status ReadEngine(const YamlMap& exp, const ModelSpec& model, const EngineContext& context,
                  ServingSpec* s) {
  if (!exp.Has("engine")) return Status::Ok();
  EngineSpec engine;
  std::optional<YamlMap> m;
  if (exp.Get("engine").IsScalar()) {
    RETURN_IF_ERROR(exp.Required("engine", &engine.name));
  } else {
    ASSIGN_OR_RETURN(m, exp.Map("engine"));
    RETURN_IF_ERROR(m->CheckKeys({"name", "version", "request_overhead_us", "token_overhead_us",
                                  "iteration_overhead_us", "iteration_overhead_per_request_us",
                                  "iteration_overhead_per_worker_us"}));
    RETURN_IF_ERROR(m->Required("name", &engine.name));
    // A version may be written as a number (0.6) or a string ("0.6.3").
    RETURN_IF_ERROR(m->Optional("version", &engine.version));
  }
  const YamlContext where = m ? m->context() : exp.context().Child("engine");
  if (EngineVersions(engine.name).empty()) {
    return (m ? where.Child("name") : where)
        .Error(fmt::format("unknown engine '{}' (expected vllm, sglang or trtllm)", engine.name));
  }
  auto version = ResolveEngineVersion(engine.name, engine.version);
  if (!version.ok()) return where.Child("version").Error(version.status().message());
  engine.version = *version;
  EngineInputs in;
  in.max_model_len = model.max_position_embeddings;
  in.tp = context.tp;
  in.device_memory_bytes = context.device_memory_bytes;
  if (exp.Has("scheduler")) {
    ASSIGN_OR_RETURN(YamlMap sched, exp.Map("scheduler"));
    if (sched.Has("chunked_prefill")) {
      bool chunked = false;
      RETURN_IF_ERROR(sched.Optional("chunked_prefill", &chunked));
      in.chunked_prefill = chunked;
    }
    if (sched.Has("num_scheduler_steps")) {
      int64_t steps = 1;
      RETURN_IF_ERROR(sched.OptionalAtLeast("num_scheduler_steps", 1, &steps));
      in.num_scheduler_steps = steps;
    }
  }
  s->scheduler = EngineSchedulerDefaults(engine, in);
  s->path = EngineServingPath(engine);
  if (m) {
    for (auto [key, term] :
         {std::pair{"request_overhead_us", &s->path.request},
          std::pair{"token_overhead_us", &s->path.token},
          std::pair{"iteration_overhead_us", &s->path.iteration},
          std::pair{"iteration_overhead_per_request_us", &s->path.iteration_per_request},
          std::pair{"iteration_overhead_per_worker_us", &s->path.iteration_per_worker}}) {
      double us = *term * 1e6;
      RETURN_IF_ERROR(m->Optional(key, &us));
      if (!(us >= 0)) return where.Child(key).Error("must be ≥ 0");
      *term = us * 1e-6;
    }
  }
  s->engine = engine;
  return Status::Ok();
}

// disaggregation: {prefill: {tp_size, sp_size, ep_size, pp_size, instances}, decode: {...}}
Status ReadDisaggregation(const YamlMap& exp, std::optional<DisaggregationSpec>* out) {
  if (!exp.Has("disaggregation")) return Status::Ok();
  ASSIGN_OR_RETURN(YamlMap m, exp.Map("disaggregation"));
  RETURN_IF_ERROR(m.CheckKeys({"prefill", "decode"}));
  DisaggregationSpec d;
  for (auto [key, spec] : {std::pair{"prefill", &d.prefill}, std::pair{"decode", &d.decode}}) {
    if (!m.Has(key)) return m.context().Child(key).Error("is required but missing");
    ASSIGN_OR_RETURN(YamlMap i, m.Map(key));
    RETURN_IF_ERROR(i.CheckKeys({"tp_size", "sp_size", "ep_size", "pp_size", "instances"}));
    RETURN_IF_ERROR(i.OptionalAtLeast("tp_size", 1, &spec->tp));
    RETURN_IF_ERROR(i.OptionalAtLeast("sp_size", 1, &spec->sp));
    RETURN_IF_ERROR(i.OptionalAtLeast("ep_size", 1, &spec->ep));
    RETURN_IF_ERROR(i.OptionalAtLeast("pp_size", 1, &spec->pp));
    RETURN_IF_ERROR(i.OptionalAtLeast("instances", 1, &spec->instances));
  }
  *out = d;
  return Status::Ok();
}

Status ReadSlo(const YamlMap& exp, SloSpec* slo) {
  if (!exp.Has("slo")) return Status::Ok();
  ASSIGN_OR_RETURN(YamlMap m, exp.Map("slo"));
  RETURN_IF_ERROR(m.CheckKeys({"ttft_ms", "tpot_ms"}));
  double ttft_ms = 0, tpot_ms = 0;
  RETURN_IF_ERROR(m.OptionalPositive("ttft_ms", &ttft_ms));
  RETURN_IF_ERROR(m.OptionalPositive("tpot_ms", &tpot_ms));
  slo->ttft = ttft_ms * 1e-3;
  slo->tpot = tpot_ms * 1e-3;
  return Status::Ok();
}

nlohmann::json LengthJson(const LengthDist& d) {
  switch (d.kind) {
    case LengthDist::Kind::kFixed:
      return d.value;
    case LengthDist::Kind::kUniform:
      return {{"distribution", "uniform"}, {"min", d.min}, {"max", d.max}};
    case LengthDist::Kind::kNormal:
    case LengthDist::Kind::kLognormal:
      return {{"distribution", d.kind == LengthDist::Kind::kNormal ? "normal" : "lognormal"},
              {"mean", d.mean},
              {"stddev", d.stddev},
              {"min", d.min},
              {"max", d.max}};
  }
  return nullptr;
}

nlohmann::json InstanceJson(const InstanceSpec& i) {
  return {{"tp_size", i.tp},
          {"sp_size", i.sp},
          {"ep_size", i.ep},
          {"pp_size", i.pp},
          {"instances", i.instances}};
}

// The mean and the largest length a workload's requests may have (prompt or
// output): a fixed length itself; a distribution its mean (clamping aside)
// and its upper bound; a request file its own.
struct LengthRange {
  double mean = 0;
  int64_t max = 0;
};
LengthRange RangeOf(const ServingSpec& s, bool prompt) {
  if (s.arrivals.process == ArrivalProcess::kFile) {
    LengthRange r;
    for (const RequestSpec& q : s.arrivals.file_requests) {
      const int64_t n = prompt ? q.prompt_tokens : q.output_tokens;
      r.mean += static_cast<double>(n);
      r.max = std::max(r.max, n);
    }
    if (!s.arrivals.file_requests.empty()) {
      r.mean /= static_cast<double>(s.arrivals.file_requests.size());
    }
    return r;
  }
  const LengthDist& d = prompt ? s.prompt_tokens : s.output_tokens;
  switch (d.kind) {
    case LengthDist::Kind::kFixed:
      return {static_cast<double>(d.value), d.value};
    case LengthDist::Kind::kUniform:
      return {0.5 * static_cast<double>(d.min + d.max), d.max};
    case LengthDist::Kind::kNormal:
    case LengthDist::Kind::kLognormal:
      return {d.mean, d.max};
  }
  return {};
}

// The field a workload's prompt lengths come from, for errors.
YamlContext PromptField(const YamlMap& w, const ServingSpec& s) {
  return s.arrivals.process == ArrivalProcess::kFile ? w.context().Child("arrivals").Child("path")
                                                     : w.context().Child("prompt_tokens");
}

// scheduler.limits_from: trtllm-bench → max_num_seqs and max_num_batched_tokens
// as trtllm-bench sizes them for this model, devices and dataset.
Status ApplyTrtllmBenchLimits(const YamlMap& exp, const EngineContext& c, ServingSpec* s) {
  const YamlContext where = exp.context().Child("scheduler").Child("limits_from");
  if (!s->engine || s->engine->name != "trtllm") {
    return where.Error("trtllm-bench sizes TensorRT-LLM only: it needs `engine: trtllm`");
  }
  if (c.mla) return where.Error("trtllm-bench's sizing counts GQA KV heads; this model has MLA");
  if (!(c.device_memory_bytes > 0 && c.param_count > 0)) {
    return where.Error("needs the model's parameters and the device's memory");
  }
  TrtllmBenchInputs in;
  static_cast<TrtllmBenchDeployment&>(in) = c;  // the deployment's part, sliced
  const LengthRange prompt = RangeOf(*s, true), output = RangeOf(*s, false);
  in.mean_input = prompt.mean;
  in.mean_output = output.mean;
  in.max_input = prompt.max;
  in.kv_fraction = s->scheduler.gpu_memory_utilization;
  in.chunked_prefill = s->scheduler.chunked_prefill;
  auto limits = TrtllmBenchLimitsFor(in);
  if (!limits.ok()) return where.Error(limits.status().message());
  s->scheduler.max_num_seqs = limits->max_batch_size;
  s->scheduler.max_num_batched_tokens = limits->max_num_tokens;
  return Status::Ok();
}

// Without chunked prefill, a prompt longer than the token budget: refused
// where the engine refuses it (an error here), split under long_prompts: chunk.
Status CheckLongPrompts(const YamlMap& exp, const YamlMap& w, const ServingSpec& s) {
  const SchedulerSpec& c = s.scheduler;
  if (c.chunked_prefill || s.decode_only || c.long_prompts == LongPrompts::kChunk) {
    return Status::Ok();
  }
  if (s.engine && s.engine->name == "vllm" && c.max_num_batched_tokens < c.max_model_len) {
    // vllm/config.py SchedulerConfig._verify_args: a ValueError at startup.
    return exp.context()
        .Child("scheduler")
        .Child("max_num_batched_tokens")
        .Error(fmt::format(
            "is {}, below max_model_len {} with chunked prefill off: vLLM refuses this at "
            "startup (it would reject longer prompts); enable chunked_prefill or raise it",
            c.max_num_batched_tokens, c.max_model_len));
  }
  const LengthRange prompt = RangeOf(s, true), output = RangeOf(s, false);
  // A request preempted by recompute prefills its prompt and what it generated.
  const bool recompute = c.admission == Admission::kRecompute;
  const int64_t longest = prompt.max + (recompute ? std::max<int64_t>(output.max, 1) - 1 : 0);
  if (longest <= c.max_num_batched_tokens) return Status::Ok();
  const std::string who =
      !s.engine ? "the scheduler refuses it (long_prompts: refuse)"
      : s.engine->name == "trtllm"
          ? "TensorRT-LLM refuses it (its executor will not start with max_input_len above "
            "max_num_tokens; its PyTorch backend rejects each such request)"
          : fmt::format("{} refuses it (long_prompts: refuse)", s.engine->name);
  return PromptField(w, s).Error(fmt::format(
      "{} of up to {} tokens exceed the token budget (scheduler.max_num_batched_tokens {}) "
      "with chunked prefill off: {}; enable chunked_prefill or raise the budget",
      recompute ? "prompts recomputed after preemption (prompt + output − 1)" : "prompts", longest,
      c.max_num_batched_tokens, who));
}

}  // namespace

int64_t CachedPrefixTokens(int64_t prompt, double hit_rate, int64_t block_size) {
  if (hit_rate <= 0 || prompt <= 1) return 0;
  const auto hit = static_cast<int64_t>(std::floor(hit_rate * static_cast<double>(prompt)));
  return std::min(hit, prompt - 1) / block_size * block_size;
}

const std::vector<std::string>& ServingKeys() {
  static const std::vector<std::string> keys = {"workload", "engine", "scheduler", "slo",
                                                "disaggregation"};
  return keys;
}

StatusOr<std::optional<ServingSpec>> ReadServing(const YamlMap& exp, const ModelSpec& model,
                                                 const std::string& config_path,
                                                 const EngineContext& engine_context) {
  if (!exp.Has("workload")) {
    if (exp.Has("scheduler") || exp.Has("slo") || exp.Has("engine")) {
      return exp.context()
          .Child(exp.Has("scheduler") ? "scheduler"
                 : exp.Has("slo")     ? "slo"
                                      : "engine")
          .Error("needs a served workload (`workload: {arrivals: ...}`)");
    }
    return std::optional<ServingSpec>();
  }
  ServingSpec s;
  ASSIGN_OR_RETURN(YamlMap w, exp.Map("workload"));
  RETURN_IF_ERROR(
      w.CheckKeys({"arrivals", "prompt_tokens", "output_tokens", "requests", "duration_s",
                   "warmup_requests", "decode_only", "prefix_cache_hit_rate"}));
  RETURN_IF_ERROR(ReadArrivals(w, model, config_path, &s.arrivals));
  const bool file = s.arrivals.process == ArrivalProcess::kFile;
  if (file) {
    for (const char* key : {"prompt_tokens", "output_tokens"}) {
      if (w.Has(key)) return w.context().Child(key).Error("the request file gives the lengths");
    }
  } else {
    RETURN_IF_ERROR(ReadLength(w, "prompt_tokens", &s.prompt_tokens));
    RETURN_IF_ERROR(ReadLength(w, "output_tokens", &s.output_tokens));
  }
  RETURN_IF_ERROR(w.OptionalAtLeast("requests", 1, &s.requests));
  if (s.requests > kMaxServedRequests) {
    return w.context()
        .Child("requests")
        .Error(fmt::format("is {}: at most {} requests may be simulated", s.requests,
                           kMaxServedRequests));
  }
  RETURN_IF_ERROR(w.OptionalPositive("duration_s", &s.duration));
  // Poisson and gamma arrivals without a count draw requests for the whole duration.
  const bool drawn = s.arrivals.process == ArrivalProcess::kPoisson ||
                     s.arrivals.process == ArrivalProcess::kGamma;
  if (drawn && s.requests == 0 && s.duration * s.arrivals.rate > kMaxServedRequests) {
    return w.context()
        .Child("duration_s")
        .Error(fmt::format("is {:g} s: at {:g} requests/s that draws about {:.3g} requests, more "
                           "than the {} that may "
                           "be simulated (give `requests` or a shorter duration)",
                           s.duration, s.arrivals.rate, s.duration * s.arrivals.rate,
                           kMaxServedRequests));
  }
  if (!file && s.requests == 0 && s.duration == 0) {
    return w.context().Error("needs `requests` or `duration_s` (how long requests arrive)");
  }
  if (s.arrivals.process == ArrivalProcess::kClosedLoop && s.requests == 0) {
    return w.context().Child("requests").Error("a closed loop needs a request count");
  }
  RETURN_IF_ERROR(w.OptionalAtLeast("warmup_requests", 0, &s.warmup_requests));
  RETURN_IF_ERROR(w.Optional("decode_only", &s.decode_only));
  RETURN_IF_ERROR(w.Optional("prefix_cache_hit_rate", &s.prefix_cache_hit_rate));
  if (!(s.prefix_cache_hit_rate >= 0 && s.prefix_cache_hit_rate <= 1)) {
    return w.context()
        .Child("prefix_cache_hit_rate")
        .Error(fmt::format("must be in [0, 1], got {}", s.prefix_cache_hit_rate));
  }
  if (s.decode_only && s.prefix_cache_hit_rate > 0) {
    return w.context()
        .Child("prefix_cache_hit_rate")
        .Error("a decode-only workload has no prefill for a prefix cache to skip");
  }
  RETURN_IF_ERROR(ReadEngine(exp, model, engine_context, &s));
  RETURN_IF_ERROR(ReadScheduler(exp, &s.scheduler));
  if (s.scheduler.limits_from == SchedulerLimits::kTrtllmBench) {
    RETURN_IF_ERROR(ApplyTrtllmBenchLimits(exp, engine_context, &s));
  }
  RETURN_IF_ERROR(CheckLongPrompts(exp, w, s));
  RETURN_IF_ERROR(ReadSlo(exp, &s.slo));
  RETURN_IF_ERROR(ReadDisaggregation(exp, &s.disaggregation));
  if (s.decode_only && s.disaggregation) {
    return w.context()
        .Child("decode_only")
        .Error("a decode-only workload has no prefill to disaggregate; drop `disaggregation`");
  }
  if (s.decode_only && s.slo.ttft > 0) {
    return exp.context().Child("slo").Child("ttft_ms").Error("a decode-only workload has no TTFT");
  }
  return std::optional<ServingSpec>(std::move(s));
}

void FitTrtllmGraphSizes(int64_t draft_tokens, ServingSpec* s) {
  SchedulerSpec& c = s->scheduler;
  if (!s->engine || s->engine->name != "trtllm" || c.cuda_graph_batch_sizes.empty()) return;
  const int64_t cap =
      std::min(c.max_num_seqs, c.max_num_batched_tokens / (1 + std::max<int64_t>(draft_tokens, 0)));
  std::vector<int64_t>& sizes = c.cuda_graph_batch_sizes;
  const bool larger_given = sizes.back() > cap;
  std::erase_if(sizes, [cap](int64_t b) { return b > cap; });
  if (larger_given && cap >= 1 && (sizes.empty() || sizes.back() < cap)) sizes.push_back(cap);
}

std::string_view ArrivalProcessName(ArrivalProcess p) { return kArrivalProcessNames.Name(p); }

double ServingPathSpec::IterationSeconds(int64_t batch, int64_t tokens, int64_t workers) const {
  return iteration + iteration_per_request * static_cast<double>(batch) +
         iteration_per_worker * static_cast<double>(std::max<int64_t>(workers - 1, 0)) +
         token * static_cast<double>(tokens);
}

std::string_view AdmissionName(Admission a) { return kAdmissionNames.Name(a); }

std::string_view KvMemoryRuleName(KvMemoryRule r) { return kKvMemoryRuleNames.Name(r); }

std::string_view RouterPolicyName(RouterPolicy p) { return kRouterPolicyNames.Name(p); }

std::string_view LongPromptsName(LongPrompts p) { return kLongPromptsNames.Name(p); }

nlohmann::json ServingToJson(const ServingSpec& s) {
  nlohmann::json arrivals = {{"process", ArrivalProcessName(s.arrivals.process)}};
  switch (s.arrivals.process) {
    case ArrivalProcess::kPoisson:
      arrivals["rate_per_s"] = s.arrivals.rate;
      break;
    case ArrivalProcess::kGamma:
      arrivals["rate_per_s"] = s.arrivals.rate;
      arrivals["cv"] = s.arrivals.cv;
      break;
    case ArrivalProcess::kClosedLoop:
      arrivals["concurrency"] = s.arrivals.concurrency;
      break;
    case ArrivalProcess::kFile:
      arrivals["path"] = s.arrivals.path;
      arrivals["requests_in_file"] = s.arrivals.file_requests.size();
      break;
  }
  nlohmann::json workload = {
      {"arrivals", arrivals},         {"requests", s.requests},
      {"duration_s", s.duration},     {"warmup_requests", s.warmup_requests},
      {"decode_only", s.decode_only}, {"prefix_cache_hit_rate", s.prefix_cache_hit_rate}};
  if (s.arrivals.process != ArrivalProcess::kFile) {
    workload["prompt_tokens"] = LengthJson(s.prompt_tokens);
    workload["output_tokens"] = LengthJson(s.output_tokens);
  }
  const SchedulerSpec& c = s.scheduler;
  nlohmann::json scheduler = {{"max_num_batched_tokens", c.max_num_batched_tokens},
                              {"max_num_seqs", c.max_num_seqs},
                              {"block_size", c.block_size},
                              {"gpu_memory_utilization", c.gpu_memory_utilization},
                              {"kv_blocks", c.kv_blocks},
                              {"chunked_prefill", c.chunked_prefill},
                              {"router", RouterPolicyName(c.router)},
                              {"grid_points_per_octave", c.grid_points_per_octave}};
  // The engines' fields only where used, so runs without them read as before.
  const bool engine_fields =
      s.engine || c.mix_prompts_with_decodes || c.admission != Admission::kRecompute ||
      c.memory_rule != KvMemoryRule::kShareOfCapacity || c.num_scheduler_steps != 1 ||
      !c.cuda_graph_batch_sizes.empty() || s.path.any() || c.long_prompts != LongPrompts::kRefuse ||
      c.limits_from != SchedulerLimits::kGiven || c.overlap_schedule;
  if (engine_fields) {
    scheduler["gpu_memory_utilization_of"] = KvMemoryRuleName(c.memory_rule);
    scheduler["mix_prompts_with_decodes"] = c.mix_prompts_with_decodes;
    scheduler["admission"] = AdmissionName(c.admission);
    scheduler["num_scheduler_steps"] = c.num_scheduler_steps;
    scheduler["overlap_schedule"] = c.overlap_schedule;
    scheduler["cuda_graph_batch_sizes"] = c.cuda_graph_batch_sizes;
    scheduler["long_prompts"] = LongPromptsName(c.long_prompts);
    scheduler["limits_from"] = kSchedulerLimitsNames.Name(c.limits_from);
  }
  nlohmann::json out = {
      {"workload", workload},
      {"scheduler", scheduler},
      {"slo", {{"ttft_s", s.slo.ttft}, {"tpot_s", s.slo.tpot}}},
      {"disaggregation", s.disaggregation
                             ? nlohmann::json{{"prefill", InstanceJson(s.disaggregation->prefill)},
                                              {"decode", InstanceJson(s.disaggregation->decode)}}
                             : nlohmann::json(nullptr)}};
  if (engine_fields) {
    out["engine"] = s.engine
                        ? nlohmann::json{{"name", s.engine->name}, {"version", s.engine->version}}
                        : nlohmann::json(nullptr);
    out["serving_path"] = {
        {"request_overhead_us", s.path.request * 1e6},
        {"token_overhead_us", s.path.token * 1e6},
        {"iteration_overhead_us", s.path.iteration * 1e6},
        {"iteration_overhead_per_request_us", s.path.iteration_per_request * 1e6},
        {"iteration_overhead_per_worker_us", s.path.iteration_per_worker * 1e6}};
  }
  return out;
}

}  // namespace shardscope
