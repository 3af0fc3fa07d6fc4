// ReadStats: what a trace reader read, skipped (malformed events, by reason),
// ignored (well-formed events ShardScope does not analyse) and kept with
// caveats (notes), counted by the stats of trace/read_stat.h. Value type.
#ifndef SHARDSCOPE_TRACE_READ_STATS_H_
#define SHARDSCOPE_TRACE_READ_STATS_H_

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "trace/read_stat.h"

namespace shardscope::trace {

// Where a skipped event is, for the examples: "byte 12", "event #3", "line 7".
struct EventPlace {
  enum Unit { kByte, kEvent, kLine } unit;
  int64_t n;
};

// Why an event is skipped, while a parser decides: a stat and the detail for its text.
struct SkipReason {
  Stat stat = Stat::kInvalidJson;
  std::string detail;
  // Sets the reason; false, for `return reason.Set(…)` in a parser that fails.
  bool Set(Stat s, std::string_view d = {}) {
    stat = s;
    detail.assign(d);
    return false;
  }
};

struct ReadStats {
  int64_t bytes = 0;   // uncompressed bytes scanned
  int64_t events = 0;  // elements of traceEvents
  int64_t ops = 0, spans = 0, counters = 0, names = 0;
  // Each stat's count, indexed by Stat.
  std::array<int64_t, kNumStats> counts{};
  // The same counts by their summary text (a stat's text with its details), by
  // severity. Malformed events are skipped.
  std::map<std::string, int64_t> skipped;
  // Well-formed events ShardScope does not use (instant events, flows, …).
  std::map<std::string, int64_t> ignored;
  // Events kept with part of their data unknown (importers: an unknown dtype
  // leaves the bytes unknown, …).
  std::map<std::string, int64_t> notes;
  // The first few malformed events, with where they are.
  std::vector<std::string> examples;
  bool array_form = false;
  bool unclosed_array = false;  // array form without its closing ']' (allowed)

  static constexpr size_t kMaxExamples = 5;

  // Counts `n` events of `stat`; `detail` fills the "{}" of its text.
  template <typename... Detail>
  void CountN(Stat stat, int64_t n, const Detail&... detail) {
    Add(stat, fmt::format(fmt::runtime(InfoOf(stat).text), detail...), n);
  }
  template <typename... Detail>
  void Count(Stat stat, const Detail&... detail) {
    CountN(stat, 1, detail...);
  }
  // Counts one malformed event and keeps it as an example ("`at`: text")
  // while there are fewer than kMaxExamples.
  template <typename... Detail>
  void Skip(Stat stat, EventPlace at, const Detail&... detail) {
    AddSkipped(stat, at, fmt::format(fmt::runtime(InfoOf(stat).text), detail...));
  }
  void Skip(const SkipReason& reason, EventPlace at) { Skip(reason.stat, at, reason.detail); }
  int64_t count(Stat stat) const { return counts[static_cast<size_t>(stat)]; }

  int64_t skipped_total() const;
  // One paragraph for the user: counts of what was read, skipped and ignored.
  std::string Summary() const;

 private:
  void Add(Stat stat, std::string text, int64_t n);
  void AddSkipped(Stat stat, EventPlace at, std::string text);
};

// Adds the counts of `from` to *into (the files of a set, the parts of a file
// read in parallel); the examples stay the first five.
void MergeReadStats(const ReadStats& from, ReadStats* into);

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_READ_STATS_H_
