#include "runtime/weights/safetensors.h"

#include <fcntl.h>
#include <fmt/ranges.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

namespace shardscope::runtime {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";
// The reference implementation's limit; it also bounds what a corrupt length makes us parse.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DtypeInfo {
  const char* name;
  int64_t size;
  SafetensorsDtype dtype;
};
constexpr DtypeInfo kDtypes[] = {
    {"F32", 4, SafetensorsDtype::kF32},      {"BF16", 2, SafetensorsDtype::kBF16},
    {"F16", 2, SafetensorsDtype::kF16},      {"F64", 8, SafetensorsDtype::kOther},
    {"I64", 8, SafetensorsDtype::kOther},    {"U64", 8, SafetensorsDtype::kOther},
    {"I32", 4, SafetensorsDtype::kOther},    {"U32", 4, SafetensorsDtype::kOther},
    {"I16", 2, SafetensorsDtype::kOther},    {"U16", 2, SafetensorsDtype::kOther},
    {"I8", 1, SafetensorsDtype::kOther},     {"U8", 1, SafetensorsDtype::kOther},
    {"BOOL", 1, SafetensorsDtype::kOther},   {"F8_E5M2", 1, SafetensorsDtype::kOther},
    {"F8_E4M3", 1, SafetensorsDtype::kOther}};

const DtypeInfo* FindDtype(std::string_view name) {
  for (const DtypeInfo& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

// The name a tensor of `d` is written with: its row of kDtypes, the one table of
// the names (many-to-one with sizes, so not an EnumNames); kOther is never written.
const char* DtypeName(SafetensorsDtype d) {
  if (d == SafetensorsDtype::kOther) return "?";
  for (const DtypeInfo& info : kDtypes) {
    if (info.dtype == d) return info.name;
  }
  return "?";
}

int64_t DtypeSize(SafetensorsDtype d) { return d == SafetensorsDtype::kF32 ? 4 : 2; }

std::string ShapeText(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// n elements at `src` (any alignment) to fp32.
void Convert(const uint8_t* src, SafetensorsDtype dtype, int64_t n, float* dst) {
  if (dtype == SafetensorsDtype::kF32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, src + 2 * i, 2);
    dst[i] = dtype == SafetensorsDtype::kBF16 ? Bf16ToFloat(bits) : F16ToFloat(bits);
  }
}

// A non-negative JSON integer, or nullopt.
std::optional<int64_t> NonNegative(const Json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(u);
    }
    return std::nullopt;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return v.get<int64_t>();
  return std::nullopt;
}

// One header entry; errors name the file, the tensor and the field.
StatusOr<SafetensorsEntry> ParseEntry(const std::string& file, const std::string& name,
                                      const Json& v, int64_t data_bytes) {
  auto error = [&](std::string_view field, const std::string& problem) {
    return DataLoss("{}: tensor '{}': field '{}': {}", file, name, field, problem);
  };
  if (!v.is_object()) {
    return DataLoss("{}: tensor '{}': expected an object with dtype, shape and data_offsets", file,
                    name);
  }
  SafetensorsEntry e;
  e.name = name;
  if (!v.contains("dtype") || !v["dtype"].is_string()) {
    return error("dtype", "missing or not a string");
  }
  e.dtype_name = v["dtype"].get<std::string>();
  const DtypeInfo* d = FindDtype(e.dtype_name);
  if (d == nullptr) return error("dtype", fmt::format("unknown dtype '{}'", e.dtype_name));
  e.dtype = d->dtype;
  e.element_size = d->size;
  if (!v.contains("shape") || !v["shape"].is_array()) {
    return error("shape", "missing or not a list of sizes");
  }
  int64_t elements = 1;
  for (const Json& s : v["shape"]) {
    const std::optional<int64_t> n = NonNegative(s);
    if (!n) return error("shape", fmt::format("{} is not a non-negative integer", s.dump()));
    e.shape.push_back(*n);
    if (*n != 0 && elements > std::numeric_limits<int64_t>::max() / 8 / *n) {
      return error("shape", fmt::format("{} has too many elements", v["shape"].dump()));
    }
    elements *= *n;
  }
  const Json* off = v.contains("data_offsets") ? &v["data_offsets"] : nullptr;
  if (off == nullptr || !off->is_array() || off->size() != 2) {
    return error("data_offsets", "missing or not a [begin, end] pair");
  }
  const std::optional<int64_t> begin = NonNegative((*off)[0]), end = NonNegative((*off)[1]);
  if (!begin || !end || *begin > *end) {
    return error("data_offsets",
                 fmt::format("{} is not a [begin, end] pair with begin ≤ end", off->dump()));
  }
  e.begin = *begin, e.end = *end;
  if (e.end > data_bytes) {
    return error("data_offsets", fmt::format("[{}, {}] runs past the data section ({} bytes)",
                                             e.begin, e.end, data_bytes));
  }
  if (elements * e.element_size != e.end - e.begin) {
    return error("data_offsets", fmt::format("[{}, {}] spans {} bytes, but shape {} of {} needs {}",
                                             e.begin, e.end, e.end - e.begin, ShapeText(e.shape),
                                             e.dtype_name, elements * e.element_size));
  }
  return e;
}

}  // namespace

