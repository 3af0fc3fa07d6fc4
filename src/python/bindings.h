// The functions of the `shardscope._shardscope` extension, registered by area.
// python/shardscope/ wraps them into the public API (docs/python.md).
#ifndef SHARDSCOPE_PYTHON_BINDINGS_H_
#define SHARDSCOPE_PYTHON_BINDINGS_H_

#include <pybind11/pybind11.h>

namespace shardscope::python {

// load_experiments, plan, check, run: experiments of a YAML file.
void RegisterExperimentBindings(pybind11::module_& m);
// open_traces (the Analyses class) and analyze: the analyzer's results.
void RegisterAnalysisBindings(pybind11::module_& m);
// compare, list_traces: comparisons of runs and the store.
void RegisterTraceBindings(pybind11::module_& m);

}  // namespace shardscope::python

#endif  // SHARDSCOPE_PYTHON_BINDINGS_H_
