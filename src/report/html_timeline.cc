#include "report/html_timeline.h"

#include <fmt/format.h>

#include <algorithm>

#include "trace/trace_reader.h"

namespace shardscope::report {
void TimelineSink::OnOp(const trace::OpEvent& op) {
  int64_t ts = op.ts_ns, end = op.ts_ns + std::max<int64_t>(op.dur_ns, 0);
  if (!started_) begin_ = ts, started_ = true;
  ts = std::max(ts, begin_);
  end = std::max(end, ts);
  max_end_ = std::max(max_end_, end);
  while (end > begin_ + width_ * static_cast<int64_t>(kFineBins)) Widen();
  auto& bins = busy_[op.rank];
  if (bins.empty()) bins.resize(kFineBins);
  const int cat = static_cast<int>(op.category);
  for (int64_t t = ts; t < end;) {
    size_t b = static_cast<size_t>((t - begin_) / width_);
    int64_t bin_end = begin_ + static_cast<int64_t>(b + 1) * width_;
    int64_t stop = std::min(end, bin_end);
    bins[b][cat] += static_cast<double>(stop - t);
    t = stop;
  }
}

void TimelineSink::OnSpan(const trace::SpanEvent& span) {
  if (marks_rank_ < 0) marks_rank_ = span.rank;  // one rank's marks stand for the run
  if (span.rank != marks_rank_) return;
  if (span.kind == trace::SpanKind::kPhase || span.kind == trace::SpanKind::kStep) {
    std::string name =
        span.kind == trace::SpanKind::kStep ? fmt::format("decode step {}", span.step) : span.name;
    marks_.emplace_back(span.ts_ns, name);
    if (!started_) begin_ = span.ts_ns, started_ = true;
  }
}

Timeline TimelineSink::Finish(int bins) const {
  bins = std::max(bins, 1);
  Timeline t;
  if (busy_.empty()) return t;
  t.begin_ns = begin_;
  t.end_ns = std::max(max_end_, begin_ + 1);
  const double out_width = static_cast<double>(t.end_ns - t.begin_ns) / bins;
  for (const auto& [rank, fine] : busy_) {
    std::vector<std::array<float, 3>> out(static_cast<size_t>(bins), {0, 0, 0});
    for (size_t b = 0; b < fine.size(); ++b) {
      double mid = static_cast<double>(b * width_) + 0.5 * static_cast<double>(width_);
      size_t o = std::min(static_cast<size_t>(mid / out_width), static_cast<size_t>(bins - 1));
      for (int c = 0; c < 3; ++c) out[o][c] += static_cast<float>(fine[b][c] / out_width);
    }
    t.busy[rank] = std::move(out);
  }
  std::vector<std::pair<int64_t, std::string>> marks = marks_;
  std::sort(marks.begin(), marks.end());
  marks.erase(std::unique(marks.begin(), marks.end()), marks.end());
  t.marks = std::move(marks);
  return t;
}

void TimelineSink::Widen() {
  for (auto& [rank, bins] : busy_) {
    for (size_t b = 0; b < kFineBins / 2; ++b) {
      for (int c = 0; c < 3; ++c) bins[b][c] = bins[2 * b][c] + bins[2 * b + 1][c];
    }
    std::fill(bins.begin() + kFineBins / 2, bins.end(), std::array<double, 3>{0, 0, 0});
  }
  width_ *= 2;
}

StatusOr<Timeline> ReadTimeline(const std::string& path, int bins) {
  TimelineSink sink;
  RETURN_IF_ERROR(trace::ReadTrace(path, &sink).status());
  return sink.Finish(bins);
}

}  // namespace shardscope::report
