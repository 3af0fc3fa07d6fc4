// TraceStore: the on-disk layout of recorded traces, exactly as the seeds
// describe it:
//   {root}/{model}/{strategy}/batch_{B}_seq_{S}/trace_{timestamp}.trace
//   {root}/{model}/{strategy}/batch_{B}_seq_{S}/metadata_{timestamp}.json
// A gzip-compressed trace is trace_{timestamp}.trace.gz.
// Timestamps are UTC "YYYYMMDDTHHMMSS.ffffff" (plus "_N" on a collision); the
// metadata file is created with O_EXCL, so two writers never share a timestamp
// and nothing is overwritten. Thread-compatible; safe across processes.
#ifndef SHARDSCOPE_TRACE_TRACE_STORE_H_
#define SHARDSCOPE_TRACE_TRACE_STORE_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/trace_compression.h"
#include "trace/run_identity.h"
#include "trace/trace_writer.h"

namespace shardscope::trace {

// Which run a trace belongs to: the store's directory levels.
struct RunKey {
  std::string model;     // "deepseek-v2-lite"
  std::string strategy;  // "tensor", "tp8_pp2"
  int64_t batch_size = 1;
  int64_t sequence_length = 1;
  // A served run: its workload ("served_poisson-40rps_n120_3fa2b1c9"), the run
  // directory's name in place of batch_{B}_seq_{S} (batch and sequence are 0
  // when listed). Empty: a fixed batch.
  std::string workload;
};

struct StoredTrace {
  RunKey key;
  std::string timestamp;
  std::string trace_path;     // empty when only the metadata exists
  std::string metadata_path;  // empty when only the trace exists
  int64_t trace_bytes = 0;
  // From the metadata file (empty without one, or while it is being written).
  RunIdentity identity;
  // Both files present: the run finished writing its trace.
  bool complete() const { return !trace_path.empty() && !metadata_path.empty(); }
};

struct ListFilter {
  std::string model;             // empty: any
  std::string strategy;          // empty: any
  IdentityFilter identity = {};  // experiment, hardware, dtype, backend; empty: any
};

class TraceStore {
 public:
  explicit TraceStore(std::string root) : root_(std::move(root)) {}

  // Picks a fresh timestamp in the run's directory (created as needed), writes
  // metadata_{ts}.json — `metadata` (the resolved experiment, plan, cluster,
  // backend) plus tool version, units and the run key — and returns a writer
  // whose Close() publishes trace_{ts}.trace (.trace.gz with gzip). `*stored`
  // receives the paths.
  StatusOr<std::unique_ptr<TraceWriter>> Create(
      const RunKey& key, const nlohmann::json& metadata, StoredTrace* stored = nullptr,
      TraceCompression compression = TraceCompression::kNone) const;

  // InvalidArgument when the root is empty, or exists and is not a directory (a missing root
  // is created by Create). Callers check before long runs; Create checks too.
  Status CheckRoot() const;

  // Every trace under the root matching `filter`, sorted by model, strategy,
  // batch, sequence and timestamp, each with the identity its metadata file
  // records. A missing root is an empty store. Errors: a metadata file that
  // cannot be read or parsed, or whose identity fields have the wrong type
  // (ReadRunIdentity), naming the file.
  StatusOr<std::vector<StoredTrace>> List(const ListFilter& filter = {}) const;

  // {root}/{model}/{strategy}/batch_{B}_seq_{S} ({workload} for a served run),
  // path components sanitised.
  std::string RunDir(const RunKey& key) const;
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

// `metadata` with the fields every stored trace carries: "shardscope"
// (version, trace format version), "units" and "run" (the RunKey and, where
// `metadata` knows them, the RunIdentity's fields: experiment, sweep, hardware,
// dtype, backend, nodes, ranks).
nlohmann::json StoreMetadata(const nlohmann::json& metadata, const RunKey& key,
                             const std::string& timestamp);
// The metadata file beside a store trace (trace_{ts}.trace or .trace.gz →
// metadata_{ts}.json in the same folder); empty when `trace_path` is not named so.
std::string StoreMetadataPathFor(const std::string& trace_path);
// The current UTC time as "YYYYMMDDTHHMMSS.ffffff".
std::string UtcTimestamp();
// A directory name made of [A-Za-z0-9._+-]; anything else becomes '_'.
std::string SanitizePathComponent(std::string_view s);

}  // namespace shardscope::trace

#endif  // SHARDSCOPE_TRACE_TRACE_STORE_H_
