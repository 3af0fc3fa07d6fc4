#include "runtime/fault_injection.h"

#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <stdexcept>

namespace shardscope::runtime {
namespace {

constexpr std::string_view kModes[] = {"error", "throw", "exit", "abort", "kill", "hang"};

StatusOr<int64_t> ParseInt(std::string_view text, std::string_view spec, std::string_view field) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) {
    return InvalidArgument("{} '{}': field '{}': expected a non-negative integer, got '{}'",
                           kFaultEnvVar, spec, field, text);
  }
  return v;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

bool FaultSpec::Matches(int64_t r, int32_t phase, const Op& o) const {
  if (r != rank) return false;
  if (phase_index >= 0 && phase != phase_index) return false;
  if (op_id >= 0) return o.id == op_id;
  return OpName(o) == op;
}

StatusOr<FaultSpec> ParseFaultSpec(std::string_view text) {
  FaultSpec spec;
  if (text.empty()) return spec;
  bool has_rank = false, has_op = false;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument("{} '{}': expected key=value, got '{}'", kFaultEnvVar, text, item);
    }
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "rank") {
      ASSIGN_OR_RETURN(spec.rank, ParseInt(value, text, key));
      has_rank = true;
    } else if (key == "op") {
      if (value.empty()) return InvalidArgument("{} '{}': field 'op' is empty", kFaultEnvVar, text);
      if (AllDigits(value)) {
        ASSIGN_OR_RETURN(int64_t id, ParseInt(value, text, key));
        spec.op_id = static_cast<int32_t>(id);
      } else {
        spec.op = std::string(value);
      }
      has_op = true;
    } else if (key == "phase") {
      if (value == "prefill") {
        spec.phase_index = 0;
      } else if (value.starts_with("decode:")) {
        ASSIGN_OR_RETURN(int64_t step, ParseInt(value.substr(7), text, key));
        spec.phase_index = static_cast<int32_t>(step + 1);
      } else {
        return InvalidArgument("{} '{}': field 'phase': expected prefill or decode:K, got '{}'",
                               kFaultEnvVar, text, value);
      }
    } else if (key == "mode") {
      bool found = false;
      for (size_t i = 0; i < std::size(kModes); ++i) {
        if (value == kModes[i]) spec.mode = static_cast<FaultMode>(i), found = true;
      }
      if (!found) {
        return InvalidArgument("{} '{}': field 'mode': expected one of {}, got '{}'", kFaultEnvVar,
                               text, fmt::join(kModes, ", "), value);
      }
    } else {
      return InvalidArgument("{} '{}': unknown field '{}' (rank, op, phase, mode)", kFaultEnvVar,
                             text, key);
    }
  }
  if (!has_rank || !has_op) {
    return InvalidArgument("{} '{}': fields 'rank' and 'op' are required", kFaultEnvVar, text);
  }
  return spec;
}

StatusOr<FaultSpec> FaultSpecFromEnv() {
  const char* v = std::getenv(kFaultEnvVar);
  return ParseFaultSpec(v == nullptr ? "" : v);
}

std::string FaultSpecToString(const FaultSpec& spec) {
  if (!spec.active()) return "";
  std::string s = fmt::format("rank={},op={}", spec.rank,
                              spec.op_id >= 0 ? std::to_string(spec.op_id) : spec.op);
  if (spec.phase_index == 0) s += ",phase=prefill";
  if (spec.phase_index > 0) s += fmt::format(",phase=decode:{}", spec.phase_index - 1);
  return s + fmt::format(",mode={}", kModes[static_cast<size_t>(spec.mode)]);
}

Status InjectFault(const FaultSpec& spec) {
  switch (spec.mode) {
    case FaultMode::kError:
      return InternalError("injected fault");
    case FaultMode::kThrow:
      throw std::runtime_error("injected fault (exception from a kernel)");
    case FaultMode::kExit:
      std::exit(3);
    case FaultMode::kAbort:
      std::abort();
    case FaultMode::kKill:
      raise(SIGKILL);
      _exit(137);  // not reached
    case FaultMode::kHang:
      for (;;) pause();  // until a signal ends the process
  }
  return InternalError("injected fault");
}

}  // namespace shardscope::runtime
