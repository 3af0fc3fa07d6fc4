#include "trace/read_stats.h"

#include <fmt/format.h>

#include "core/units.h"

namespace shardscope::trace {

void ReadStats::Add(Stat stat, std::string text, int64_t n) {
  counts[static_cast<size_t>(stat)] += n;
  switch (InfoOf(stat).severity) {
    case Severity::kSkipped:
      skipped[std::move(text)] += n;
      break;
    case Severity::kIgnored:
      ignored[std::move(text)] += n;
      break;
    case Severity::kNote:
      notes[std::move(text)] += n;
      break;
  }
}

void ReadStats::AddSkipped(Stat stat, EventPlace at, std::string text) {
  if (examples.size() < kMaxExamples) {
    constexpr std::string_view kUnits[] = {"byte ", "event #", "line "};
    examples.push_back(fmt::format("{}{}: {}", kUnits[at.unit], at.n, text));
  }
  Add(stat, std::move(text), 1);
}

void MergeReadStats(const ReadStats& from, ReadStats* into) {
  into->bytes += from.bytes;
  into->events += from.events;
  into->ops += from.ops;
  into->spans += from.spans;
  into->counters += from.counters;
  into->names += from.names;
  for (size_t i = 0; i < kNumStats; ++i) into->counts[i] += from.counts[i];
  for (const auto& [k, v] : from.skipped) into->skipped[k] += v;
  for (const auto& [k, v] : from.ignored) into->ignored[k] += v;
  for (const auto& [k, v] : from.notes) into->notes[k] += v;
  for (const std::string& e : from.examples) {
    if (into->examples.size() < ReadStats::kMaxExamples) into->examples.push_back(e);
  }
  into->array_form = into->array_form || from.array_form;
  into->unclosed_array = into->unclosed_array || from.unclosed_array;
}

int64_t ReadStats::skipped_total() const {
  int64_t n = 0;
  for (const auto& [reason, count] : skipped) n += count;
  return n;
}

std::string ReadStats::Summary() const {
  std::string s = fmt::format("read {} events ({} ops, {} spans, {} counters, {} names) from {}",
                              events, ops, spans, counters, names, FormatBytes(double(bytes)));
  if (!skipped.empty()) {
    s += fmt::format("; skipped {} malformed:", skipped_total());
    bool first = true;
    for (const auto& [reason, count] : skipped) {
      s += fmt::format("{} {} × {}", first ? "" : ",", count, reason);
      first = false;
    }
    if (!examples.empty()) s += fmt::format(" (first at {})", examples.front());
  }
  if (!ignored.empty()) {
    int64_t n = 0;
    for (const auto& [kind, count] : ignored) n += count;
    s += fmt::format("; ignored {} not analysed:", n);
    bool first = true;
    for (const auto& [kind, count] : ignored) {
      s += fmt::format("{} {} × {}", first ? "" : ",", count, kind);
      first = false;
    }
  }
  if (!notes.empty()) {
    s += "; kept with caveats:";
    bool first = true;
    for (const auto& [what, count] : notes) {
      s += fmt::format("{} {} × {}", first ? "" : ",", count, what);
      first = false;
    }
  }
  if (unclosed_array) s += "; the event array has no closing ']' (allowed by the format)";
  return s;
}

}  // namespace shardscope::trace
