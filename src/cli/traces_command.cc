#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "core/units.h"
#include "trace/trace_store.h"

namespace shardscope::cli {
namespace {

struct ListOptions {
  std::string root = "traces";
  std::string model;
  std::string strategy;
  bool json = false;
};

Status RunList(const ListOptions& o) {
  trace::TraceStore store(o.root);
  ASSIGN_OR_RETURN(auto traces, store.List({o.model, o.strategy}));
  if (o.json) {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& t : traces) {
      arr.push_back({{"model", t.key.model},
                     {"strategy", t.key.strategy},
                     {"batch_size", t.key.batch_size},
                     {"sequence_length", t.key.sequence_length},
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
    std::cout << fmt::format(
        "no traces under {}{}\n", o.root,
        missing ? " (no such directory; `shardscope run --out` makes one)" : "");
    return Status::Ok();
  }
  std::cout << "| model | strategy | batch | seq | timestamp | size | trace |\n"
               "|---|---|---|---|---|---|---|\n";
  for (const auto& t : traces) {
    std::cout << fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", t.key.model, t.key.strategy,
                             t.key.batch_size, t.key.sequence_length, t.timestamp,
                             t.trace_path.empty() ? "—" : FormatBytes(double(t.trace_bytes)),
                             t.trace_path.empty() ? "(incomplete: no trace file)" : t.trace_path);
  }
  return Status::Ok();
}

}  // namespace

void AddTracesCommand(CLI::App& app, int* exit_code) {
  auto* traces = app.add_subcommand("traces", "The trace store");
  traces->require_subcommand(1);
  auto options = std::make_shared<ListOptions>();
  auto* list = traces->add_subcommand("list", "List stored traces (model, strategy, batch, seq)");
  list->add_option("--root", options->root, "store root")->default_str("traces");
  list->add_option("--model", options->model, "only this model");
  list->add_option("--strategy", options->strategy, "only this strategy");
  list->add_flag("--json", options->json, "JSON output");
  list->callback([options, exit_code] {
    Status s = RunList(*options);
    *exit_code = s.ok() ? kExitOk : ReportError(s);
  });
}

}  // namespace shardscope::cli
