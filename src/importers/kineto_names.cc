// The Kineto name tables (kineto_names.h).
#include "importers/kineto_names.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace shardscope::importers {

using kineto::Trim;
using trace::Collective;

bool IsCommKernelName(std::string_view name, Collective* collective) {
  *collective = Collective::kNone;
  std::string_view n = name;
  if (n.starts_with("void ")) n.remove_prefix(5);
  // vLLM / SGLang / TensorRT-LLM custom all-reduce kernels (their names carry namespaces).
  static constexpr std::array<std::string_view, 6> kCustomAllReduce = {
      "cross_device_reduce_1stage", "cross_device_reduce_2stage", "quickreduce::allreduce",
      "allreduce_fusion_kernel",    "oneShotAllReduceKernel",     "twoShotAllReduceKernel"};
  for (std::string_view k : kCustomAllReduce) {
    if (n.find(k) != std::string_view::npos) {
      *collective = Collective::kAllReduce;
      return true;
    }
  }
  static constexpr std::array<std::string_view, 5> kPrefixes = {
      "ncclKernel_", "ncclDevKernel_", "mscclKernel_", "rcclKernel_", "ncclDevFunc_"};
  std::string_view rest;
  bool found = false;
  for (std::string_view p : kPrefixes) {
    if (n.starts_with(p)) {
      rest = n.substr(p.size());
      found = true;
      break;
    }
  }
  if (!found) {
    // Other RCCL/NCCL entry points ("ncclKernel(…)", "rcclGenericKernel…").
    return n.starts_with("nccl") || n.starts_with("rccl");
  }
  size_t end = rest.find_first_of("_(<");
  std::string_view op = rest.substr(0, end);
  if (op == "AllReduce") {
    *collective = Collective::kAllReduce;
  } else if (op == "AllGather") {
    *collective = Collective::kAllGather;
  } else if (op == "ReduceScatter") {
    *collective = Collective::kReduceScatter;
  } else if (op == "Broadcast") {
    *collective = Collective::kBroadcast;
  } else if (op == "AllToAll" || op == "AlltoAll") {
    *collective = Collective::kAllToAll;
  } else if (op == "Send") {
    *collective = Collective::kSend;
  } else if (op == "Recv") {
    *collective = Collective::kRecv;
  }
  // SendRecv (point-to-point or all-to-all), Reduce, Generic: the name does not say.
  return true;
}

std::optional<Collective> CollectiveFromPytorchName(std::string_view name) {
  std::string_view n = Trim(name);
  for (std::string_view p : {std::string_view("nccl:"), std::string_view("c10d::"),
                             std::string_view("gloo:"), std::string_view("rccl:")}) {
    if (n.starts_with(p)) {
      n.remove_prefix(p.size());
      break;
    }
  }
  n = n.substr(0, n.find_first_of(" ("));
  std::string s;
  for (char c : n) s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  while (!s.empty() && s.front() == '_') s.erase(s.begin());
  while (!s.empty() && s.back() == '_') s.pop_back();
  bool stripped = true;
  while (stripped) {
    stripped = false;
    for (std::string_view suffix : {"_coalesced", "_into_tensor", "_tensor", "_base", "_single"}) {
      if (s.size() > suffix.size() && s.ends_with(suffix)) {
        s.resize(s.size() - suffix.size());
        stripped = true;
      }
    }
  }
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  if (s == "allreduce") return Collective::kAllReduce;
  if (s == "allgather") return Collective::kAllGather;
  if (s == "reducescatter") return Collective::kReduceScatter;
  if (s == "alltoall" || s == "alltoallv") return Collective::kAllToAll;
  if (s == "broadcast") return Collective::kBroadcast;
  if (s == "send") return Collective::kSend;
  if (s == "recv" || s == "recvanysource") return Collective::kRecv;
  if (s == "reduce" || s == "gather" || s == "scatter" || s == "barrier" || s == "wait" ||
      s == "coalesced" || s == "monitoredbarrier") {
    return Collective::kNone;
  }
  return std::nullopt;
}

