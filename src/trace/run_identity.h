// RunIdentity: which experiment a recorded run was and what it ran on — the
// experiment (and sweep) name, hardware, dtype, backend, nodes and ranks — read
// from the run's metadata. Two runs in one store folder (same model, strategy,
// batch and sequence length) differ by these. Value type; pure functions.
#ifndef SHARDSCOPE_TRACE_RUN_IDENTITY_H_
#define SHARDSCOPE_TRACE_RUN_IDENTITY_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace shardscope::trace {

struct RunIdentity {
  std::string experiment;        // "tp4_deepseek_v2_lite"
  std::string sweep;             // the sweep the experiment expands, if any
  std::string hardware;          // the cluster's name, "h100-sxm"
  std::string dtype;             // the workload dtype, "bf16"
  std::string backend;           // "sim", "cpu"
  std::optional<int64_t> nodes;  // the nodes the ranks occupy, not the cluster's size
  std::optional<int64_t> ranks;

  // No field known: a foreign trace, or metadata without an experiment.
  bool empty() const;
};

// Which runs to keep; an empty field matches anything.
struct IdentityFilter {
  std::string experiment;  // the experiment's name or its sweep's
  std::string hardware;
  std::string dtype;
  std::string backend;

  bool empty() const;
  bool Matches(const RunIdentity& identity) const;
};

// Reads `metadata` (as the store and the run recorder write it, docs/trace_format.md):
// each field from "run" (written by the store since issue 16) or else from where the
// experiment's JSON keeps it: experiment.name / .sweep (kept only when it differs from
// the name), experiment.cluster.name, experiment.workload.dtype, backend,
// plan.world_size; nodes from plan.rank_to_device and cluster.devices_per_node.
// Missing fields stay empty. InvalidArgument naming `source` and the field when a field has
// the wrong type.
StatusOr<RunIdentity> RunIdentityFromMetadata(const nlohmann::json& metadata,
                                              std::string_view source);

// The identity in a metadata file. An empty file is a run whose metadata is still
// being written (the store reserves the name first): an empty identity. Errors name
// the file: unreadable, not JSON, not an object, a field of the wrong type.
StatusOr<RunIdentity> ReadRunIdentity(const std::string& metadata_path);

// {"experiment", "sweep", "hardware", "dtype", "backend", "nodes", "ranks"}: the
// known fields only, in that order.
nlohmann::ordered_json RunIdentityJson(const RunIdentity& identity);

// "1 node · 2 ranks", "" when neither is known.
std::string NodesAndRanks(const RunIdentity& identity);

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_RUN_IDENTITY_H_
