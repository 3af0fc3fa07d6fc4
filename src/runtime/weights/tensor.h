// Tensor: a dense, row-major fp32 array with a shape, owning its memory (host
// memory for the CPU backend). Move-only, so a buffer handed to an in-flight
// transfer has exactly one owner. Not thread-safe.
#ifndef SHARDSCOPE_RUNTIME_WEIGHTS_TENSOR_H_
#define SHARDSCOPE_RUNTIME_WEIGHTS_TENSOR_H_

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace shardscope::runtime {

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor of the given shape.
  explicit Tensor(std::vector<int64_t> shape) : shape_(std::move(shape)) {
    data_.assign(static_cast<size_t>(NumElements(shape_)), 0.0f);
  }
  Tensor(std::initializer_list<int64_t> shape) : Tensor(std::vector<int64_t>(shape)) {}
  Tensor(std::vector<int64_t> shape, std::vector<float> data)
      : shape_(std::move(shape)), data_(std::move(data)) {}

  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  Tensor(Tensor&&) = default;
  Tensor& operator=(Tensor&&) = default;

  // An explicit deep copy.
  Tensor Clone() const { return Tensor(shape_, data_); }

  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_[static_cast<size_t>(i)]; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t size() const { return static_cast<int64_t>(data_.size()); }
  bool empty() const { return data_.empty(); }
  float* data() { return data_.data(); }
  const float* data() const { return data_.data(); }
  float& operator[](int64_t i) { return data_[static_cast<size_t>(i)]; }
  float operator[](int64_t i) const { return data_[static_cast<size_t>(i)]; }
  std::vector<float>& vec() { return data_; }
  const std::vector<float>& vec() const { return data_; }

  // Changes the shape, keeping (or zero-extending) the data.
  void Resize(std::vector<int64_t> shape) {
    shape_ = std::move(shape);
    data_.resize(static_cast<size_t>(NumElements(shape_)), 0.0f);
  }

  static int64_t NumElements(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }

 private:
  std::vector<int64_t> shape_;
  std::vector<float> data_;
};

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_WEIGHTS_TENSOR_H_
