#include "config/request_file.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace shardscope {
namespace {

// The three fields of a request and the names each layout gives them.
enum Field { kArrival = 0, kPrompt, kOutput, kNumFields };
constexpr const char* kOurNames[kNumFields] = {"arrival_time_s", "prompt_tokens", "output_tokens"};
constexpr const char* kAzureNames[kNumFields] = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '"'))
    s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '"')) {
    s.remove_suffix(1);
  }
  return s;
}

std::vector<std::string_view> SplitCsv(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    out.push_back(
        Trim(line.substr(start, comma == std::string_view::npos ? comma : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

StatusOr<double> ParseNumber(std::string_view s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
    return InvalidArgument("expected a number, got '{}'", s);
  }
  return v;
}

// A time: seconds, or (Azure) a date-time.
StatusOr<double> ParseTime(std::string_view s) {
  auto n = ParseNumber(s);
  if (n.ok()) return n;
  auto d = ParseDateTimeSeconds(s);
  if (d.ok()) return d;
  return InvalidArgument("expected seconds or a date-time (YYYY-MM-DD HH:MM:SS.f), got '{}'", s);
}

StatusOr<int64_t> ParseCount(std::string_view s) {
  ASSIGN_OR_RETURN(double v, ParseNumber(s));
  if (v != std::floor(v)) return InvalidArgument("expected a whole number of tokens, got '{}'", s);
  return static_cast<int64_t>(v);
}

// Checks one request against the previous one and the context limit.
Status CheckRequest(const RequestSpec& r, double previous, int64_t max_context,
                    const std::string& where, const char* const names[kNumFields]) {
  if (r.arrival < 0) {
    return InvalidArgument("{}: field '{}': negative time {}", where, names[kArrival], r.arrival);
  }
  if (r.arrival < previous) {
    return InvalidArgument(
        "{}: field '{}': time {} is before the previous line's {} (times must "
        "be sorted)",
        where, names[kArrival], r.arrival, previous);
  }
  if (r.prompt_tokens < 1) {
    return InvalidArgument("{}: field '{}': needs at least 1 token, got {}", where, names[kPrompt],
                           r.prompt_tokens);
  }
  if (r.output_tokens < 1) {
    return InvalidArgument("{}: field '{}': needs at least 1 token, got {}", where, names[kOutput],
                           r.output_tokens);
  }
  if (max_context > 0 && r.prompt_tokens + r.output_tokens > max_context) {
    return InvalidArgument(
        "{}: field '{}': {} prompt + {} output tokens exceed the model's context "
        "of {} tokens",
        where, names[kPrompt], r.prompt_tokens, r.output_tokens, max_context);
  }
  return Status::Ok();
}

StatusOr<std::vector<RequestSpec>> ParseJsonl(std::string_view text, const std::string& name,
                                              int64_t max_context) {
  std::vector<RequestSpec> out;
  std::istringstream in{std::string(text)};
  std::string line;
  int64_t line_no = 0;
  double previous = -INFINITY;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string_view t = Trim(line);
    if (t.empty() || t.front() == '#') continue;
    const std::string where = fmt::format("{}: line {}", name, line_no);
    nlohmann::json j = nlohmann::json::parse(t, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return InvalidArgument("{}: expected a JSON object", where);
    const bool azure = j.contains(kAzureNames[kArrival]);
    const char* const* names = azure ? kAzureNames : kOurNames;
    RequestSpec r;
    for (int f = 0; f < kNumFields; ++f) {
      if (!j.contains(names[f])) {
        return InvalidArgument("{}: missing field '{}' (expected {}, {}, {})", where, names[f],
                               names[0], names[1], names[2]);
      }
      const nlohmann::json& v = j[names[f]];
      StatusOr<double> value = v.is_number()   ? StatusOr<double>(v.get<double>())
                               : v.is_string() ? ParseTime(v.get<std::string>())
                                               : InvalidArgument("expected a number");
      if (!value.ok()) {
        return InvalidArgument("{}: field '{}': {}", where, names[f], value.status().message());
      }
      if (f == kArrival) {
        r.arrival = *value;
      } else if (*value != std::floor(*value)) {
        return InvalidArgument("{}: field '{}': expected a whole number of tokens, got {}", where,
                               names[f], *value);
      } else {
        (f == kPrompt ? r.prompt_tokens : r.output_tokens) = static_cast<int64_t>(*value);
      }
    }
    RETURN_IF_ERROR(CheckRequest(r, previous, max_context, where, names));
    previous = r.arrival;
    out.push_back(r);
  }
  return out;
}

StatusOr<std::vector<RequestSpec>> ParseCsv(std::string_view text, const std::string& name,
                                            int64_t max_context) {
  std::vector<RequestSpec> out;
  std::istringstream in{std::string(text)};
  std::string line;
  int64_t line_no = 0;
  int column[kNumFields] = {-1, -1, -1};
  const char* const* names = kOurNames;
  bool header = false;
  double previous = -INFINITY;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string_view t = Trim(line);
    if (t.empty() || t.front() == '#') continue;
    const std::vector<std::string_view> cells = SplitCsv(t);
    if (!header) {
      header = true;
      names = std::find(cells.begin(), cells.end(), std::string_view(kAzureNames[kArrival])) !=
                      cells.end()
                  ? kAzureNames
                  : kOurNames;
      for (int f = 0; f < kNumFields; ++f) {
        auto it = std::find(cells.begin(), cells.end(), std::string_view(names[f]));
        if (it == cells.end()) {
          return InvalidArgument(
              "{}: line {}: missing column '{}' (the header must name {}, {}, {} — or Azure's {}, "
              "{}, {})",
              name, line_no, names[f], kOurNames[0], kOurNames[1], kOurNames[2], kAzureNames[0],
              kAzureNames[1], kAzureNames[2]);
        }
        column[f] = static_cast<int>(it - cells.begin());
      }
      continue;
    }
    const std::string where = fmt::format("{}: line {}", name, line_no);
    RequestSpec r;
    for (int f = 0; f < kNumFields; ++f) {
      if (column[f] >= static_cast<int>(cells.size()) || cells[column[f]].empty()) {
        return InvalidArgument("{}: field '{}' is missing", where, names[f]);
      }
      const std::string_view cell = cells[column[f]];
      if (f == kArrival) {
        auto v = ParseTime(cell);
        if (!v.ok())
          return InvalidArgument("{}: field '{}': {}", where, names[f], v.status().message());
        r.arrival = *v;
      } else {
        auto v = ParseCount(cell);
        if (!v.ok())
          return InvalidArgument("{}: field '{}': {}", where, names[f], v.status().message());
        (f == kPrompt ? r.prompt_tokens : r.output_tokens) = *v;
      }
    }
    // Date-times are absolute: compare and check them before making them relative.
    RETURN_IF_ERROR(CheckRequest(r, previous, max_context, where, names));
    previous = r.arrival;
    out.push_back(r);
  }
  if (!header) return InvalidArgument("{}: empty request file (no header line)", name);
  return out;
}

}  // namespace

StatusOr<double> ParseDateTimeSeconds(std::string_view s) {
  // YYYY-MM-DD HH:MM:SS[.fraction]
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
      s[13] != ':' || s[16] != ':') {
    return InvalidArgument("not a date-time: '{}'", s);
  }
  auto field = [&](size_t pos, size_t len) -> int64_t {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data() + pos, s.data() + pos + len, v);
    return (ec != std::errc() || p != s.data() + pos + len) ? -1 : v;
  };
  const int64_t y = field(0, 4), mo = field(5, 2), d = field(8, 2), h = field(11, 2),
                mi = field(14, 2), sec = field(17, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
      sec < 0 || sec > 60) {
    return InvalidArgument("not a date-time: '{}'", s);
  }
  double frac = 0;
  if (s.size() > 19) {
    if (s[19] != '.') return InvalidArgument("not a date-time: '{}'", s);
    auto f = ParseNumber(std::string("0") + std::string(s.substr(19)));
    if (!f.ok()) return InvalidArgument("not a date-time: '{}'", s);
    frac = *f;
  }
  // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
  const int64_t yy = mo <= 2 ? y - 1 : y;
  const int64_t era = yy / 400;
  const int64_t yoe = yy - era * 400;
  const int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = era * 146097 + doe - 719468;
  return static_cast<double>(days * 86400 + h * 3600 + mi * 60 + sec) + frac;
}

StatusOr<std::vector<RequestSpec>> ParseRequestFile(std::string_view text, const std::string& name,
                                                    int64_t max_context) {
  size_t first = text.find_first_not_of(" \t\r\n");
  while (first != std::string_view::npos && text[first] == '#') {
    const size_t eol = text.find('\n', first);
    first = eol == std::string_view::npos ? eol : text.find_first_not_of(" \t\r\n", eol);
  }
  const bool jsonl = first != std::string_view::npos && text[first] == '{';
  ASSIGN_OR_RETURN(std::vector<RequestSpec> out,
                   jsonl ? ParseJsonl(text, name, max_context) : ParseCsv(text, name, max_context));
  if (out.empty()) return InvalidArgument("{}: no requests", name);
  const double t0 = out.front().arrival;
  for (RequestSpec& r : out) r.arrival -= t0;
  return out;
}

StatusOr<std::vector<RequestSpec>> ReadRequestFile(const std::string& path, int64_t max_context) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("{}: cannot open the request file", path);
  std::ostringstream text;
  text << in.rdbuf();
  return ParseRequestFile(text.str(), path, max_context);
}

}  // namespace shardscope
