// The "args" object of a Kineto event: the ids that join GPU ops to their
// launches (correlation, External id), a metadata event's name, and the
// collective args PyTorch writes on record_param_comms and NCCL kernels
// (CommArgs). Stateless; part of the tokenizer (kineto_tokenizer.h).
#ifndef SHARDSCOPE_IMPORTERS_KINETO_ARGS_H_
#define SHARDSCOPE_IMPORTERS_KINETO_ARGS_H_

#include <simdjson.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "importers/kineto_events.h"
#include "trace/read_stats.h"

namespace shardscope::importers::kineto {

// True when the raw key `k` (just past its opening quote) is exactly `lit`.
// Reads at most sizeof(lit) bytes, which the event's padding makes safe.
template <size_t N>
inline bool KeyIs(const char* k, const char (&lit)[N]) {
  return std::memcmp(k, lit, N - 1) == 0 && k[N - 1] == '"';
}

// What args says besides the collective args.
struct EventArgs {
  int64_t correlation = -1, external_id = -1;
  std::string_view meta_name;  // args.name of a metadata event (into the parser's buffers)
};

// Reads the args object `value` into *event and *comm (fields it lacks are left
// as they are). `is_meta`: a metadata event, whose "name" is read. `no_escapes`:
// the caller knows the event has no backslash. False, with *error saying why
// (args_not_object, bad_arg_value "Rank", …), when it is malformed.
bool ParseEventArgs(simdjson::ondemand::value& value, bool is_meta, bool no_escapes,
                    EventArgs* event, CommArgs* comm, trace::SkipReason* error);

}  // namespace shardscope::importers::kineto

#endif  // SHARDSCOPE_IMPORTERS_KINETO_ARGS_H_
