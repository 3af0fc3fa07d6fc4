#include "importers/nccl_profiler_calls.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <optional>

#include "importers/nccl_profiler_importer.h"
#include "trace/json_value.h"
#include "trace/trace_reader.h"

namespace shardscope::importers {
namespace nccl_profiler {
namespace {

namespace od = simdjson::ondemand;
using trace::Collective;

constexpr int32_t kNcclStream = 0;

struct NcclType {
  std::string_view nccl;
  int64_t size;
  std::string_view dtype;  // our name (trace_format.md)
};
constexpr std::array<NcclType, 17> kTypes = {{
    {"ncclInt8", 1, "int8"},
    {"ncclChar", 1, "int8"},
    {"ncclUint8", 1, "uint8"},
    {"ncclInt32", 4, "int32"},
    {"ncclInt", 4, "int32"},
    {"ncclUint32", 4, "uint32"},
    {"ncclInt64", 8, "int64"},
    {"ncclUint64", 8, "uint64"},
    {"ncclFloat16", 2, "fp16"},
    {"ncclHalf", 2, "fp16"},
    {"ncclFloat32", 4, "fp32"},
    {"ncclFloat", 4, "fp32"},
    {"ncclFloat64", 8, "fp64"},
    {"ncclDouble", 8, "fp64"},
    {"ncclBfloat16", 2, "bf16"},
    {"ncclFloat8e4m3", 1, "fp8"},
    {"ncclFloat8e5m2", 1, "fp8"},
}};

const NcclType* FindType(std::string_view name) {
  for (const NcclType& t : kTypes) {
    if (t.nccl == name) return &t;
  }
  return nullptr;
}

// The collective of an NCCL function name, and whether its count is per rank (so that the
// nccl-tests size is count × element size × ranks).
struct NcclFunc {
  Collective collective = Collective::kNone;
  bool per_rank_count = false;
};

NcclFunc FuncOf(std::string_view func) {
  if (func == "AllReduce") return {Collective::kAllReduce, false};
  if (func == "AllGather") return {Collective::kAllGather, true};
  if (func == "ReduceScatter") return {Collective::kReduceScatter, true};
  if (func == "Broadcast") return {Collective::kBroadcast, false};
  if (func == "AllToAll" || func == "AlltoAll") return {Collective::kAllToAll, true};
  if (func == "Send") return {Collective::kSend, false};
  if (func == "Recv") return {Collective::kRecv, false};
  return {};  // Reduce, Gather, Scatter, …: time only
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// An integer's text (trace/json_value.h), also when the file wrote it as a string.
bool ToInt(std::string_view s, int64_t* out) { return trace::ParseJsonIntText(s, out); }

}  // namespace

void CallEmitter::Emit(const NcclCall& call) {
  if (named_.insert(call.rank).second) {
    sink_->OnProcessName(call.rank, fmt::format("rank {}", call.rank));
    sink_->OnThreadName(call.rank, kNcclStream, "NCCL");
    stats_->names += 2;
  }
  trace::OpEvent op;
  op.rank = call.rank;
  op.stream = kNcclStream;
  op.name = call.func;
  op.category = trace::Category::kComm;
  op.ts_ns = call.ts_ns;
  op.dur_ns = call.dur_ns;
  op.seq = call.seq;
  const NcclFunc f = FuncOf(call.func);
  op.kind = f.collective != Collective::kNone ? std::string(trace::CollectiveName(f.collective))
                                              : Lower(call.func);
  const NcclType* type = FindType(call.datatype);
  const bool p2p = f.collective == Collective::kSend || f.collective == Collective::kRecv;
  if (type == nullptr) {
    stats_->Count(trace::Stat::kNcclUnknownDatatype, call.datatype, call.func);
  } else if (f.collective == Collective::kNone) {
    op.bytes = call.count * type->size;
    op.dtype = std::string(type->dtype);
    stats_->Count(trace::Stat::kNcclCollectiveNotModelled, call.func);
  } else if (p2p && call.peer < 0) {
    stats_->Count(trace::Stat::kNcclP2pWithoutPeer, call.func);
  } else if (!p2p && call.group.empty()) {
    stats_->Count(trace::Stat::kNcclRanksUnknown, call.func);
  } else {
    op.collective = f.collective;
    op.dtype = std::string(type->dtype);
    op.bytes =
        call.count * type->size * (f.per_rank_count ? static_cast<int64_t>(call.group.size()) : 1);
    if (p2p) {
      op.peer = call.peer;
    } else {
      op.group = call.group;
      if (f.collective == Collective::kBroadcast) op.root = call.root;
    }
  }
  sink_->OnOp(op);
  ++stats_->ops;
}

bool ToUint(std::string_view s, uint64_t* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

simdjson::error_code ReadObject(od::object object, Fields* fields, std::string_view nested,
                                Fields* inner) {
  for (auto field : object) {
    std::string_view key;
    od::value value;
    if (auto err = field.unescaped_key().get(key)) return err;
    if (auto err = field.value().get(value)) return err;
    std::string k(key);
    od::json_type type;
    if (auto err = value.type().get(type)) return err;
    if (type == od::json_type::object && inner != nullptr &&
        (key == nested || key == "start" || key == "stop")) {
      od::object obj;
      if (auto err = value.get_object().get(obj)) return err;
      for (auto f : obj) {
        std::string_view ik;
        od::value iv;
        std::string text;
        if (auto err = f.unescaped_key().get(ik)) return err;
        if (auto err = f.value().get(iv)) return err;
        if (!trace::GetJsonText(iv, &text)) return simdjson::TAPE_ERROR;
        if (key == nested) {
          (*inner)[std::string(ik)] = std::move(text);
        } else {
          (*fields)[k + "." + std::string(ik)] = std::move(text);
        }
      }
      continue;
    }
    std::string text;
    if (!trace::GetJsonText(value, &text)) return simdjson::TAPE_ERROR;
    (*fields)[k] = std::move(text);
  }
  return simdjson::SUCCESS;
}

const std::string* Get(const Fields& f, std::string_view key) {
  auto it = f.find(key);
  return it == f.end() ? nullptr : &it->second;
}
int64_t GetInt(const Fields& f, std::string_view key, int64_t missing) {
  const std::string* v = Get(f, key);
  int64_t out = 0;
  return v != nullptr && ToInt(*v, &out) ? out : missing;
}
bool GetNs(const Fields& f, std::string_view key, int64_t* ns) {
  const std::string* v = Get(f, key);
  return v != nullptr && trace::ParseMicrosToNs(*v, ns);
}

}  // namespace nccl_profiler

std::optional<int64_t> NcclDatatypeSize(std::string_view name) {
  const nccl_profiler::NcclType* t = nccl_profiler::FindType(name);
  if (t == nullptr) return std::nullopt;
  return t->size;
}

}  // namespace shardscope::importers
