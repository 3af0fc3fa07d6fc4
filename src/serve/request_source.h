// The requests of a served workload: arrival times from the arrival process
// (Poisson, gamma bursts, a request file) and lengths from their distributions,
// drawn from the experiment's seed. A closed loop's requests get their lengths
// here and their arrival times from the simulator (when a slot frees).
// Pure functions; the same spec and seed give the same requests.
#ifndef SHARDSCOPE_SERVE_REQUEST_SOURCE_H_
#define SHARDSCOPE_SERVE_REQUEST_SOURCE_H_

#include <cstdint>
#include <random>
#include <vector>

#include "config/serving.h"

namespace shardscope::serve {

// One draw from `dist`, clamped to [dist.min, dist.max].
int64_t DrawLength(const LengthDist& dist, std::mt19937_64& rng);

// The requests in arrival order. Open loop: arrivals until `requests` are
// drawn or `duration` has passed (whichever comes first when both are set);
// a file: its requests (cut the same way). Closed loop: `requests` requests,
// all with arrival 0 (the simulator sets them).
std::vector<RequestSpec> MakeRequests(const ServingSpec& spec, uint64_t seed);

}  // namespace shardscope::serve

#endif  // SHARDSCOPE_SERVE_REQUEST_SOURCE_H_