int64_t KinetoDtypeSize(std::string_view dtype, std::string* ours) {
  struct Entry {
    std::string_view c10, ours;
    int64_t size;
  };
  static constexpr std::array<Entry, 43> kTable = {{
      {"Float", "fp32", 4},
      {"BFloat16", "bf16", 2},
      {"Half", "fp16", 2},
      {"Double", "fp64", 8},
      {"Byte", "uint8", 1},
      {"Char", "int8", 1},
      {"Short", "int16", 2},
      {"Int", "int32", 4},
      {"Long", "int64", 8},
      {"Bool", "bool", 1},
      {"ComplexHalf", "complex32", 4},
      {"ComplexFloat", "complex64", 8},
      {"ComplexDouble", "complex128", 16},
      {"QInt8", "qint8", 1},
      {"QUInt8", "quint8", 1},
      {"QInt32", "qint32", 4},
      {"Float8_e5m2", "fp8", 1},
      {"Float8_e4m3fn", "fp8", 1},
      {"Float8_e5m2fnuz", "fp8", 1},
      {"Float8_e4m3fnuz", "fp8", 1},
      {"UInt16", "uint16", 2},
      {"UInt32", "uint32", 4},
      {"UInt64", "uint64", 8},
      {"float32", "fp32", 4},
      {"float", "fp32", 4},
      {"bfloat16", "bf16", 2},
      {"float16", "fp16", 2},
      {"half", "fp16", 2},
      {"int8", "int8", 1},
      {"uint8", "uint8", 1},
      {"int32", "int32", 4},
      {"int64", "int64", 8},
      // "Input type" of a host op: C++ type names.
      {"c10::BFloat16", "bf16", 2},
      {"c10::Half", "fp16", 2},
      {"double", "fp64", 8},
      {"long int", "int64", 8},
      {"long", "int64", 8},
      {"int", "int32", 4},
      {"signed char", "int8", 1},
      {"unsigned char", "uint8", 1},
      {"bool", "bool", 1},
      {"c10::Float8_e4m3fn", "fp8", 1},
      {"c10::Float8_e5m2", "fp8", 1},
  }};
  for (const Entry& e : kTable) {
    if (e.c10 == dtype) {
      if (ours) ours->assign(e.ours);
      return e.size;
    }
  }
  if (ours) {
    ours->clear();
    for (char c : dtype) {
      ours->push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  return 0;
}

bool ParseRankList(std::string_view s, std::vector<int64_t>* out, bool* truncated) {
  out->clear();
  *truncated = false;
  s = Trim(s);
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return false;
  std::string_view inner = s.substr(1, s.size() - 2);
  size_t pos = 0;
  while (pos <= inner.size()) {
    size_t comma = inner.find(',', pos);
    std::string_view tok = Trim(
        inner.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    bool last = comma == std::string_view::npos;
    if (tok == "..." || tok == "…") {
      *truncated = true;
      return true;  // what follows the ellipsis is not a rank ("..., ]")
    }
    if (tok.empty()) {
      if (last) return true;  // "[]" or a trailing ", ]"
      return false;
    }
    int64_t v = 0;
    for (char c : tok) {
      if (c < '0' || c > '9' || v > (int64_t{1} << 40)) return false;
      v = v * 10 + (c - '0');
    }
    out->push_back(v);
    if (last) return true;
    pos = comma + 1;
  }
  return true;
}

namespace kineto {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

HostRole RoleOfHostName(std::string_view name, Kind kind, std::string_view cat, StepSource* step) {
  if (kind == Kind::kPython) {
    // "…/scheduler.py(1095): run_batch"
    if (name.ends_with(": run_batch") || Eq(name, "run_batch")) {
      *step = StepSource::kSglangRunBatch;
      return HostRole::kStep;
    }
    return HostRole::kNone;
  }
  switch (name.empty() ? '\0' : name[0]) {
    case 'a':
      if (kind == Kind::kHostOp &&
          (Eq(name, "aten::mm") || Eq(name, "aten::addmm") || Eq(name, "aten::bmm") ||
           Eq(name, "aten::baddbmm") || Eq(name, "aten::_scaled_mm"))) {
        return HostRole::kGemm;
      }
      return HostRole::kNone;
    case 'P':
      if (name.starts_with("ProfilerStep#")) {
        *step = StepSource::kProfilerStep;
        return HostRole::kStep;
      }
      return HostRole::kNone;
    case 'r':
      if (Eq(name, "record_param_comms")) return HostRole::kComm;
      if (name.starts_with("run_batch")) {
        *step = StepSource::kSglangRunBatch;
        return HostRole::kStep;
      }
      return HostRole::kNone;
    case 'n':
      return name.starts_with("nccl:") ? HostRole::kComm : HostRole::kNone;
    case 'c':
      return name.starts_with("c10d::") ? HostRole::kComm : HostRole::kNone;
    case 'e':
      if (name.starts_with("execute_") && Eq(cat, "user_annotation")) {
        *step = StepSource::kVllmExecute;
        return HostRole::kStep;
      }
      return HostRole::kNone;
    default:
      return HostRole::kNone;
  }
}

Dim DimOfDescription(std::string_view desc) {
  std::string word;
  Dim found = Dim::kNone;
  auto check = [&] {
    if (word == "tp") found = Dim::kTp;
    if (word == "pp") found = Dim::kPp;
    if (word == "dp") found = Dim::kDp;
    if (word == "ep") found = Dim::kEp;
    if (word == "sp" || word == "cp") found = Dim::kSp;
    word.clear();
  };
  for (char c : desc) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else {
      check();
    }
  }
  check();
  return found;
}

}  // namespace kineto
}  // namespace shardscope::importers