// ---- MappedFile.

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("{}: no such file", path);
    return IoError("{}: cannot open: {}", path, std::strerror(errno));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError("{}: not a regular file", path);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* p = nullptr;
  if (size > 0) {
    p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return IoError("{}: cannot map {} bytes: {}", path, size, std::strerror(err));
    }
  }
  ::close(fd);  // the mapping keeps the file
  return std::unique_ptr<MappedFile>(new MappedFile(path, static_cast<const uint8_t*>(p), size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

// ---- Reader.

StatusOr<SafetensorsReader> SafetensorsReader::Open(const std::string& path) {
  SafetensorsReader r;
  r.path_ = path;
  std::error_code ec;
  if (!fs::exists(path, ec)) return NotFound("{}: no such file or directory", path);
  if (!fs::is_directory(path, ec)) {
    RETURN_IF_ERROR(r.AddFile(path, nullptr));
    return r;
  }
  const fs::path dir(path);
  if (fs::exists(dir / kIndexFile, ec)) {
    const std::string index = (dir / kIndexFile).string();
    ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> f, MappedFile::Open(index));
    Json j;
    try {
      j = Json::parse(f->data(), f->data() + f->size());
    } catch (const Json::exception& e) {
      return DataLoss("{}: not valid JSON: {}", index, e.what());
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      return DataLoss("{}: field 'weight_map': missing or not a map of tensor → shard file", index);
    }
    // Shards in order of first mention, each with the tensors the index puts there.
    std::vector<std::pair<std::string, std::vector<std::string>>> shards;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) {
        return DataLoss("{}: field 'weight_map.{}': expected a shard file name, got {}", index,
                        name, file.dump());
      }
      const std::string shard = file.get<std::string>();
      const fs::path rel(shard);
      if (shard.empty() || rel.is_absolute() ||
          std::find(rel.begin(), rel.end(), fs::path("..")) != rel.end()) {
        return DataLoss(
            "{}: field 'weight_map.{}': shard '{}' is not a file in the checkpoint "
            "directory",
            index, name, shard);
      }
      auto it = std::find_if(shards.begin(), shards.end(),
                             [&](const auto& s) { return s.first == shard; });
      if (it == shards.end()) it = shards.insert(shards.end(), {shard, {}});
      it->second.push_back(name);
    }
    if (shards.empty()) return DataLoss("{}: field 'weight_map': names no tensors", index);
    for (const auto& [shard, names] : shards) {
      Status s = r.AddFile((dir / shard).string(), &names);
      if (!s.ok()) return s.WithPrefix(fmt::format("{}: shard '{}'", index, shard));
    }
    return r;
  }
  if (fs::exists(dir / kSingleFile, ec)) {
    RETURN_IF_ERROR(r.AddFile((dir / kSingleFile).string(), nullptr));
    return r;
  }
  return NotFound("{}: neither {} nor {} in this directory", path, kSingleFile, kIndexFile);
}

