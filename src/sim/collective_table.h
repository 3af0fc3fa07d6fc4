// CollectiveTable: what `shardscope collective` prints and
// `shardscope.collective()` returns — a collective sweep in nccl-tests'
// columns (size, count, type, time, algbw, busbw; plus the algorithm,
// protocol and bounding link), or a MoE dispatch/combine in DeepEP's (time,
// RDMA and NVLink bandwidth), with a title and the columns' definitions.
// Rendered as Markdown, JSON (numbers in SI units) or CSV.
#ifndef SHARDSCOPE_SIM_COLLECTIVE_TABLE_H_
#define SHARDSCOPE_SIM_COLLECTIVE_TABLE_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "core/status.h"
#include "sim/calibration.h"
#include "sim/collective_sweep.h"
#include "sim/moe_exchange.h"

namespace shardscope::sim {

struct CollectiveTable {
  std::string title;               // what was timed, on what
  std::vector<std::string> notes;  // the columns' definitions
  std::vector<std::string> columns;
  // Per column: the Markdown cell's printf-style precision, or -1 for text
  // and integers as they are.
  std::vector<int> precision;
  std::vector<nlohmann::json> rows;  // arrays, one value per column
};

// The sweep of `options` on `cluster` with the calibration's network terms;
// `type` names the element type of the count column.
StatusOr<CollectiveTable> SweepTable(const ClusterSpec& cluster, const Calibration& calibration,
                                     const SweepOptions& options, const std::string& type);
// One dispatch or combine.
StatusOr<CollectiveTable> ExchangeTable(const ClusterSpec& cluster, const Calibration& calibration,
                                        const ExchangeOptions& options);

std::string CollectiveTableMarkdown(const CollectiveTable& table);
std::string CollectiveTableCsv(const CollectiveTable& table);
// {"title", "notes", "columns", "rows": [{column: value}]}.
nlohmann::json CollectiveTableJson(const CollectiveTable& table);

}  // namespace shardscope::sim

#endif  // SHARDSCOPE_SIM_COLLECTIVE_TABLE_H_
