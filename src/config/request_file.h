// Request files of a served workload: one request per line with its arrival
// time, prompt tokens and output tokens. Two layouts:
//   CSV with a header naming the columns — `arrival_time_s,prompt_tokens,
//   output_tokens` (any order, extra columns ignored), or the public Azure LLM
//   inference trace's `TIMESTAMP,ContextTokens,GeneratedTokens` (TIMESTAMP a
//   date-time such as `2023-11-16 18:15:46.6805900`, or seconds);
//   JSONL: one object per line with the same keys.
// Arrival times are taken relative to the first request. Pure functions.
#ifndef SHARDSCOPE_CONFIG_REQUEST_FILE_H_
#define SHARDSCOPE_CONFIG_REQUEST_FILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/serving.h"
#include "core/status.h"

namespace shardscope {

// Parses the text of a request file. `name` names it in errors, which say the
// line and the field: a missing column, a value that is not a number, a
// negative time or length, times out of order, or prompt + output tokens over
// `max_context` (0: no limit). Blank lines and lines starting with '#' are skipped.
StatusOr<std::vector<RequestSpec>> ParseRequestFile(std::string_view text, const std::string& name,
                                                    int64_t max_context);

// Reads and parses the file at `path`.
StatusOr<std::vector<RequestSpec>> ReadRequestFile(const std::string& path, int64_t max_context);

// Seconds since 1970-01-01 of "YYYY-MM-DD HH:MM:SS[.fraction]" (or 'T' between
// date and time); fails on anything else.
StatusOr<double> ParseDateTimeSeconds(std::string_view text);

}  // namespace shardscope

#endif  // SHARDSCOPE_CONFIG_REQUEST_FILE_H_
