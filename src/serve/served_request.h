// ServedRequest: one request as the serving simulator follows it — its
// lengths, where the scheduler has got with it (tokens in the KV cache, blocks
// held, tokens generated) and when each milestone happened. Plain value type.
#ifndef SHARDSCOPE_SERVE_SERVED_REQUEST_H_
#define SHARDSCOPE_SERVE_SERVED_REQUEST_H_

#include <cstdint>

namespace shardscope::serve {

struct ServedRequest {
  int64_t id = 0;
  double arrival = 0;  // seconds
  int64_t prompt = 1, output = 1;
  int64_t replica = -1;      // the data-parallel replica, or the disaggregated instance
  int64_t engine = -1;       // its scheduler: the replica's pipeline virtual engine
  bool measured = true;      // false: a warm-up request, left out of the statistics
  bool rejected = false;     // could never fit in the replica's KV cache
  bool decode_only = false;  // arrives with its prompt cached: no prefill, no TTFT
  int64_t cached = 0;        // prompt tokens found in the prefix cache (not prefilled)

  // Scheduler state. The request's next token follows when `computed` reaches
  // `target` (the prompt, or prompt + generated tokens when recomputed after a
  // preemption); from then on each decode step adds one token.
  int64_t computed = 0;  // tokens in the KV cache
  int64_t target = 0;
  int64_t generated = 0;
  int64_t blocks = 0;    // KV blocks held
  int64_t reserved = 0;  // KV blocks promised to it (guaranteed-no-evict admission)
  // Speculative decoding: accepted tokens owed but not yet emitted (< 1).
  double speculative_credit = 0;
  int64_t preemptions = 0;

  // Milestones (seconds; −1: not yet).
  double first_scheduled = -1;
  double first_token = -1;
  double last_token = -1;
  double finish = -1;
  double kv_arrival = -1;  // disaggregated: its KV cache reached the decode instance

  bool prefilling() const { return computed < target; }
  bool done() const { return generated >= output; }
};

}  // namespace shardscope::serve

#endif  // SHARDSCOPE_SERVE_SERVED_REQUEST_H_
