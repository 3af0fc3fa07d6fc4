#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "core/units.h"
#include "trace/store_leftovers.h"
#include "trace/trace_store.h"

namespace shardscope::cli {
namespace {

struct ListOptions {
  std::string root = "traces";
  std::string model;
  std::string strategy;
  trace::IdentityFilter identity;
  bool json = false;
};

std::string OrDash(const std::string& s) { return s.empty() ? "—" : s; }

// "2 temporary files (52.0 MB)" of runs that were killed while writing.
std::string LeftoversText(const std::vector<trace::Leftover>& leftovers) {
  double bytes = 0;
  for (const trace::Leftover& l : leftovers) bytes += static_cast<double>(l.bytes);
  return fmt::format("{} temporary file{} ({})", leftovers.size(), leftovers.size() == 1 ? "" : "s",
                     FormatBytes(bytes));
}

// `traces list`'s last line when killed runs left temporary files.
void PrintLeftoversNote(const std::string& root) {
  StatusOr<std::vector<trace::Leftover>> leftovers = trace::FindLeftovers(root);
  if (!leftovers.ok() || leftovers->empty()) return;
  std::cout << fmt::format(
      "\n{} of killed runs are not listed: `shardscope traces gc --root {}` removes them\n",
      LeftoversText(*leftovers), root);
}

Status RunGc(const std::string& root, bool dry_run) {
  ASSIGN_OR_RETURN(std::vector<trace::Leftover> leftovers, trace::FindLeftovers(root));
  if (leftovers.empty()) {
    std::cout << fmt::format("nothing to remove under {}\n", root);
    return Status::Ok();
  }
  for (const trace::Leftover& l : leftovers) {
    std::cout << fmt::format("{}{} ({}, written by process {}, no longer running)\n",
                             dry_run ? "would remove " : "removed ", l.path,
                             FormatBytes(static_cast<double>(l.bytes)), l.pid);
    if (!dry_run) RETURN_IF_ERROR(trace::RemoveLeftovers({l}));
  }
  std::cout << fmt::format("{} {}\n", dry_run ? "would remove" : "removed",
                           LeftoversText(leftovers));
  return Status::Ok();
}

Status RunList(const ListOptions& o) {
  trace::TraceStore store(o.root);
  ASSIGN_OR_RETURN(auto traces, store.List({o.model, o.strategy, o.identity}));
  if (o.json) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& t : traces) {
      arr.push_back({{"model", t.key.model},
                     {"strategy", t.key.strategy},
                     {"batch_size", t.key.batch_size},
                     {"sequence_length", t.key.sequence_length},
                     {"workload", t.key.workload},
                     {"experiment", t.identity.experiment},
                     {"sweep", t.identity.sweep},
                     {"hardware", t.identity.hardware},
                     {"dtype", t.identity.dtype},
                     {"backend", t.identity.backend},
                     {"nodes", t.identity.nodes ? nlohmann::ordered_json(*t.identity.nodes)
                                                : nlohmann::ordered_json(nullptr)},
                     {"ranks", t.identity.ranks ? nlohmann::ordered_json(*t.identity.ranks)
                                                : nlohmann::ordered_json(nullptr)},
                     {"timestamp", t.timestamp},
                     {"trace", t.trace_path},
                     {"metadata", t.metadata_path},
                     {"trace_bytes", t.trace_bytes},
                     {"complete", t.complete()}});
    }
    std::cout << arr.dump(2) << "\n";
    return Status::Ok();
  }
  if (traces.empty()) {
    std::error_code ec;
    const bool missing = !std::filesystem::exists(o.root, ec);
    const bool filtered = !o.model.empty() || !o.strategy.empty() || !o.identity.empty();
    std::cout << fmt::format("no traces under {}{}\n", o.root,
                             missing    ? " (no such directory; `shardscope run --out` makes one)"
                             : filtered ? " match the filters"
                                        : "");
    PrintLeftoversNote(o.root);
    return Status::Ok();
  }
  std::cout << "| model | strategy | batch | seq | workload | experiment | hardware | dtype | "
               "backend | nodes · ranks | timestamp | trace size | trace |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& t : traces) {
    const trace::RunIdentity& id = t.identity;
    const bool served = !t.key.workload.empty();
    std::cout << fmt::format(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", t.key.model,
        t.key.strategy, served ? "—" : std::to_string(t.key.batch_size),
        served ? "—" : std::to_string(t.key.sequence_length), served ? t.key.workload : "—",
        OrDash(id.experiment), OrDash(id.hardware), OrDash(id.dtype), OrDash(id.backend),
        OrDash(trace::NodesAndRanks(id)), t.timestamp,
        t.trace_path.empty() ? "—" : FormatBytes(double(t.trace_bytes)),
        t.trace_path.empty() ? "(incomplete: no trace file)" : t.trace_path);
  }
  PrintLeftoversNote(o.root);
  return Status::Ok();
}

}  // namespace

void AddTracesCommand(CLI::App& app, int* exit_code) {
  auto* traces = app.add_subcommand("traces", "The trace store");
  traces->require_subcommand(1);
  auto options = std::make_shared<ListOptions>();
  auto* list = traces->add_subcommand(
      "list",
      "List stored traces: model, strategy, batch, seq, and the experiment, hardware, dtype, "
      "backend and size each run's metadata records");
  list->add_option("--root", options->root, "store root")->default_str("traces");
  list->add_option("--model", options->model, "only this model");
  list->add_option("--strategy", options->strategy, "only this strategy");
  list->add_option("--experiment", options->identity.experiment,
                   "only this experiment (or the experiments of this sweep)")
      ->check(NonEmpty());
  list->add_option("--hardware", options->identity.hardware, "only this hardware (cluster name)");
  list->add_option("--dtype", options->identity.dtype, "only this dtype");
  list->add_option("--backend", options->identity.backend, "only this backend (sim, cpu)");
  list->add_flag("--json", options->json, "JSON output");
  list->callback([options, exit_code] {
    Status s = RunList(*options);
    *exit_code = s.ok() ? kExitOk : ReportError(s);
  });

  struct GcOptions {
    std::string root = "traces";
    bool dry_run = false;
  };
  auto gc_options = std::make_shared<GcOptions>();
  auto* gc = traces->add_subcommand(
      "gc",
      "Remove the temporary trace files of runs that were killed while writing (SIGKILL, a "
      "crash): hidden, not listed, as large as the trace was");
  gc->add_option("--root", gc_options->root, "store root")->default_str("traces");
  gc->add_flag("--dry-run", gc_options->dry_run, "only say what would be removed");
  gc->callback([gc_options, exit_code] {
    Status s = RunGc(gc_options->root, gc_options->dry_run);
    *exit_code = s.ok() ? kExitOk : ReportError(s);
  });
}

}  // namespace shardscope::cli
