// Safetensors: Hugging Face's checkpoint format — an 8-byte little-endian header
// length N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]},
// "__metadata__": {string: string}}, then the raw little-endian tensor bytes
// (offsets count from the end of the header). SafetensorsReader maps one file, or
// every shard of a checkpoint directory, read-only and reads whole tensors or
// row × column blocks of them as fp32 (from F32, BF16 or F16), so a rank touches
// only the pages of its shard. The writer produces the same format (tests,
// exports). A reader is immutable after Open; concurrent reads are safe.
#ifndef SHARDSCOPE_RUNTIME_WEIGHTS_SAFETENSORS_H_
#define SHARDSCOPE_RUNTIME_WEIGHTS_SAFETENSORS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/device/dtype_convert.h"  // Bf16ToFloat, F16ToFloat, FloatToBf16, FloatToF16

namespace shardscope::runtime {

// A whole file mapped read-only (RAII: unmapped on destruction). Not copyable.
class MappedFile {
 public:
  // NotFound when `path` does not exist, IoError when it cannot be opened or mapped.
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const uint8_t* data_ = nullptr;  // null for an empty file
  size_t size_ = 0;
};

// The float element types we read and write; every other dtype of the format
// (BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, I32, U32, F64, I64, U64) is kOther:
// accepted in a header, refused when read as fp32.
enum class SafetensorsDtype { kF32, kBF16, kF16, kOther };

// One tensor of a header.
struct SafetensorsEntry {
  std::string name;
  std::string dtype_name;  // as written, e.g. "BF16"
  SafetensorsDtype dtype = SafetensorsDtype::kOther;
  int64_t element_size = 0;  // bytes
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;  // byte range in the data section (after the header)
  size_t file = 0;             // index of the shard holding it
};

// Rows [row, row + rows) × columns [col, col + cols) of a matrix.
struct Block {
  int64_t row = 0, rows = 0, col = 0, cols = 0;
};

class SafetensorsReader {
 public:
  // `path` is a .safetensors file, or a directory holding model.safetensors or
  // model.safetensors.index.json and the shards it names. Every header is
  // validated here: errors name the file, the tensor and the field (header
  // length past the end, malformed JSON, unknown dtype, offsets out of range or
  // overlapping, shape × dtype size ≠ byte range, an index naming a tensor its
  // shard lacks). NotFound when there is no checkpoint at `path`.
  static StatusOr<SafetensorsReader> Open(const std::string& path);

  SafetensorsReader(SafetensorsReader&&) = default;
  SafetensorsReader& operator=(SafetensorsReader&&) = default;

  // What Open was given.
  const std::string& path() const { return path_; }
  // The file holding tensor `e`.
  const std::string& FileOf(const SafetensorsEntry& e) const { return files_[e.file]->path(); }
  // Tensor names, sorted.
  std::vector<std::string> Names() const;
  // Null when the checkpoint has no tensor `name`.
  const SafetensorsEntry* Find(const std::string& name) const;
  // The same, NotFound ("<path>: no tensor 'name'") when absent.
  StatusOr<const SafetensorsEntry*> Get(const std::string& name) const;
  // "__metadata__" of the file (of the first shard for a sharded checkpoint).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // The whole tensor, row-major, as fp32.
  StatusOr<std::vector<float>> Read(const std::string& name) const;
  // A block of a tensor of rank ≤ 2 (a vector [n] is one row of n columns, a
  // scalar 1 × 1) as fp32 into `out`, `ld` floats per output row; with
  // `transpose` out[j·ld + i] = tensor(block.row + i, block.col + j). Errors:
  // the block outside the shape, a dtype that is not F32/BF16/F16, rank > 2.
  Status ReadBlock(const std::string& name, Block block, bool transpose, float* out,
                   int64_t ld) const;
  // InvalidArgument naming the file and the tensor when a float tensor (F32, BF16,
  // F16) holds a NaN or an infinity: such weights make every output NaN, which
  // the sampler turns into token 0 without a word. Scans the raw bits.
  Status CheckFinite(const std::string& name) const;

 private:
  SafetensorsReader() = default;
  Status AddFile(const std::string& file, const std::vector<std::string>* only);

  std::string path_;
  std::vector<std::unique_ptr<MappedFile>> files_;
  std::vector<int64_t> data_start_;  // per file: 8 + header length
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// A tensor to write: fp32 values, stored as `dtype` (F32, BF16 or F16).
struct SafetensorsTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;  // row-major; size = product of shape
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
};

// The bytes of a safetensors file holding `tensors` in order (header padded
// with spaces to a multiple of 8 bytes, as the reference writer does).
// InvalidArgument for a duplicate name, a size that does not match the shape,
// or dtype kOther.
StatusOr<std::string> EncodeSafetensors(const std::vector<SafetensorsTensor>& tensors,
                                        const std::map<std::string, std::string>& metadata = {});
// Writes EncodeSafetensors(...) to `path`.
Status WriteSafetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                        const std::map<std::string, std::string>& metadata = {});
// A checkpoint directory (created if needed): model.safetensors when shards is
// 1, else model-0000k-of-0000n.safetensors (tensors dealt in order, about equal
// bytes each) and model.safetensors.index.json mapping each tensor to its shard.
Status WriteSafetensorsCheckpoint(const std::string& dir,
                                  const std::vector<SafetensorsTensor>& tensors, int shards = 1);

}  // namespace shardscope::runtime

#endif  // SHARDSCOPE_RUNTIME_WEIGHTS_SAFETENSORS_H_
