// The op harness's bench mode (ggml's test-backend-ops perf): times every op
// case of BenchOpCases on every registered backend and storage dtype with the
// backend's own timer, median of --reps runs. Prints one row per (backend,
// dtype, case): backend, dtype, case, median µs. Results: docs/BENCHMARKS.md.
//   backend_ops_bench [--reps N] [--reference]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "runtime/cpu/backend_registry.h"
#include "runtime/device/backend_ops.h"
#include "runtime/device/reference_backend.h"

int main(int argc, char** argv) {
  using namespace shardscope;
  using namespace shardscope::runtime;
  int reps = 20;
  bool with_reference = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--reference") == 0) {
      with_reference = true;
    } else {
      std::fprintf(stderr, "usage: backend_ops_bench [--reps N] [--reference]\n");
      return 2;
    }
  }
  std::vector<BackendFactory> backends = RegisteredBackends();
  if (with_reference) backends.push_back({"reference", NewReferenceBackend});
  std::printf("backend\tdtype\tcase\tmedian_us\n");
  for (const BackendFactory& f : backends) {
    std::unique_ptr<Backend> b = f.create();
    for (DType dtype : {DType::kFp32, DType::kBf16, DType::kFp16}) {
      for (const OpCase& c : BenchOpCases()) {
        if (!b->Supports(OpOf(c), dtype)) continue;
        StatusOr<int64_t> ns = TimeOp(c, dtype, *b, reps);
        if (!ns.ok()) {
          std::fprintf(stderr, "%s %s: %s\n", f.name.data(), CaseName(c).c_str(),
                       ns.status().message().c_str());
          return 1;
        }
        std::printf("%.*s\t%.*s\t%s\t%.1f\n", static_cast<int>(f.name.size()), f.name.data(),
                    static_cast<int>(DTypeName(dtype).size()), DTypeName(dtype).data(),
                    CaseName(c).c_str(), static_cast<double>(*ns) / 1e3);
      }
    }
  }
  return 0;
}
