#include "python/py_convert.h"

#include <optional>
#include <string>

#include "core/exit_kind.h"

namespace shardscope::python {
namespace {

template <typename Json>
py::object Convert(const Json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(j.template get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(j.template get<double>());
    case nlohmann::json::value_t::string:
      return py::str(j.template get_ref<const std::string&>());
    case nlohmann::json::value_t::binary:
      return py::bytes(reinterpret_cast<const char*>(j.get_binary().data()), j.get_binary().size());
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const auto& v : j) out.append(Convert(v));
      return out;
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (auto it = j.begin(); it != j.end(); ++it) out[py::str(it.key())] = Convert(it.value());
      return out;
    }
  }
  return py::none();
}

const char* CodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid_argument";
    case StatusCode::kNotFound:
      return "not_found";
    case StatusCode::kDataLoss:
      return "data_loss";
    case StatusCode::kOutOfRange:
      return "out_of_range";
    case StatusCode::kFailedPrecondition:
      return "failed_precondition";
    case StatusCode::kUnimplemented:
      return "unimplemented";
    case StatusCode::kInternal:
      return "internal";
    case StatusCode::kIoError:
      return "io_error";
    case StatusCode::kCancelled:
      return "cancelled";
  }
  return "internal";
}

// The Python class for `code`, as the command line's exit codes group them.
const char* ClassName(StatusCode code) {
  switch (FailureKindOf(code)) {
    case FailureKind::kBadInput:
      return "InputError";
    case FailureKind::kInterrupted:
      return "Cancelled";
    case FailureKind::kOther:
      return "RunError";
  }
  return "RunError";
}

}  // namespace

py::object ToPython(const nlohmann::json& j) { return Convert(j); }
py::object ToPython(const nlohmann::ordered_json& j) { return Convert(j); }

py::dict IdentityToPython(const trace::RunIdentity& id) {
  auto optional = [](const std::optional<int64_t>& v) {
    return v ? py::object(py::int_(*v)) : py::object(py::none());
  };
  py::dict d;
  d["experiment"] = id.experiment;
  d["sweep"] = id.sweep;
  d["hardware"] = id.hardware;
  d["dtype"] = id.dtype;
  d["backend"] = id.backend;
  d["nodes"] = optional(id.nodes);
  d["ranks"] = optional(id.ranks);
  return d;
}

void ThrowIfError(const Status& s) {
  if (s.ok()) return;
  py::object cls = py::module_::import("shardscope.errors").attr(ClassName(s.code()));
  py::object exc = cls(s.message());
  exc.attr("code") = CodeName(s.code());
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw py::error_already_set();
}

}  // namespace shardscope::python
