#include "trace/trace_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <tuple>

namespace shardscope::trace {
namespace fs = std::filesystem;
namespace {

constexpr int kMaxCollisions = 1000;

Status WriteWholeFileAtomically(const std::string& path, const std::string& content) {
  std::string temp = fmt::format("{}.tmp-{}", path, getpid());
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("{}: cannot create: {}", temp, std::strerror(errno));
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      unlink(temp.c_str());
      return IoError("{}: write failed: {}", temp, std::strerror(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    unlink(temp.c_str());
    return IoError("{}: fsync/close failed: {}", temp, std::strerror(errno));
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    unlink(temp.c_str());
    return IoError("{}: rename failed: {}", path, std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

std::string UtcTimestamp() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm utc;
  gmtime_r(&ts.tv_sec, &utc);
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}.{:06}", utc.tm_year + 1900, utc.tm_mon + 1,
                     utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, ts.tv_nsec / 1000);
}

std::string StoreMetadataPathFor(const std::string& trace_path) {
  static const std::regex kTrace(R"(trace_(.+)\.trace(\.gz)?)");
  fs::path p(trace_path);
  std::smatch m;
  std::string name = p.filename().string();
  if (!std::regex_match(name, m, kTrace)) return "";
  return (p.parent_path() / ("metadata_" + m[1].str() + ".json")).string();
}

std::string SanitizePathComponent(std::string_view s) {
  std::string out;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-' || c == '+';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

std::string TraceStore::RunDir(const RunKey& key) const {
  if (!key.workload.empty()) {
    return fmt::format("{}/{}/{}/{}", root_, SanitizePathComponent(key.model),
                       SanitizePathComponent(key.strategy), SanitizePathComponent(key.workload));
  }
  return fmt::format("{}/{}/{}/batch_{}_seq_{}", root_, SanitizePathComponent(key.model),
                     SanitizePathComponent(key.strategy), key.batch_size, key.sequence_length);
}

nlohmann::json StoreMetadata(const nlohmann::json& metadata, const RunKey& key,
                             const std::string& timestamp) {
  nlohmann::json m = metadata.is_object() ? metadata : nlohmann::json::object();
  m["shardscope"] = {{"version", SHARDSCOPE_VERSION}, {"trace_format", 1}};
  m["units"] = {{"trace_ts_dur", "us (3 decimals = exact ns)"},
                {"bytes", "B"},
                {"flops", "FLOP (multiply-add = 2)"},
                {"bandwidth", "B/s"},
                {"peak_flops", "FLOP/s"},
                {"memory_counters", "B"}};
  m["run"] = {{"model", key.model},
              {"strategy", key.strategy},
              {"batch_size", key.batch_size},
              {"sequence_length", key.sequence_length},
              {"timestamp", timestamp}};
  if (!key.workload.empty()) m["run"]["workload"] = key.workload;
  // The identity up front, so that a reader of the file (or `traces list`) need not
  // know where the experiment's JSON keeps each field.
  if (auto id = RunIdentityFromMetadata(m, "metadata"); id.ok()) {
    const nlohmann::ordered_json fields = RunIdentityJson(*id);
    for (const auto& [field, value] : fields.items()) m["run"][field] = value;
  }
  return m;
}

Status TraceStore::CheckRoot() const {
  // An empty root would put the store in the current directory (or "/" once joined).
  if (root_.empty()) return InvalidArgument("trace store: an empty path (give a directory)");
  std::error_code ec;
  if (fs::exists(root_, ec) && !fs::is_directory(root_, ec)) {
    return InvalidArgument("trace store {}: exists and is not a directory", root_);
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<TraceWriter>> TraceStore::Create(const RunKey& key,
                                                          const nlohmann::json& metadata,
                                                          StoredTrace* stored,
                                                          TraceCompression compression) const {
  if (key.batch_size < 1 || key.sequence_length < 1) {
    return InvalidArgument("trace store: batch size and sequence length must be >= 1 (got {}, {})",
                           key.batch_size, key.sequence_length);
  }
  RETURN_IF_ERROR(CheckRoot());
  std::string dir = RunDir(key);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError("trace store: cannot create {}: {}", dir, ec.message());
  std::string base = UtcTimestamp();
  std::string timestamp, metadata_path;
  for (int i = 0; i < kMaxCollisions; ++i) {
    timestamp = i == 0 ? base : fmt::format("{}_{}", base, i);
    metadata_path = fmt::format("{}/metadata_{}.json", dir, timestamp);
    // The exclusive create reserves the timestamp for this writer.
    int fd = open(metadata_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      close(fd);
      break;
    }
    if (errno != EEXIST) {
      return IoError("trace store: cannot create {}: {}", metadata_path, std::strerror(errno));
    }
    if (i + 1 == kMaxCollisions) {
      return InternalError("trace store: no free timestamp in {} after {} tries", dir, i + 1);
    }
  }
  nlohmann::json full = StoreMetadata(metadata, key, timestamp);
  const bool gzip = compression == TraceCompression::kGzip;
  std::string trace_path = fmt::format("{}/trace_{}.trace{}", dir, timestamp, gzip ? ".gz" : "");
  full["run"]["trace_file"] = fs::path(trace_path).filename().string();
  RETURN_IF_ERROR(WriteWholeFileAtomically(
      metadata_path, full.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  TraceWriterOptions options;
  options.overwrite = false;
  options.gzip = gzip;
  ASSIGN_OR_RETURN(auto writer, TraceWriter::Open(trace_path, full, options));
  if (stored) {
    stored->key = key;
    stored->timestamp = timestamp;
    stored->trace_path = trace_path;
    stored->metadata_path = metadata_path;
  }
  return writer;
}

StatusOr<std::vector<StoredTrace>> TraceStore::List(const ListFilter& filter) const {
  std::vector<StoredTrace> out;
  std::error_code ec;
  if (!fs::exists(root_, ec)) return out;
  if (!fs::is_directory(root_, ec)) return InvalidArgument("{}: not a directory", root_);
  static const std::regex kRunDir(R"(batch_(\d+)_seq_(\d+))");
  static const std::regex kServedDir(R"(served_.+)");
  static const std::regex kFile(R"((trace|metadata)_(.+)\.(trace|trace\.gz|json))");
  auto dirs = [&](const fs::path& p) {
    std::vector<fs::path> v;
    for (const auto& e : fs::directory_iterator(p, ec)) {
      if (e.is_directory(ec)) v.push_back(e.path());
    }
    return v;
  };
  for (const auto& model_dir : dirs(root_)) {
    std::string model = model_dir.filename().string();
    if (!filter.model.empty() && model != SanitizePathComponent(filter.model)) continue;
    for (const auto& strategy_dir : dirs(model_dir)) {
      std::string strategy = strategy_dir.filename().string();
      if (!filter.strategy.empty() && strategy != SanitizePathComponent(filter.strategy)) continue;
      for (const auto& run_dir : dirs(strategy_dir)) {
        std::smatch m;
        std::string run_name = run_dir.filename().string();
        RunKey key{model, strategy, 0, 0, ""};
        if (std::regex_match(run_name, m, kRunDir)) {
          key.batch_size = std::stoll(m[1]);
          key.sequence_length = std::stoll(m[2]);
        } else if (std::regex_match(run_name, kServedDir)) {
          key.workload = run_name;
        } else {
          continue;
        }
        std::map<std::string, StoredTrace> by_timestamp;
        for (const auto& e : fs::directory_iterator(run_dir, ec)) {
          std::string name = e.path().filename().string();
          std::smatch f;
          if (!e.is_regular_file(ec) || !std::regex_match(name, f, kFile)) continue;
          bool is_trace = f[1] == "trace";
          if (is_trace != (f[3] != "json")) continue;
          StoredTrace& t = by_timestamp[f[2]];
          t.key = key;
          t.timestamp = f[2];
          if (is_trace) {
            t.trace_path = e.path().string();
            t.trace_bytes = static_cast<int64_t>(e.file_size(ec));
          } else {
            t.metadata_path = e.path().string();
          }
        }
        for (auto& [ts, t] : by_timestamp) {
          if (!t.metadata_path.empty()) {
            ASSIGN_OR_RETURN(t.identity, ReadRunIdentity(t.metadata_path));
          }
          if (!filter.identity.Matches(t.identity)) continue;
          out.push_back(std::move(t));
        }
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const StoredTrace& a, const StoredTrace& b) {
    return std::tie(a.key.model, a.key.strategy, a.key.workload, a.key.batch_size,
                    a.key.sequence_length,
                    a.timestamp) < std::tie(b.key.model, b.key.strategy, b.key.workload,
                                            b.key.batch_size, b.key.sequence_length, b.timestamp);
  });
  return out;
}

}  // namespace shardscope::trace