Status SafetensorsReader::AddFile(const std::string& file, const std::vector<std::string>* only) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> f, MappedFile::Open(file));
  const uint64_t size = f->size();
  if (size < 8) {
    return DataLoss("{}: {} bytes, too short for the 8-byte header length", file, size);
  }
  uint64_t n = 0;
  std::memcpy(&n, f->data(), 8);
  if (n > size - 8) {
    return DataLoss("{}: header length {} runs past the end of the file ({} bytes)", file, n, size);
  }
  if (n > kMaxHeaderBytes) {
    return DataLoss("{}: header length {} exceeds the format's limit of {} bytes", file, n,
                    kMaxHeaderBytes);
  }
  const char* text = reinterpret_cast<const char*>(f->data() + 8);
  Json header;
  try {
    header = Json::parse(text, text + n);
  } catch (const Json::exception& e) {
    return DataLoss("{}: header is not valid JSON: {}", file, e.what());
  }
  if (!header.is_object()) return DataLoss("{}: header is not a JSON object", file);
  const int64_t data_bytes = static_cast<int64_t>(size - 8 - n);
  const size_t index = files_.size();
  std::vector<SafetensorsEntry> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) return DataLoss("{}: field '__metadata__': expected a map", file);
      std::map<std::string, std::string> meta;
      for (const auto& [k, s] : v.items()) {
        if (!s.is_string()) {
          return DataLoss("{}: field '__metadata__.{}': expected a string, got {}", file, k,
                          s.dump());
        }
        meta[k] = s.get<std::string>();
      }
      if (files_.empty()) metadata_ = std::move(meta);
      continue;
    }
    ASSIGN_OR_RETURN(SafetensorsEntry e, ParseEntry(file, name, v, data_bytes));
    e.file = index;
    entries.push_back(std::move(e));
  }
  // No two tensors may share bytes.
  std::vector<const SafetensorsEntry*> by_offset;
  for (const SafetensorsEntry& e : entries) {
    if (e.end > e.begin) by_offset.push_back(&e);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const auto* a, const auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorsEntry& a = *by_offset[i - 1];
    const SafetensorsEntry& b = *by_offset[i];
    if (b.begin < a.end) {
      return DataLoss(
          "{}: tensor '{}': field 'data_offsets': [{}, {}] overlaps tensor '{}' [{}, {}]", file,
          b.name, b.begin, b.end, a.name, a.begin, a.end);
    }
  }
  if (only != nullptr) {
    std::set<std::string> wanted(only->begin(), only->end());
    std::erase_if(entries, [&](const SafetensorsEntry& e) { return !wanted.count(e.name); });
    for (const std::string& name : *only) {
      if (!std::any_of(entries.begin(), entries.end(),
                       [&](const SafetensorsEntry& e) { return e.name == name; })) {
        return DataLoss("{}: no tensor '{}', which the index puts in this file", file, name);
      }
    }
  }
  for (SafetensorsEntry& e : entries) {
    const std::string name = e.name;
    entries_[name] = std::move(e);
  }
  files_.push_back(std::move(f));
  data_start_.push_back(static_cast<int64_t>(8 + n));
  return Status::Ok();
}

std::vector<std::string> SafetensorsReader::Names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

const SafetensorsEntry* SafetensorsReader::Find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

StatusOr<const SafetensorsEntry*> SafetensorsReader::Get(const std::string& name) const {
  const SafetensorsEntry* e = Find(name);
  if (e == nullptr) return NotFound("{}: no tensor '{}'", path_, name);
  return e;
}

