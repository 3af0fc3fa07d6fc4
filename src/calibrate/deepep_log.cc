#include "calibrate/deepep_log.h"

#include <fstream>
#include <regex>
#include <sstream>

namespace shardscope::calibrate {
namespace {

const std::regex& BestRe() {
  static const std::regex re(R"(\[tuning\] Best (dispatch|combine)(?: \((FP8|BF16)\))?:)");
  return re;
}
const std::regex& GbpsRe() {
  static const std::regex re(R"(([0-9]+(?:\.[0-9]*)?) GB/s \((RDMA|NVL)\))");
  return re;
}
const std::regex& TimeRe() {
  static const std::regex re(R"((?:^|[ ,])(?:avg_)?t[:=] ?([0-9]+(?:\.[0-9]*)?) us)");
  return re;
}
const std::regex& LowLatencyRe() {
  static const std::regex re(
      R"(\[rank ([0-9]+)\] Dispatch bandwidth: ([0-9]+(?:\.[0-9]*)?) GB/s, avg_t=([0-9]+(?:\.[0-9]*)?) us.*\| Combine bandwidth: ([0-9]+(?:\.[0-9]*)?) GB/s, avg_t=([0-9]+(?:\.[0-9]*)?) us)");
  return re;
}
const std::regex& ConfigPairRe() {
  static const std::regex re(R"(([a-z_]+)=([0-9]+))");
  return re;
}

}  // namespace

StatusOr<std::vector<DeepEpLog>> ParseDeepEpLog(std::string_view text, const std::string& file) {
  DeepEpLog normal, low;
  normal.file = low.file = file;
  low.low_latency = true;
  int64_t max_rank = -1;
  int number = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    std::string line(text.substr(start, end - start));
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto error = [&](std::string_view what) {
      return InvalidArgument("{}:{}: {}", file, number, what);
    };
    std::smatch m;
    if (line.find("[config]") != std::string::npos) {
      for (auto it = std::sregex_iterator(line.begin(), line.end(), ConfigPairRe());
           it != std::sregex_iterator(); ++it) {
        const std::string key = (*it)[1];
        const int64_t v = std::stoll((*it)[2]);
        if (key == "num_tokens") normal.tokens = v;
        if (key == "hidden") normal.hidden = v;
        if (key == "num_topk") normal.topk = v;
        if (key == "num_topk_groups") normal.topk_groups = v;
        if (key == "num_experts") normal.experts = v;
      }
      continue;
    }
    if (std::regex_search(line, m, BestRe())) {
      DeepEpFigure f;
      f.line = number;
      f.dispatch = m[1] == "dispatch";
      f.fp8 = m[2] == "FP8";
      if (f.dispatch && !m[2].matched)
        return error("a best dispatch line names no dtype (FP8/BF16)");
      const std::string rest = m.suffix();
      for (auto it = std::sregex_iterator(rest.begin(), rest.end(), GbpsRe());
           it != std::sregex_iterator(); ++it) {
        const double gb_s = std::stod((*it)[1]);
        ((*it)[2] == "RDMA" ? f.rdma_bandwidth : f.nvl_bandwidth) = gb_s * 1e9;
      }
      if (!(f.nvl_bandwidth > 0) && !(f.rdma_bandwidth > 0)) {
        return error("a best tuning line with no 'X GB/s (NVL)' or '(RDMA)' figure above 0");
      }
      std::smatch t;
      if (std::regex_search(rest, t, TimeRe())) f.seconds = std::stod(t[1]) * 1e-6;
      normal.figures.push_back(f);
      continue;
    }
    if (line.find("Dispatch bandwidth:") != std::string::npos &&
        line.find("[rank ") != std::string::npos) {
      if (!std::regex_search(line, m, LowLatencyRe())) {
        return error(
            "a low-latency line that is not '[rank R] Dispatch bandwidth: X GB/s, avg_t=T us | "
            "Combine bandwidth: X GB/s, avg_t=T us'");
      }
      const int64_t rank = std::stoll(m[1]);
      max_rank = std::max(max_rank, rank);
      for (int k = 0; k < 2; ++k) {
        DeepEpFigure f;
        f.line = number;
        f.rank = rank;
        f.dispatch = k == 0;
        f.fp8 = k == 0;  // the test's dispatch sends FP8 (its default)
        f.nvl_bandwidth = std::stod(m[2 + 2 * k]) * 1e9;
        f.seconds = std::stod(m[3 + 2 * k]) * 1e-6;
        if (!(f.nvl_bandwidth > 0) || !(f.seconds > 0)) {
          return error("a low-latency figure of 0 GB/s or 0 us");
        }
        low.figures.push_back(f);
      }
    }
  }
  low.ranks = max_rank + 1;
  std::vector<DeepEpLog> out;
  if (!normal.figures.empty()) out.push_back(std::move(normal));
  if (!low.figures.empty()) out.push_back(std::move(low));
  if (out.empty()) {
    return InvalidArgument(
        "{}: no DeepEP figure ('[tuning] Best dispatch …' or '[rank R] Dispatch bandwidth: …')",
        file);
  }
  return out;
}

StatusOr<std::vector<DeepEpLog>> ReadDeepEpLog(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return IoError("{}: cannot open the DeepEP log", file);
  std::stringstream s;
  s << in.rdbuf();
  return ParseDeepEpLog(s.str(), file);
}

}  // namespace shardscope::calibrate
