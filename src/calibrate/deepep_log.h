// DeepEpLog: reads the output of DeepEP's V1 kernel tests (deepseek-ai/DeepEP
// tests/test_intranode.py, test_internode.py, test_low_latency.py): the
// normal kernels' best tuning lines ("[tuning] Best dispatch (FP8): SMs …,
// NVL chunk …[, RDMA chunk …]: X GB/s (RDMA), Y GB/s (NVL)[, t: Z us]", and
// "Best combine"), their "[config] num_tokens=…, hidden=…" line, and the
// low-latency kernels' per-rank lines ("[rank R] Dispatch bandwidth: X GB/s,
// avg_t=T us | Combine bandwidth: …"). Bandwidths are DeepEP's: the bytes
// the test counts over the kernel's time (docs/calibration.md). Other lines
// are skipped; a line that starts one of these but does not parse is an
// error naming the file and line. Pure functions.
#ifndef SHARDSCOPE_CALIBRATE_DEEPEP_LOG_H_
#define SHARDSCOPE_CALIBRATE_DEEPEP_LOG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace shardscope::calibrate {

struct DeepEpFigure {
  bool dispatch = true;       // false: combine
  bool fp8 = false;           // a dispatch of FP8 tokens (else BF16)
  double nvl_bandwidth = 0;   // bytes/s, DeepEP's NVL figure; 0: not printed
  double rdma_bandwidth = 0;  // bytes/s, DeepEP's RDMA figure; 0: not printed
  double seconds = 0;         // the kernel's time; 0: not printed
  int64_t rank = -1;          // low-latency: the printing rank
  int line = 0;
};

struct DeepEpLog {
  std::string file;
  bool low_latency = false;  // the low-latency kernels' test; else the normal kernels'
  // The low-latency test's ranks (its "[rank R]" lines); 0: not in the log
  // (the normal kernels' tests print only from local rank 0).
  int64_t ranks = 0;
  // The normal tests' "[config]" line; 0: not printed.
  int64_t tokens = 0, hidden = 0, topk = 0, topk_groups = 0, experts = 0;
  std::vector<DeepEpFigure> figures;  // normal: the Best lines; low-latency: per rank
};

// Parses `text`, read from `file`: one entry per kernel family found (a log
// of the normal test that also ran the low-latency one gives two). No figure
// at all is an error.
StatusOr<std::vector<DeepEpLog>> ParseDeepEpLog(std::string_view text, const std::string& file);
StatusOr<std::vector<DeepEpLog>> ReadDeepEpLog(const std::string& file);

}  // namespace shardscope::calibrate

#endif  // SHARDSCOPE_CALIBRATE_DEEPEP_LOG_H_
