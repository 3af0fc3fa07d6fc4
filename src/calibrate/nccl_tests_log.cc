#include "calibrate/nccl_tests_log.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/collective.h"

namespace shardscope::calibrate {
namespace {

std::vector<std::string_view> Tokens(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    size_t j = i;
    while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

std::optional<double> Number(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const std::string t(s);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Bytes per element of nccl-tests' type names (0: unknown).
int64_t TypeSize(std::string_view type) {
  static const std::map<std::string_view, int64_t> kSizes = {
      {"int8", 1},   {"char", 1},    {"uint8", 1},  {"int32", 4},    {"int", 4},
      {"uint32", 4}, {"int64", 8},   {"uint64", 8}, {"half", 2},     {"float16", 2},
      {"float", 4},  {"float32", 4}, {"double", 8}, {"float64", 8},  {"bfloat16", 2},
      {"bf16", 2},   {"f8e4m3", 1},  {"f8e5m2", 1}, {"fp8_e4m3", 1}, {"fp8_e5m2", 1}};
  auto it = kSizes.find(type);
  return it == kSizes.end() ? 0 : it->second;
}

// The binary named by a token ("./build/all_reduce_perf", "all_gather_perf_mpi"):
// its collective name without "_perf"; "" when the token names none.
std::string BinaryName(std::string_view token) {
  const size_t slash = token.find_last_of('/');
  if (slash != std::string_view::npos) token = token.substr(slash + 1);
  for (std::string_view suffix : {"_perf_mpi", "_perf"}) {
    if (token.size() > suffix.size() && token.substr(token.size() - suffix.size()) == suffix) {
      std::string_view name = token.substr(0, token.size() - suffix.size());
      if (std::all_of(name.begin(), name.end(), [](char c) {
            return std::islower(static_cast<unsigned char>(c)) || c == '_';
          })) {
        return std::string(name);
      }
    }
  }
  return "";
}

// The column layout of a table, from its header line.
struct Layout {
  std::vector<std::string> head;           // size, count, type[, redop][, root]
  int groups = 0;                          // timings per row (out-of-place, in-place)
  int width = 0;                           // columns per timing
  int algbw = -1, busbw = -1, wrong = -1;  // offsets within a timing
  bool timestamp = false;
};

std::optional<Layout> HeaderLayout(const std::vector<std::string_view>& t) {
  // t excludes the leading '#'.
  std::vector<int> times;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == "time" || t[i] == "cputime") times.push_back(static_cast<int>(i));
  }
  if (times.empty() || t.size() < 3 || t[0] != "size" || t[1] != "count") return std::nullopt;
  Layout l;
  for (int i = 0; i < times[0]; ++i) l.head.emplace_back(t[i]);
  l.timestamp = t.back() == "timestamp";
  const int end = static_cast<int>(t.size()) - (l.timestamp ? 1 : 0);
  l.groups = static_cast<int>(times.size());
  l.width = l.groups > 1 ? times[1] - times[0] : end - times[0];
  if (l.width < 3 || times[0] + l.groups * l.width != end) return std::nullopt;
  for (int k = 0; k < l.width; ++k) {
    const std::string_view name = t[times[0] + k];
    if (name == "algbw") l.algbw = k;
    if (name == "busbw") l.busbw = k;
    if (name == "#wrong" || name == "error" || name == "errors") l.wrong = k;
  }
  if (l.algbw < 0 || l.busbw < 0) return std::nullopt;
  return l;
}

// A run's context: what its header lines said.
struct Context {
  std::string binary;  // from "…_perf" anywhere
  int binary_line = 0;
  std::set<int64_t> ranks;  // the "# Rank N" lines
  int64_t per_process = 0;  // nThread × nGpus
};

class Parser {
 public:
  Parser(const std::string& file, std::optional<Collective> named) : file_(file), named_(named) {}

  Status Line(std::string_view line, int number) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::vector<std::string_view> t = Tokens(line);
    if (t.empty()) return Status::Ok();
    if (t[0].front() == '#') {
      // "#  Rank 0 …" and "# size …" (the '#' may touch the first word).
      if (t[0].size() > 1) {
        t[0].remove_prefix(1);
      } else {
        t.erase(t.begin());
      }
      return Comment(t, number);
    }
    if (table_ && AllDigits(t[0])) return Row(t, number);
    NoteBinary(t, number);
    return Status::Ok();
  }

  StatusOr<std::vector<NcclTestsTable>> Finish() {
    RETURN_IF_ERROR(CloseTable());
    if (tables_.empty()) {
      return InvalidArgument(
          "{}: no nccl-tests table (a '#  size  count  type … time  algbw  busbw' header and "
          "its rows)",
          file_);
    }
    return std::move(tables_);
  }

