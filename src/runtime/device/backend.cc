#include "runtime/device/backend.h"

#include <string>
#include <utility>

#include "runtime/device/dtype_convert.h"

namespace shardscope::runtime {

std::string_view BackendOpName(BackendOp op) {
  switch (op) {
#define SHARDSCOPE_BACKEND_OP_CASE(e, name) \
  case BackendOp::e:                        \
    return name;
    SHARDSCOPE_BACKEND_OPS(SHARDSCOPE_BACKEND_OP_CASE)
#undef SHARDSCOPE_BACKEND_OP_CASE
  }
  return "?";
}

int64_t TensorRef::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

TensorRef View(const TensorRef& t, int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
  TensorRef v;
  v.dtype = t.dtype;
  v.shape = {rows, cols};
  v.row_stride = t.ld();
  v.data = static_cast<char*>(t.data) + (row0 * t.ld() + col0) * DTypeSize(t.dtype);
  return v;
}

TensorRef RowsOf(const TensorRef& t, int64_t row0, int64_t rows) {
  return View(t, row0, rows, 0, t.cols());
}

TensorRef Flat(const TensorRef& t, int64_t offset, std::vector<int64_t> shape) {
  TensorRef v;
  v.dtype = t.dtype;
  v.shape = std::move(shape);
  v.data = static_cast<char*>(t.data) + offset * DTypeSize(t.dtype);
  return v;
}

StatusOr<TensorRef> Backend::NewTensor(Arena& arena, DType dtype, std::vector<int64_t> shape) {
  if (arena.source() != memory_) {
    return InvalidArgument("backend '{}': an arena of another backend's memory", name());
  }
  if (!IsStorageDType(dtype)) {
    return Unimplemented("not implemented: {} tensors on backend '{}'", DTypeName(dtype), name());
  }
  TensorRef t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  for (int64_t d : t.shape) {
    if (d < 0) return InvalidArgument("tensor shape has a negative dimension {}", d);
  }
  ASSIGN_OR_RETURN(t.data, arena.Allocate(t.bytes()));
  return t;
}

}  // namespace shardscope::runtime
