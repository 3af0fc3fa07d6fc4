// The Kineto tokenizer: turns the raw JSON of each traceEvents element (from
// trace::EventScanner) into the typed events of kineto_events.h, keeping only
// what the import needs: GPU activities, the runtime launches and host
// collective calls that join kernels to their args, step annotations and
// thread names. Malformed events are counted in ReadStats.skipped (with the
// byte offset of the first few) and skipped; well-formed events the import
// does not use are counted by cat/ph in KinetoEvents::ignored. Not thread-safe.
#ifndef SHARDSCOPE_IMPORTERS_KINETO_TOKENIZER_H_
#define SHARDSCOPE_IMPORTERS_KINETO_TOKENIZER_H_

#include <memory>

#include "importers/kineto_events.h"
#include "trace/event_parser.h"
#include "trace/read_stats.h"

namespace shardscope::importers::kineto {

// A parser that appends every event it is given to `*events` and counts it in
// `*stats` (events, skipped, examples). Both must outlive it.
std::unique_ptr<trace::EventParser> MakeKinetoTokenizer(trace::ReadStats* stats,
                                                        KinetoEvents* events);

}  // namespace shardscope::importers::kineto

#endif  // SHARDSCOPE_IMPORTERS_KINETO_TOKENIZER_H_