 private:
  Status Error(int line, std::string_view what) const {
    return InvalidArgument("{}:{}: {}", file_, line, what);
  }

  // "…_perf" anywhere (the command line, "# Collective test starting: …"); not
  // the previous run's "concluded" line.
  void NoteBinary(const std::vector<std::string_view>& t, int number) {
    if (std::find(t.begin(), t.end(), "concluded:") != t.end()) return;
    for (std::string_view tok : t) {
      std::string name = BinaryName(tok);
      if (!name.empty()) {
        context_.binary = std::move(name);
        context_.binary_line = number;
        return;
      }
    }
  }

  Status Comment(const std::vector<std::string_view>& t, int number) {
    if (t.empty()) return Status::Ok();
    if (auto layout = HeaderLayout(t)) {
      RETURN_IF_ERROR(CloseTable());
      table_ = NcclTestsTable{};
      table_->file = file_;
      table_->line = number;
      layout_ = *layout;
      short_head_ = false;
      return Status::Ok();
    }
    if (t[0] == "nThread") {
      // A new run's header: the previous table (if any) ends here.
      RETURN_IF_ERROR(CloseTable());
      int64_t threads = 0, gpus = 0;
      for (size_t i = 0; i + 1 < t.size(); ++i) {
        if (t[i] == "nThread" && AllDigits(t[i + 1])) threads = std::stoll(std::string(t[i + 1]));
        if (t[i] == "nGpus" && AllDigits(t[i + 1])) gpus = std::stoll(std::string(t[i + 1]));
      }
      context_.per_process = threads * gpus;
      return Status::Ok();
    }
    if (t[0] == "Rank" && t.size() > 1 && AllDigits(t[1])) {
      if (table_) RETURN_IF_ERROR(CloseTable());
      context_.ranks.insert(std::stoll(std::string(t[1])));
      return Status::Ok();
    }
    if (t.size() >= 4 && t[0] == "Avg" && t[1] == "bus" && t[2] == "bandwidth") {
      const std::optional<double> v = Number(t.back());
      if (table_ && v) table_->avg_busbw = *v * 1e9;
      return CloseTable();
    }
    NoteBinary(t, number);
    return Status::Ok();
  }

  Status Timing(const std::vector<std::string_view>& t, size_t at, int number,
                NcclTestsTiming* out) const {
    auto field = [&](int k, std::string_view what) -> StatusOr<double> {
      const std::optional<double> v = Number(t[at + k]);
      if (!v || *v < 0) {
        return Error(number, fmt::format("{} '{}' is not a number ≥ 0", what, t[at + k]));
      }
      return *v;
    };
    ASSIGN_OR_RETURN(const double us, field(0, "time"));
    ASSIGN_OR_RETURN(const double algbw, field(layout_.algbw, "algbw"));
    ASSIGN_OR_RETURN(const double busbw, field(layout_.busbw, "busbw"));
    out->seconds = us * 1e-6;
    out->algbw = algbw * 1e9;
    out->busbw = busbw * 1e9;
    if (layout_.wrong >= 0) {
      const std::string_view w = t[at + layout_.wrong];
      if (w != "N/A" && !Number(w)) {
        return Error(number, fmt::format("#wrong '{}' is neither a number nor N/A", w));
      }
      out->checked = w != "N/A";
    }
    return Status::Ok();
  }

