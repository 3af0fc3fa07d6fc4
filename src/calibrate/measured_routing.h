// MeasuredRouting: how a measured MoE run's router really split its tokens, per
// layer, as routing weights the simulator takes (RoutingSpec::layer_weights),
// so `shardscope validate` simulates the run with its own imbalance instead of
// the experiment's assumed distribution. From each layer's dispatch all-to-all
// (the bytes every rank sent each EP rank: what the router chose, summed over
// senders, phases and steps), spread evenly over the EP rank's experts; without
// all-to-alls (ep = 1), from the experts' recorded token counts. Value type.
#ifndef SHARDSCOPE_CALIBRATE_MEASURED_ROUTING_H_
#define SHARDSCOPE_CALIBRATE_MEASURED_ROUTING_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/experiment.h"
#include "core/status.h"

namespace shardscope::calibrate {

struct MeasuredRouting {
  std::map<int64_t, std::vector<double>> layer_weights;  // model layer → weight per expert
  std::string source;  // "dispatch all-to-all", "expert token counts"; empty: none found
  // Mean over layers of the busiest EP rank's share ÷ the mean share (1: even).
  double imbalance = 1;
};

// Reads `trace` (any importer's format). No layer found is not an error (the
// result is empty); a missing or malformed file is, and so is a plan of
// `experiment` that cannot be placed.
StatusOr<MeasuredRouting> ReadMeasuredRouting(const std::string& trace,
                                              const Experiment& experiment);

// `experiment` routed by `routing` (kind fixed, per-layer weights); unchanged
// when `routing` has no layer.
Experiment WithMeasuredRouting(Experiment experiment, const MeasuredRouting& routing);

}  // namespace shardscope::calibrate

#endif  // SHARDSCOPE_CALIBRATE_MEASURED_ROUTING_H_
