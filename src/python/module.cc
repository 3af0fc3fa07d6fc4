// The `shardscope._shardscope` extension module.
#include <pybind11/pybind11.h>

#include "python/bindings.h"

PYBIND11_MODULE(_shardscope, m) {
  m.doc() = "ShardScope's C++ library; use the `shardscope` package (docs/python.md)";
  m.attr("__version__") = SHARDSCOPE_VERSION;
  shardscope::python::RegisterExperimentBindings(m);
  shardscope::python::RegisterAnalysisBindings(m);
  shardscope::python::RegisterTraceBindings(m);
}
