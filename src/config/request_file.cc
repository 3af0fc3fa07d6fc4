#include "config/request_file.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "core/checked_int.h"
#include "core/small_file.h"

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
  const std::optional<int64_t> n = WholeToInt64(v);
  if (!n) return InvalidArgument("expected a whole number of tokens, got '{}'", s);
  return *n;
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
  // 0 is a request whose first sampled token ends it (EOS first): it still prefills.
  if (r.output_tokens < 0) {
    return InvalidArgument("{}: field '{}': needs 0 tokens or more, got {}", where, names[kOutput],
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

// Turns one line into a request, or nullopt for a header line; sets `names`
// to the field names of the layout it recognised (for messages).
using RowParser = std::function<StatusOr<std::optional<RequestSpec>>(
    std::string_view line, const std::string& where, const char* const** names)>;

// Runs `parse` over every line that is neither blank nor a comment and checks
// each request against the one before it.
StatusOr<std::vector<RequestSpec>> ParseLines(std::string_view text, const std::string& name,
                                              int64_t max_context, const RowParser& parse) {
  std::vector<RequestSpec> out;
  double previous = -INFINITY;
  int64_t line_no = 0;
  for (size_t pos = 0; pos <= text.size();) {
    const size_t eol = text.find('\n', pos);
    const std::string_view line =
        Trim(text.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos));
    pos = eol == std::string_view::npos ? text.size() + 1 : eol + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const std::string where = fmt::format("{}: line {}", name, line_no);
    const char* const* names = kOurNames;
    ASSIGN_OR_RETURN(std::optional<RequestSpec> r, parse(line, where, &names));
    if (!r) continue;
    // Date-times are absolute: checked before they are made relative.
    RETURN_IF_ERROR(CheckRequest(*r, previous, max_context, where, names));
    previous = r->arrival;
    out.push_back(*r);
  }
  return out;
}

StatusOr<std::optional<RequestSpec>> JsonlRow(std::string_view line, const std::string& where,
                                              const char* const** layout) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("{}: expected a JSON object", where);
  const char* const* names = j.contains(kAzureNames[kArrival]) ? kAzureNames : kOurNames;
  *layout = names;
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
    } else if (const std::optional<int64_t> n = WholeToInt64(*value); !n) {
      return InvalidArgument("{}: field '{}': expected a whole number of tokens, got {}", where,
                             names[f], *value);
    } else {
      (f == kPrompt ? r.prompt_tokens : r.output_tokens) = *n;
    }
  }
  return std::optional<RequestSpec>(r);
}

// CSV rows after a header line that names the columns (kept between calls).
class CsvRows {
 public:
  StatusOr<std::optional<RequestSpec>> operator()(std::string_view line, const std::string& where,
                                                  const char* const** layout) {
    const std::vector<std::string_view> cells = SplitCsv(line);
    if (!header_) return Header(cells, where);
    *layout = names_;
    RequestSpec r;
    for (int f = 0; f < kNumFields; ++f) {
      if (column_[f] >= static_cast<int>(cells.size()) || cells[column_[f]].empty()) {
        return InvalidArgument("{}: field '{}' is missing", where, names_[f]);
      }
      const std::string_view cell = cells[column_[f]];
      if (f == kArrival) {
        auto v = ParseTime(cell);
        if (!v.ok()) {
          return InvalidArgument("{}: field '{}': {}", where, names_[f], v.status().message());
        }
        r.arrival = *v;
      } else {
        auto v = ParseCount(cell);
        if (!v.ok()) {
          return InvalidArgument("{}: field '{}': {}", where, names_[f], v.status().message());
        }
        (f == kPrompt ? r.prompt_tokens : r.output_tokens) = *v;
      }
    }
    return std::optional<RequestSpec>(r);
  }
  bool has_header() const { return header_; }

 private:
  StatusOr<std::optional<RequestSpec>> Header(const std::vector<std::string_view>& cells,
                                              const std::string& where) {
    header_ = true;
    const bool azure = std::find(cells.begin(), cells.end(),
                                 std::string_view(kAzureNames[kArrival])) != cells.end();
    names_ = azure ? kAzureNames : kOurNames;
    for (int f = 0; f < kNumFields; ++f) {
      auto it = std::find(cells.begin(), cells.end(), std::string_view(names_[f]));
      if (it == cells.end()) {
        return InvalidArgument(
            "{}: missing column '{}' (the header must name {}, {}, {} — or Azure's {}, {}, {})",
            where, names_[f], kOurNames[0], kOurNames[1], kOurNames[2], kAzureNames[0],
            kAzureNames[1], kAzureNames[2]);
      }
      column_[f] = static_cast<int>(it - cells.begin());
      // A second column of the same name would be silently ignored.
      if (auto again = std::find(it + 1, cells.end(), std::string_view(names_[f]));
          again != cells.end()) {
        return InvalidArgument("{}: duplicate column '{}' (columns {} and {})", where, names_[f],
                               column_[f] + 1, again - cells.begin() + 1);
      }
    }
    return std::optional<RequestSpec>();
  }

  bool header_ = false;
  const char* const* names_ = kOurNames;
  int column_[kNumFields] = {-1, -1, -1};
};

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
  std::vector<RequestSpec> out;
  if (jsonl) {
    ASSIGN_OR_RETURN(out, ParseLines(text, name, max_context, JsonlRow));
  } else {
    auto csv = std::make_shared<CsvRows>();
    ASSIGN_OR_RETURN(
        out, ParseLines(text, name, max_context,
                        [csv](std::string_view line, const std::string& where,
                              const char* const** layout) { return (*csv)(line, where, layout); }));
    if (!csv->has_header()) return InvalidArgument("{}: empty request file (no header line)", name);
  }
  if (out.empty()) return InvalidArgument("{}: no requests", name);
  const double t0 = out.front().arrival;
  for (RequestSpec& r : out) r.arrival -= t0;
  return out;
}

StatusOr<std::vector<RequestSpec>> ReadRequestFile(const std::string& path, int64_t max_context) {
  ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path, "the request file"));
  return ParseRequestFile(text, path, max_context);
}

}  // namespace shardscope
