// ReadStats: what the trace reader read, skipped (malformed events, by reason),
// ignored (well-formed events ShardScope does not analyse) and kept with
// caveats (notes). Value type.
#ifndef SHARDSCOPE_TRACE_READ_STATS_H_
#define SHARDSCOPE_TRACE_READ_STATS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace shardscope::trace {

struct ReadStats {
  int64_t bytes = 0;   // uncompressed bytes scanned
  int64_t events = 0;  // elements of traceEvents
  int64_t ops = 0, spans = 0, counters = 0, names = 0;
  // Malformed events: reason → count. They are skipped.
  std::map<std::string, int64_t> skipped;
  // Well-formed events ShardScope does not use (instant events, flows, …): ph → count.
  std::map<std::string, int64_t> ignored;
  // Events kept with part of their data unknown (importers: an unknown dtype
  // leaves the bytes unknown, …): reason → count.
  std::map<std::string, int64_t> notes;
  // The first few malformed events, with their byte offsets.
  std::vector<std::string> examples;
  bool array_form = false;
  bool unclosed_array = false;  // array form without its closing ']' (allowed)

  int64_t skipped_total() const;
  // One paragraph for the user: counts of what was read, skipped and ignored.
  std::string Summary() const;
};

// Adds the counts of `from` to *into (the files of a set, the parts of a file
// read in parallel); the examples stay the first five.
void MergeReadStats(const ReadStats& from, ReadStats* into);

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_READ_STATS_H_
