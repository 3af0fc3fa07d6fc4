// NcclTestsLog: reads the text output of NVIDIA's nccl-tests (all_reduce_perf,
// all_gather_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf,
// broadcast_perf; any -g/-t/-b/-e/-f, one process or MPI) into its tables:
// per size, the out-of-place and in-place time, algbw and busbw. A log may
// hold several runs, each a header (`# nThread …`, `#  Rank …` lines), a
// table and its `# Avg bus bandwidth` footer; other lines (NCCL INFO,
// launcher noise) are skipped. The collective comes from the binary's name
// where the log prints it (`# Collective test starting: …` or the command
// line), else from the user, else from the table's columns (redop, root,
// count per size, busbw / algbw); the rank count from the `# Rank` lines,
// else nThread × nGpus. Errors name the file and line. Pure functions.
#ifndef SHARDSCOPE_CALIBRATE_NCCL_TESTS_LOG_H_
#define SHARDSCOPE_CALIBRATE_NCCL_TESTS_LOG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/collective.h"
#include "core/status.h"

namespace shardscope::calibrate {

// One timing of a row (out-of-place or in-place); seconds 0: not printed.
struct NcclTestsTiming {
  double seconds = 0;
  double algbw = 0;      // bytes/s, as printed
  double busbw = 0;      // bytes/s, as printed
  bool checked = false;  // #wrong was a number (the test validated this one)
};

struct NcclTestsRow {
  int64_t bytes = 0;  // the size column (nccl-tests' -b/-e size)
  int64_t count = 0;  // elements
  std::string type;
  std::string redop;  // "" where the log printed none
  int64_t root = -1;
  NcclTestsTiming out_of_place, in_place;
  int line = 0;
  // The timing the fit takes: out-of-place where printed, else in-place.
  const NcclTestsTiming& Timing() const {
    return out_of_place.seconds > 0 ? out_of_place : in_place;
  }
};

struct NcclTestsTable {
  std::string file;
  int line = 0;                               // the table's column header
  Collective collective = Collective::kNone;  // kSend: sendrecv_perf
  std::string collective_from;  // "the binary name", "--nccl-tests NAME=", "the columns"
  int64_t ranks = 0;
  std::string ranks_from;  // "the # Rank lines", "nThread x nGpus", …
  std::vector<NcclTestsRow> rows;
  double avg_busbw = -1;  // the footer's figure (bytes/s); < 0: no footer
};

// nccl-tests' name of a collective ("all_reduce", "alltoall", "sendrecv", …).
std::string_view NcclTestsName(Collective c);
// A binary's or user's name of a collective the simulator models: the
// nccl-tests names, with or without "_perf", and ParseCollective's spellings
// ("all_to_all", "send_recv"); nullopt for others.
std::optional<Collective> ParseNcclTestsCollective(std::string_view name);

// Parses `text`, read from `file` (named in errors). `named`: the user's
// collective for tables whose log does not name its binary (a binary name
// that disagrees is an error). No table at all is an error.
StatusOr<std::vector<NcclTestsTable>> ParseNcclTestsLog(std::string_view text,
                                                        const std::string& file,
                                                        std::optional<Collective> named);
// Reads and parses the file.
StatusOr<std::vector<NcclTestsTable>> ReadNcclTestsLog(const std::string& file,
                                                       std::optional<Collective> named);

}  // namespace shardscope::calibrate

#endif  // SHARDSCOPE_CALIBRATE_NCCL_TESTS_LOG_H_