  Status Row(std::vector<std::string_view> t, int number) {
    if (layout_.timestamp && t.size() >= 2 && t[t.size() - 2].find('-') != std::string_view::npos &&
        t.back().find(':') != std::string_view::npos) {
      t.resize(t.size() - 2);
    }
    const size_t n = t.size();
    const size_t head_max = layout_.head.size();
    const size_t w = static_cast<size_t>(layout_.width);
    size_t groups = static_cast<size_t>(layout_.groups);
    auto head_ok = [&](size_t g) { return n >= g * w + 3 && n - g * w <= head_max; };
    if (!head_ok(groups)) {
      if (groups == 2 && head_ok(1)) {
        groups = 1;  // one timing printed (in-place only, or out-of-place only)
      } else {
        return Error(number, fmt::format("a table row with {} fields: the header at line {} has {}",
                                         n, table_->line, head_max + groups * w));
      }
    }
    const size_t head = n - groups * w;
    NcclTestsRow row;
    row.line = number;
    row.bytes = std::stoll(std::string(t[0]));
    if (!AllDigits(t[1]))
      return Error(number, fmt::format("count '{}' is not a whole number", t[1]));
    row.count = std::stoll(std::string(t[1]));
    row.type = std::string(t[2]);
    // The head's optional columns: redop then root; one short means the redop
    // printed empty (older alltoall_perf).
    std::vector<std::string_view> rest(t.begin() + 3, t.begin() + static_cast<long>(head));
    const bool has_root =
        std::find(layout_.head.begin(), layout_.head.end(), "root") != layout_.head.end();
    if (has_root && !rest.empty()) {
      const std::optional<double> root = Number(rest.back());
      if (!root || *root != std::floor(*root)) {
        return Error(number, fmt::format("root '{}' is not a whole number", rest.back()));
      }
      row.root = static_cast<int64_t>(*root);
      rest.pop_back();
    }
    if (!rest.empty()) row.redop = rest.front() == "none" ? "" : std::string(rest.front());
    if (head < head_max) short_head_ = true;
    NcclTestsTiming first;
    RETURN_IF_ERROR(Timing(t, head, number, &first));
    if (groups == 2) {
      row.out_of_place = first;
      RETURN_IF_ERROR(Timing(t, head + w, number, &row.in_place));
    } else {
      row.in_place = first;
    }
    // algbw = size / time in nccl-tests; a row that disagrees is misread.
    for (NcclTestsTiming* tm : {&row.out_of_place, &row.in_place}) {
      if (tm->seconds <= 0 || tm->algbw < 1e9) continue;
      const double implied = static_cast<double>(row.bytes) / tm->seconds;
      if (std::abs(implied - tm->algbw) > 0.1 * tm->algbw) {
        return Error(number,
                     fmt::format("algbw {:.4g} GB/s does not match size / time = {:.4g} GB/s",
                                 tm->algbw * 1e-9, implied * 1e-9));
      }
      // Times of 8+ digits print as 1.2e+07: the bandwidth has more digits.
      tm->seconds = static_cast<double>(row.bytes) / tm->algbw;
    }
    table_->rows.push_back(std::move(row));
    return Status::Ok();
  }

  // The largest row's busbw / algbw (nccl-tests' bus factor), when precise.
  std::optional<double> ObservedBusFactor() const {
    const NcclTestsTiming* best = nullptr;
    for (const NcclTestsRow& r : table_->rows) {
      const NcclTestsTiming& tm = r.Timing();
      if (tm.algbw >= 10e9 && (best == nullptr || tm.algbw > best->algbw)) best = &tm;
    }
    if (best == nullptr) return std::nullopt;
    return best->busbw / best->algbw;
  }

  // The collective from the columns; an error says why it cannot be told.
  StatusOr<Collective> FromColumns(int64_t ranks) const {
    const NcclTestsRow& r = table_->rows.back();
    const int64_t elt = TypeSize(r.type);
    const bool whole = elt > 0 && r.count * elt == r.bytes;
    const bool per_rank = elt > 0 && r.count > 0 && r.count * elt < r.bytes;
    const std::optional<double> f = ObservedBusFactor();
    bool oop_checked = false, ip_checked = false, any_oop = false;
    for (const NcclTestsRow& row : table_->rows) {
      any_oop |= row.out_of_place.seconds > 0;
      oop_checked |= row.out_of_place.checked;
      ip_checked |= row.in_place.checked;
    }
    // sendrecv and alltoall validate out-of-place only.
    const bool oop_only_checked = any_oop && oop_checked && !ip_checked;
    const std::string hint = fmt::format(
        "cannot tell the collective of the table at line {} from its columns: name it "
        "(--nccl-tests all_reduce={})",
        table_->line, file_);
    if (r.root >= 0) {
      if (r.redop.empty() && whole) return Collective::kBroadcast;
      return Error(table_->line,
                   "a rooted test other than broadcast_perf (reduce, gather, "
                   "scatter): a collective the simulator does not model");
    }
    if (!r.redop.empty()) {
      if (per_rank) return Collective::kReduceScatter;
      if (!whole) return InvalidArgument("{}:{}", file_, hint);
      if (f && ranks >= 3) {
        if (std::abs(*f - 1) < 0.01) return Collective::kSend;
        if (std::abs(*f - BusFactor(Collective::kAllReduce, ranks)) < 0.01) {
          return Collective::kAllReduce;
        }
      }
      if (oop_only_checked) return Collective::kSend;
      if (oop_checked && ip_checked) return Collective::kAllReduce;
      return InvalidArgument("{}:{}", file_, hint);
    }
    if (per_rank) {
      if (oop_only_checked) return Collective::kAllToAll;
      if (oop_checked && ip_checked) return Collective::kAllGather;
      // Older alltoall_perf printed an empty redop (one field short).
      if (short_head_) return Collective::kAllToAll;
    }
    return InvalidArgument("{}:{}", file_, hint);
  }