StatusOr<std::vector<float>> SafetensorsReader::Read(const std::string& name) const {
  ASSIGN_OR_RETURN(const SafetensorsEntry* e, Get(name));
  if (e->dtype == SafetensorsDtype::kOther) {
    return InvalidArgument("{}: tensor '{}': dtype {} cannot be read as fp32 (F32, BF16, F16 can)",
                           FileOf(*e), name, e->dtype_name);
  }
  const int64_t n = (e->end - e->begin) / e->element_size;
  std::vector<float> out(static_cast<size_t>(n));
  Convert(files_[e->file]->data() + data_start_[e->file] + e->begin, e->dtype, n, out.data());
  return out;
}

Status SafetensorsReader::ReadBlock(const std::string& name, Block b, bool transpose, float* out,
                                    int64_t ld) const {
  ASSIGN_OR_RETURN(const SafetensorsEntry* e, Get(name));
  const std::string& file = FileOf(*e);
  if (e->dtype == SafetensorsDtype::kOther) {
    return InvalidArgument("{}: tensor '{}': dtype {} cannot be read as fp32 (F32, BF16, F16 can)",
                           file, name, e->dtype_name);
  }
  if (e->shape.size() > 2) {
    return InvalidArgument(
        "{}: tensor '{}': shape {} has rank {}; blocks are read from vectors "
        "and matrices only",
        file, name, ShapeText(e->shape), e->shape.size());
  }
  const int64_t rows = e->shape.size() == 2 ? e->shape[0] : 1;
  const int64_t cols = e->shape.empty() ? 1 : e->shape.back();
  if (b.row < 0 || b.rows < 0 || b.col < 0 || b.cols < 0 || b.row + b.rows > rows ||
      b.col + b.cols > cols) {
    return InvalidArgument(
        "{}: tensor '{}': rows [{}, {}) × columns [{}, {}) lie outside its "
        "shape {}",
        file, name, b.row, b.row + b.rows, b.col, b.col + b.cols, ShapeText(e->shape));
  }
  const uint8_t* base = files_[e->file]->data() + data_start_[e->file] + e->begin;
  const int64_t es = e->element_size;
  auto row_at = [&](int64_t i) { return base + ((b.row + i) * cols + b.col) * es; };
  if (!transpose) {
    for (int64_t i = 0; i < b.rows; ++i) Convert(row_at(i), e->dtype, b.cols, out + i * ld);
    return Status::Ok();
  }
  // Transposed: convert a band of rows, then write it out column by column, so
  // both the converted band and each output row are touched contiguously.
  constexpr int64_t kBand = 32;
  std::vector<float> band(static_cast<size_t>(kBand * b.cols));
  for (int64_t i0 = 0; i0 < b.rows; i0 += kBand) {
    const int64_t n = std::min(kBand, b.rows - i0);
    for (int64_t i = 0; i < n; ++i) Convert(row_at(i0 + i), e->dtype, b.cols, &band[i * b.cols]);
    for (int64_t j = 0; j < b.cols; ++j) {
      float* dst = out + j * ld + i0;
      for (int64_t i = 0; i < n; ++i) dst[i] = band[static_cast<size_t>(i * b.cols + j)];
    }
  }
  return Status::Ok();
}

Status SafetensorsReader::CheckFinite(const std::string& name) const {
  ASSIGN_OR_RETURN(const SafetensorsEntry* e, Get(name));
  if (e->dtype == SafetensorsDtype::kOther) return Status::Ok();
  const uint8_t* base = files_[e->file]->data() + data_start_[e->file] + e->begin;
  const int64_t n = (e->end - e->begin) / e->element_size;
  // Non-finite: every exponent bit set (the sign and mantissa do not matter).
  auto bad = [&](int64_t i) {
    if (e->dtype == SafetensorsDtype::kF32) {
      uint32_t bits;
      std::memcpy(&bits, base + i * 4, 4);
      return (bits & 0x7f800000u) == 0x7f800000u;
    }
    uint16_t bits;
    std::memcpy(&bits, base + i * 2, 2);
    return e->dtype == SafetensorsDtype::kBF16 ? (bits & 0x7f80u) == 0x7f80u
                                               : (bits & 0x7c00u) == 0x7c00u;
  };
  int64_t count = 0, first = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (bad(i)) {
      if (count++ == 0) first = i;
    }
  }
  if (count == 0) return Status::Ok();
  return InvalidArgument(
      "{}: tensor '{}': {} of its {} values are NaN or infinite (the first at element {}); "
      "weights must be finite",
      FileOf(*e), name, count == n ? std::string("all") : std::to_string(count), n, first);
}

