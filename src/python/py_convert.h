// The Python boundary: JSON values become Python objects (dict, list, str,
// int, float, bool, None), a failed Status becomes an exception of
// python/shardscope/errors.py carrying the command line's one-line message,
// and long C++ calls run with the GIL released. Call with the GIL held.
#ifndef SHARDSCOPE_PYTHON_PY_CONVERT_H_
#define SHARDSCOPE_PYTHON_PY_CONVERT_H_

#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "core/status.h"
#include "trace/run_identity.h"

namespace shardscope::python {

namespace py = pybind11;

py::object ToPython(const nlohmann::json& j);
py::object ToPython(const nlohmann::ordered_json& j);

// A run's identity as a dict: experiment, sweep, hardware, dtype, backend ("" where
// unknown), nodes, ranks (None where unknown), so that the columns of several runs line up.
py::dict IdentityToPython(const trace::RunIdentity& id);

// Raises shardscope.InputError (bad input: a ValueError), shardscope.Cancelled
// or shardscope.RunError (a RuntimeError) for a failed `s`; its `code`
// attribute is the status code's name ("invalid_argument", ...).
void ThrowIfError(const Status& s);

template <typename T>
T Unwrap(StatusOr<T> s) {
  ThrowIfError(s.status());
  return std::move(s).value();
}

// Runs `f` with the GIL released (it must not touch Python objects).
template <typename F>
auto WithoutGil(F&& f) {
  py::gil_scoped_release release;
  return std::forward<F>(f)();
}

}  // namespace shardscope::python

#endif  // SHARDSCOPE_PYTHON_PY_CONVERT_H_