  Status CloseTable() {
    if (!table_) return Status::Ok();
    Context context = context_;
    context_ = Context{};
    if (table_->rows.empty()) {  // a header whose run printed no rows
      table_.reset();
      return Status::Ok();
    }
    // Ranks: the "# Rank" lines (MPI gathers every process's), else nThread × nGpus.
    if (!context.ranks.empty()) {
      table_->ranks = *context.ranks.rbegin() + 1;
      table_->ranks_from = "the '# Rank' lines";
    } else if (context.per_process > 0) {
      table_->ranks = context.per_process;
      table_->ranks_from = "nThread x nGpus";
    } else {
      const int line = table_->line;
      table_.reset();
      return Error(line,
                   "no '#  Rank N …' lines and no '# nThread … nGpus …' line before the "
                   "table: the rank count is unknown");
    }
    if (table_->ranks < 2) {
      const int line = table_->line;
      table_.reset();
      return Error(line, "a run on one rank times no communication");
    }
    // The collective: the binary's name, else the user's, else the columns.
    std::optional<Collective> from_binary;
    if (!context.binary.empty()) {
      from_binary = ParseNcclTestsCollective(context.binary);
      if (!from_binary) {
        const int line = context.binary_line;
        const std::string name = context.binary;
        table_.reset();
        return Error(line, fmt::format("{}_perf: a test the simulator does not model (all_reduce, "
                                       "all_gather, reduce_scatter, alltoall, sendrecv, broadcast)",
                                       name));
      }
      if (named_ && *named_ != *from_binary) {
        const int line = context.binary_line;
        const std::string name = context.binary;
        table_.reset();
        return Error(line, fmt::format("the log ran {}_perf, not {} as named", name,
                                       NcclTestsName(*named_)));
      }
      table_->collective = *from_binary;
      table_->collective_from =
          fmt::format("the binary {}_perf (line {})", context.binary, context.binary_line);
    } else if (named_) {
      table_->collective = *named_;
      table_->collective_from = "named by the user";
    } else {
      StatusOr<Collective> c = FromColumns(table_->ranks);
      if (!c.ok()) {
        table_.reset();
        return c.status();
      }
      table_->collective = *c;
      table_->collective_from = "the columns";
    }
    // The bus factor nccl-tests printed must be this collective's over these ranks.
    if (std::optional<double> f = ObservedBusFactor()) {
      const double want = BusFactor(table_->collective, table_->ranks);
      if (std::abs(*f / want - 1) > 0.01) {
        const int line = table_->line;
        const std::string what = fmt::format(
            "busbw / algbw is {:.4g}, but {} over {} ranks (from {}) has a bus factor of {:.4g}",
            *f, NcclTestsName(table_->collective), table_->ranks, table_->ranks_from, want);
        table_.reset();
        return Error(line, what);
      }
    }
    tables_.push_back(std::move(*table_));
    table_.reset();
    return Status::Ok();
  }

  std::string file_;
  std::optional<Collective> named_;
  Context context_;
  std::optional<NcclTestsTable> table_;
  Layout layout_;
  bool short_head_ = false;
  std::vector<NcclTestsTable> tables_;
};

}  // namespace

std::string_view NcclTestsName(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllToAll:
      return "alltoall";
    case Collective::kSend:
    case Collective::kRecv:
      return "sendrecv";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kNone:
      break;
  }
  return "none";
}

std::optional<Collective> ParseNcclTestsCollective(std::string_view name) {
  if (name.size() > 5 && name.substr(name.size() - 5) == "_perf") name.remove_suffix(5);
  if (name == "sendrecv" || name == "send_recv") return Collective::kSend;
  if (name == "alltoall" || name == "all_to_all") return Collective::kAllToAll;
  if (name == "all_reduce" || name == "all_gather" || name == "reduce_scatter" ||
      name == "broadcast") {
    return ParseCollective(name);
  }
  return std::nullopt;
}

StatusOr<std::vector<NcclTestsTable>> ParseNcclTestsLog(std::string_view text,
                                                        const std::string& file,
                                                        std::optional<Collective> named) {
  Parser parser(file, named);
  int number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    RETURN_IF_ERROR(parser.Line(text.substr(start, end - start), number));
    start = end + 1;
  }
  return parser.Finish();
}

StatusOr<std::vector<NcclTestsTable>> ReadNcclTestsLog(const std::string& file,
                                                       std::optional<Collective> named) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return IoError("{}: cannot open the nccl-tests log", file);
  std::stringstream s;
  s << in.rdbuf();
  return ParseNcclTestsLog(s.str(), file, named);
}

}  // namespace shardscope::calibrate