// ---- Writer.

StatusOr<std::string> EncodeSafetensors(const std::vector<SafetensorsTensor>& tensors,
                                        const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string data;
  for (const SafetensorsTensor& t : tensors) {
    if (t.name == "__metadata__" || header.contains(t.name)) {
      return InvalidArgument("tensor '{}': duplicate or reserved name", t.name);
    }
    if (t.dtype == SafetensorsDtype::kOther) {
      return InvalidArgument("tensor '{}': only F32, BF16 and F16 are written", t.name);
    }
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    if (n != static_cast<int64_t>(t.values.size())) {
      return InvalidArgument("tensor '{}': {} values for shape {}", t.name, t.values.size(),
                             ShapeText(t.shape));
    }
    const size_t begin = data.size();
    data.resize(begin + static_cast<size_t>(n * DtypeSize(t.dtype)));
    char* dst = data.data() + begin;
    if (t.dtype == SafetensorsDtype::kF32) {
      std::memcpy(dst, t.values.data(), static_cast<size_t>(n) * 4);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const float v = t.values[static_cast<size_t>(i)];
        const uint16_t bits = t.dtype == SafetensorsDtype::kBF16 ? FloatToBf16(v) : FloatToF16(v);
        std::memcpy(dst + 2 * i, &bits, 2);
      }
    }
    header[t.name] = {
        {"dtype", DtypeName(t.dtype)}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t n = text.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + text + data;
}

Status WriteSafetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  ASSIGN_OR_RETURN(std::string bytes, EncodeSafetensors(tensors, metadata));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return IoError("{}: cannot write", path);
  return Status::Ok();
}

Status WriteSafetensorsCheckpoint(const std::string& dir,
                                  const std::vector<SafetensorsTensor>& tensors, int shards) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError("{}: cannot create directory: {}", dir, ec.message());
  const fs::path d(dir);
  shards = std::clamp<int>(shards, 1, std::max<int>(1, static_cast<int>(tensors.size())));
  if (shards == 1) {
    return WriteSafetensors((d / kSingleFile).string(), tensors, {{"format", "pt"}});
  }
  int64_t total = 0;
  for (const SafetensorsTensor& t : tensors) total += t.values.size() * DtypeSize(t.dtype);
  // Deal tensors in order; shard k closes once the bytes so far reach (k + 1)/shards
  // of the total, keeping at least one tensor for each remaining shard.
  std::vector<std::vector<SafetensorsTensor>> parts(static_cast<size_t>(shards));
  int64_t so_far = 0;
  size_t k = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const size_t left = tensors.size() - i;
    const bool must_move = !parts[k].empty() && left <= static_cast<size_t>(shards) - 1 - k;
    const bool full = !parts[k].empty() && so_far * shards >= total * static_cast<int64_t>(k + 1);
    if ((must_move || full) && k + 1 < parts.size()) ++k;
    parts[k].push_back(tensors[i]);
    so_far += tensors[i].values.size() * DtypeSize(tensors[i].dtype);
  }
  Json weight_map = Json::object();
  for (int s = 0; s < shards; ++s) {
    const std::string name = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards);
    RETURN_IF_ERROR(
        WriteSafetensors((d / name).string(), parts[static_cast<size_t>(s)], {{"format", "pt"}}));
    for (const SafetensorsTensor& t : parts[static_cast<size_t>(s)]) weight_map[t.name] = name;
  }
  const Json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  std::ofstream out(d / kIndexFile, std::ios::trunc);
  out << index.dump(2) << "\n";
  out.close();
  if (!out) return IoError("{}: cannot write", (d / kIndexFile).string());
  return Status::Ok();
}

}  // namespace shardscope::runtime
