// A multi-rank trace set: several trace files that are the ranks of one run
// (e.g. one Kineto file per rank), imported into one sink as one run.
//
// * Each rank comes from one file: a rank in two files is an error naming both.
// * Ranks the declared world size implies but no file holds are reported
//   (warnings, metadata); the events that are there are delivered as usual.
// * Clocks: taken as recorded by default (Kineto writes host wall-clock time,
//   made absolute with baseTimeNanoseconds, so ranks of one host share a clock
//   and NTP/PTP keeps hosts close). The spread of the end of the first
//   collective every rank ran is measured either way, on all-reduce,
//   all-gather, reduce-scatter and barrier only (their members finish together
//   by construction; an all-to-all's need not): the ends of one such call agree
//   within microseconds on real hardware, so a larger spread means skewed
//   clocks. kFirstCollectiveEnd shifts each rank so those ends coincide with the
//   lowest rank's, and is an error when no call can be paired.
// * Groups: collectives no file gives a group get the whole world when the set
//   holds every rank and all ran the same calls (InferWorldGroups in the .cc).
// Not thread-safe.
#ifndef SHARDSCOPE_IMPORTERS_TRACE_SET_H_
#define SHARDSCOPE_IMPORTERS_TRACE_SET_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "importers/format_detect.h"
#include "importers/importer.h"
#include "trace/read_stats.h"
#include "trace/trace_event.h"

namespace shardscope::importers {

enum class ClockAlignment { kAsRecorded, kFirstCollectiveEnd };
std::string_view ClockAlignmentName(ClockAlignment a);  // "as-recorded", "collective-end"
StatusOr<ClockAlignment> ParseClockAlignment(std::string_view name);

// A spread above this at the first common collective's end is reported as clock skew.
inline constexpr int64_t kClockSkewWarningNs = 100'000;

struct TraceSetOptions {
  std::optional<TraceFormat> format;  // forced for every file; nullopt: detect each
  ClockAlignment alignment = ClockAlignment::kAsRecorded;
  // The files' probes when the caller has them (GroupTraceFiles), one per path
  // in order: each file's head is then read and its format detected once. Empty:
  // probed here.
  std::vector<TraceProbe> probes;
};

struct TraceSetResult {
  std::vector<std::string> paths;
  std::vector<ImportResult> files;  // one per path, in order
  trace::ReadStats stats;           // summed over the files
  std::vector<int32_t> ranks;       // ranks found, ascending
  std::optional<int32_t> world_size;
  std::vector<int32_t> missing_ranks;  // 0 … world size − 1 without a file
  // max − min over ranks of the end of the first collective every rank ran,
  // as recorded; nullopt when there is none (then `alignment_note` says why).
  std::optional<int64_t> collective_end_spread_ns;
  std::string alignment_note;
  std::map<int32_t, int64_t> clock_shift_ns;  // added to each rank's times (aligned only)
  std::vector<std::string> warnings;          // for the user: missing ranks, skewed clocks
  nlohmann::json metadata;                    // what the sink received as metadata
};

// Imports every file of `paths` into `sink` as one run. Several XLA profiles
// are hosts: each file's device ordinals are offset by the ranks of the files
// before it (in the order given), and the metadata says each file's offset. The sink receives one
// combined metadata object (each file's under "trace_set.files", plus the
// set's ranks, missing ranks and clocks) after all other events. Errors: any
// file's import error, a rank held by two files, files that disagree on the
// world size (each names the files); kFirstCollectiveEnd over two or more ranks
// with no collective call to pair (InvalidArgument naming the set and the reason;
// nothing delivered).
StatusOr<TraceSetResult> ImportTraceSet(const std::vector<std::string>& paths,
                                        const TraceSetOptions& options, trace::TraceSink* sink);

// Splits trace files into runs. ShardScope traces are one run each; foreign
// files that declare a rank and the same world size (> 1), in the same
// format, form one set; XLA profiles (XSpace, trace-viewer JSON) of one format
// in one directory form one set, a file per host (ImportTraceSet numbers host
// k's devices after host k − 1's); any other foreign file is a run of its own.
// `probes`, when not null: each run's files' probes, in the same order, to pass on.
StatusOr<std::vector<std::vector<std::string>>> GroupTraceFiles(
    const std::vector<std::string>& files, std::optional<TraceFormat> forced,
    std::vector<std::vector<TraceProbe>>* probes = nullptr);

// Adds the counts of `from` to `into` (byte counts, events, reasons, notes).
using trace::MergeReadStats;

}  // namespace shardscope::importers

#endif  // SHARDSCOPE_IMPORTERS_TRACE_SET_H_
