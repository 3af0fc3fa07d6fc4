// libFuzzer target for the safetensors reader: any bytes as a .safetensors file
// must open or be rejected with a Status naming the file; the tensors of a file
// that opens must read (as float blocks) without reading outside it.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz/fuzz_file.h"
#include "runtime/weights/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardscope::runtime;
  shardscope::fuzz::FuzzFile file(data, size, "model.safetensors");
  auto reader = SafetensorsReader::Open(file.path());
  if (!reader.ok()) return 0;
  int read = 0;
  for (const std::string& name : reader->Names()) {
    const SafetensorsEntry* e = reader->Find(name);
    if (e == nullptr || e->shape.size() > 2 || read++ == 8) continue;
    const int64_t rows = e->shape.size() == 2 ? e->shape[0] : 1;
    const int64_t cols = e->shape.empty() ? 1 : e->shape.back();
    int64_t count = 0;
    if (rows <= 0 || cols <= 0 || __builtin_mul_overflow(rows, cols, &count) || count > 65536) {
      continue;
    }
    std::vector<float> out(static_cast<size_t>(count));
    (void)reader->ReadBlock(name, {0, rows, 0, cols}, false, out.data(), cols).ok();
  }
  return 0;
}
