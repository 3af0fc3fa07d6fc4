#include "config/mechanisms.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/small_file.h"
#include "core/yaml_reader.h"

namespace shardscope {

double SpeculativeSpec::TokensPerStep() const {
  if (!enabled()) return 1.0;
  double tokens = 1.0, all_accepted = 1.0;
  for (double p : acceptance) {
    all_accepted *= p;
    tokens += all_accepted;
  }
  return tokens;
}

std::string_view SpeculativeMethodName(SpeculativeMethod m) {
  switch (m) {
    case SpeculativeMethod::kMtp:
      return "mtp";
    case SpeculativeMethod::kDraft:
      return "draft";
    case SpeculativeMethod::kNone:
      break;
  }
  return "none";
}

namespace {

// method: draft's fields: the draft model and its tensor-parallel size.
Status ReadDraftModel(const YamlMap& m, const ModelSpec& target, int64_t tp,
                      const ModelResolver& resolve_model, SpeculativeSpec* s) {
  const YamlContext ctx = m.context().Child("draft_model");
  if (!m.Has("draft_model")) return ctx.Error("is required with method: draft");
  ASSIGN_OR_RETURN(s->draft_model, resolve_model(m, "draft_model"));
  const ModelSpec& d = s->draft_model;
  if (d.vocab_size != target.vocab_size) {
    return ctx.Error(fmt::format(
        "draft model '{}' has a vocabulary of {} tokens, target model '{}' of {}; they must be "
        "the same",
        d.name, d.vocab_size, target.name, target.vocab_size));
  }
  if (d.is_moe()) {
    return ctx.Error(
        fmt::format("draft model '{}' is a mixture of experts; a draft model is "
                    "modelled dense only",
                    d.name));
  }
  RETURN_IF_ERROR(m.OptionalAtLeast("draft_tensor_parallel", 1, &s->draft_tp));
  const YamlContext tp_ctx = m.context().Child("draft_tensor_parallel");
  const int64_t draft_tp = s->DraftTp(tp);
  if (draft_tp != 1 && draft_tp != tp) {
    return tp_ctx.Error(
        fmt::format("is {}; it must be 1 or the target's tensor-parallel size ({})", draft_tp, tp));
  }
  const int64_t kv = d.num_kv_heads;
  if (d.num_heads % draft_tp != 0 || (d.attention == AttentionKind::kGqa &&
                                      (draft_tp <= kv ? kv % draft_tp : draft_tp % kv) != 0)) {
    return tp_ctx.Error(fmt::format(
        "{} does not split draft model '{}' ({} heads, {} KV heads); set draft_tensor_parallel: 1",
        draft_tp, d.name, d.num_heads, kv));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<SpeculativeSpec> ReadSpeculative(const YamlMap& exp, const ModelSpec& model, int64_t tp,
                                          const ModelResolver& resolve_model) {
  SpeculativeSpec s;
  if (!exp.Has("speculative")) return s;
  ASSIGN_OR_RETURN(YamlMap m, exp.Map("speculative"));
  RETURN_IF_ERROR(m.CheckKeys({"method", "draft_tokens", "acceptance", "acceptance_rate",
                               "draft_model", "draft_tensor_parallel"}));
  std::string method;
  RETURN_IF_ERROR(m.Required("method", &method));
  if (method == "mtp") {
    s.method = SpeculativeMethod::kMtp;
    if (model.num_mtp_layers < 1) {
      return m.context().Child("method").Error(fmt::format(
          "model '{}' has no multi-token-prediction module (num_mtp_layers is 0)", model.name));
    }
    for (const char* key : {"draft_model", "draft_tensor_parallel"}) {
      if (m.Has(key)) return m.context().Child(key).Error("is for method: draft only");
    }
  } else if (method == "draft") {
    s.method = SpeculativeMethod::kDraft;
    RETURN_IF_ERROR(ReadDraftModel(m, model, tp, resolve_model, &s));
  } else {
    return m.context().Child("method").Error(
        fmt::format("unknown speculative method '{}' (expected mtp or draft)", method));
  }
  RETURN_IF_ERROR(m.RequiredAtLeast("draft_tokens", 1, &s.draft_tokens));
  if (s.draft() && s.draft_tokens > kMaxDraftPasses) {
    return m.context()
        .Child("draft_tokens")
        .Error(fmt::format("is {}; a draft model drafts at most {} tokens per step", s.draft_tokens,
                           kMaxDraftPasses));
  }
  if (m.Has("acceptance") == m.Has("acceptance_rate")) {
    return m.context()
        .Child("acceptance")
        .Error("give either acceptance (one probability per draft token) or acceptance_rate");
  }
  if (m.Has("acceptance")) {
    RETURN_IF_ERROR(m.Optional("acceptance", &s.acceptance));
    if (static_cast<int64_t>(s.acceptance.size()) != s.draft_tokens) {
      return m.context()
          .Child("acceptance")
          .Error(fmt::format("needs one probability per draft token ({}), got {}", s.draft_tokens,
                             s.acceptance.size()));
    }
  } else {
    double rate = 0;
    RETURN_IF_ERROR(m.Required("acceptance_rate", &rate));
    s.acceptance.assign(static_cast<size_t>(s.draft_tokens), rate);
  }
  for (double p : s.acceptance) {
    if (!(p >= 0 && p <= 1)) {
      return m.context()
          .Child(m.Has("acceptance") ? "acceptance" : "acceptance_rate")
          .Error(fmt::format("{} is not a probability in [0, 1]", p));
    }
  }
  return s;
}

StatusOr<std::vector<std::vector<double>>> ReadExpertLoadFile(const std::string& path,
                                                              int64_t experts, int64_t moe_layers) {
  ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path, "the expert load file"));
  std::vector<std::vector<double>> rows;
  std::istringstream lines(text);
  std::string line;
  for (int64_t number = 1; std::getline(lines, line); ++number) {
    for (char& c : line) {
      if (c == ',' || c == '\t' || c == '\r') c = ' ';
    }
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '#') continue;
    std::vector<double> row;
    std::istringstream fields(line);
    std::string field;
    while (fields >> field) {
      double v = 0;
      const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
      if (ec != std::errc() || end != field.data() + field.size() || !std::isfinite(v) || v < 0) {
        return InvalidArgument("{}: line {}: '{}' is not a non-negative number", path, number,
                               field);
      }
      row.push_back(v);
    }
    if (static_cast<int64_t>(row.size()) != experts) {
      return InvalidArgument("{}: line {}: {} loads, expected one per routed expert ({})", path,
                             number, row.size(), experts);
    }
    rows.push_back(std::move(row));
  }
  if (rows.size() != 1 && static_cast<int64_t>(rows.size()) != moe_layers) {
    return InvalidArgument(
        "{}: {} lines of loads; expected one (every MoE layer) or one per MoE layer ({})", path,
        rows.size(), moe_layers);
  }
  return rows;
}

nlohmann::json SpeculativeToJson(const SpeculativeSpec& s) {
  nlohmann::json j = {{"method", SpeculativeMethodName(s.method)},
                      {"draft_tokens", s.draft_tokens},
                      {"acceptance", s.acceptance},
                      {"tokens_per_step", s.TokensPerStep()}};
  if (s.draft()) {
    j["draft_model"] = s.draft_model.name;
    if (s.draft_tp > 0) j["draft_tensor_parallel"] = s.draft_tp;  // else the target's tp
  }
  return j;
}

}  // namespace shardscope
