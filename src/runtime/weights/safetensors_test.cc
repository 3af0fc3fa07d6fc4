// The safetensors reader and writer: conversions against hand-derived bit
// patterns, whole and block reads (transposed too) of every float dtype, sharded
// checkpoints, and each malformed case failing with the file, tensor and field.
#include "runtime/weights/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "testing/scratch_dir.h"

namespace shardscope::runtime {
namespace {

namespace fs = std::filesystem;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = scratch_.path(); }

  // A file of the given header text and data bytes; the length prefix is the header's
  // size unless `length` says otherwise.
  std::string Raw(const std::string& name, const std::string& header, const std::string& data,
                  uint64_t length = std::numeric_limits<uint64_t>::max()) {
    const uint64_t n = length == std::numeric_limits<uint64_t>::max() ? header.size() : length;
    std::string bytes(8, '\0');
    std::memcpy(bytes.data(), &n, 8);
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes << header << data;
    return path;
  }

  // Opens `path` expecting failure; returns the message.
  std::string OpenError(const std::string& path) {
    auto r = SafetensorsReader::Open(path);
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.status().message();
  }

  testing::ScratchDir scratch_{"safetensors"};
  fs::path dir_;
};

// Hand-derived: BF16 is the top half of an fp32; F16 is 1 sign, 5 exponent (bias
// 15) and 10 mantissa bits, subnormals mant · 2^−24.
TEST(SafetensorsConversionTest, Bf16AndF16ToFloatMatchHandValues) {
  EXPECT_EQ(Bf16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(Bf16ToFloat(0xC040), -3.0f);
  EXPECT_EQ(Bf16ToFloat(0x4049), 3.140625f);  // 1.5703125 · 2
  EXPECT_EQ(Bf16ToFloat(0x0001), std::ldexp(1.0f, -133));
  EXPECT_EQ(Bf16ToFloat(0xFF80), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Bf16ToFloat(0x7FC0)));

  EXPECT_EQ(F16ToFloat(0x3C00), 1.0f);
  EXPECT_EQ(F16ToFloat(0xC000), -2.0f);
  EXPECT_EQ(F16ToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(F16ToFloat(0x3555), 0.333251953125f);  // (1 + 341/1024) / 4
  EXPECT_EQ(F16ToFloat(0x0400), std::ldexp(1.0f, -14));
  EXPECT_EQ(F16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(F16ToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(F16ToFloat(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(F16ToFloat(0x8000)));
  EXPECT_TRUE(std::isnan(F16ToFloat(0x7E00)));
}

TEST(SafetensorsConversionTest, FloatToBf16AndF16RoundToNearestEven) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBf16(3.14159265f), 0x4049);
  EXPECT_EQ(FloatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie → even (down)
  EXPECT_EQ(FloatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie → even (up)
  EXPECT_EQ(FloatToBf16(-3.0f), 0xC040);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::nanf("")))));

  EXPECT_EQ(FloatToF16(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(FloatToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToF16(65519.0f), 0x7BFF);
  EXPECT_EQ(FloatToF16(65520.0f), 0x7C00);  // halfway to 65536: even is infinity
  EXPECT_EQ(FloatToF16(-2.0f), 0xC000);
  EXPECT_EQ(FloatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie → even
  EXPECT_EQ(FloatToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie → even
  EXPECT_EQ(FloatToF16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(FloatToF16(std::ldexp(1.0f, -25)), 0x0000);     // tie → even (zero)
  EXPECT_EQ(FloatToF16(std::ldexp(3.0f, -26)), 0x0001);     // 0.75 ulp → 1
  EXPECT_EQ(FloatToF16(std::ldexp(1023.0f, -24)), 0x03FF);  // largest subnormal
  EXPECT_EQ(FloatToF16(std::ldexp(2047.0f, -25)), 0x0400);  // rounds up to 2^−14
  EXPECT_EQ(FloatToF16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(FloatToF16(std::nanf("")) & 0x7E00, 0x7E00);
}

// Every 16-bit value is exact in fp32, so each non-NaN pattern must survive the trip.
TEST(SafetensorsConversionTest, EverySixteenBitPatternRoundTrips) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    const float h = F16ToFloat(bits), bf = Bf16ToFloat(bits);
    if (!std::isnan(h)) {
      ASSERT_EQ(FloatToF16(h), bits) << std::hex << b;
    }
    if (!std::isnan(bf)) {
      ASSERT_EQ(FloatToBf16(bf), bits) << std::hex << b;
    }
  }
}

TEST_F(SafetensorsTest, WritesAndReadsEveryFloatDtypeWholeAndInBlocks) {
  // m = [[0, 1, 2], [3, 4, 5]] in F32; the same values in BF16 and F16 (exact there).
  const std::vector<float> m = {0, 1, 2, 3, 4, 5};
  std::vector<SafetensorsTensor> ts = {{"m32", {2, 3}, m, SafetensorsDtype::kF32},
                                       {"m16", {2, 3}, m, SafetensorsDtype::kF16},
                                       {"mb16", {2, 3}, m, SafetensorsDtype::kBF16},
                                       {"v", {3}, {0.5f, -1.5f, 2.25f}, SafetensorsDtype::kBF16}};
  const std::string path = (dir_ / "a.safetensors").string();
  ASSERT_TRUE(WriteSafetensors(path, ts, {{"format", "pt"}}).ok());
  auto r = SafetensorsReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Names(), (std::vector<std::string>{"m16", "m32", "mb16", "v"}));
  EXPECT_EQ(r->metadata().at("format"), "pt");
  const SafetensorsEntry* e = r->Find("m16");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->dtype, SafetensorsDtype::kF16);
  EXPECT_EQ(e->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(e->end - e->begin, 12);
  EXPECT_EQ(r->Find("m32")->dtype, SafetensorsDtype::kF32);
  EXPECT_EQ(r->Find("mb16")->dtype, SafetensorsDtype::kBF16);
  StatusOr<std::string> encoded = EncodeSafetensors({ts[0], ts[1], ts[2]});
  ASSERT_TRUE(encoded.ok());
  for (const char* dtype : {R"("dtype":"F32")", R"("dtype":"F16")", R"("dtype":"BF16")"}) {
    EXPECT_NE(encoded->find(dtype), std::string::npos) << dtype;  // the names the header carries
  }
  for (const char* name : {"m32", "m16", "mb16"}) {
    auto all = r->Read(name);
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(*all, m) << name;
    // Rows [0, 2) × columns [1, 3): [[1, 2], [4, 5]].
    std::vector<float> block(4, -1);
    ASSERT_TRUE(r->ReadBlock(name, {0, 2, 1, 2}, false, block.data(), 2).ok());
    EXPECT_EQ(block, (std::vector<float>{1, 2, 4, 5})) << name;
    // Transposed, with a wider output row: out[j][i] = m[i][j] for rows [1, 2), all columns.
    std::vector<float> t(6, -1);
    ASSERT_TRUE(r->ReadBlock(name, {1, 1, 0, 3}, true, t.data(), 2).ok());
    EXPECT_EQ(t, (std::vector<float>{3, -1, 4, -1, 5, -1})) << name;
  }
  std::vector<float> v(2);
  ASSERT_TRUE(r->ReadBlock("v", {0, 1, 1, 2}, false, v.data(), 2).ok());
  EXPECT_EQ(v, (std::vector<float>{-1.5f, 2.25f}));
}

TEST_F(SafetensorsTest, TransposedBlockAcrossManyBands) {
  // 70 rows (three bands of 32) × 5 columns; value 10·i + j.
  std::vector<float> m(70 * 5);
  for (int i = 0; i < 70; ++i) {
    for (int j = 0; j < 5; ++j) m[i * 5 + j] = static_cast<float>(10 * i + j);
  }
  const std::string path = (dir_ / "b.safetensors").string();
  ASSERT_TRUE(WriteSafetensors(path, {{"m", {70, 5}, m, SafetensorsDtype::kF32}}).ok());
  auto r = SafetensorsReader::Open(path);
  ASSERT_TRUE(r.ok());
  std::vector<float> t(3 * 66);
  ASSERT_TRUE(r->ReadBlock("m", {2, 66, 1, 3}, true, t.data(), 66).ok());
  for (int j = 0; j < 3; ++j) {
    for (int i = 0; i < 66; ++i) ASSERT_EQ(t[j * 66 + i], 10 * (i + 2) + (j + 1));
  }
}

TEST_F(SafetensorsTest, ShardedCheckpointDirectory) {
  std::vector<SafetensorsTensor> ts;
  for (int k = 0; k < 5; ++k) {
    ts.push_back({"t" + std::to_string(k), {2, 2}, {1.0f * k, 2, 3, 4}, SafetensorsDtype::kF32});
  }
  const std::string dir = (dir_ / "ckpt").string();
  ASSERT_TRUE(WriteSafetensorsCheckpoint(dir, ts, 3).ok());
  EXPECT_TRUE(fs::exists(dir_ / "ckpt" / "model.safetensors.index.json"));
  EXPECT_TRUE(fs::exists(dir_ / "ckpt" / "model-00003-of-00003.safetensors"));
  auto r = SafetensorsReader::Open(dir);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->Names().size(), 5u);
  for (int k = 0; k < 5; ++k) {
    auto v = r->Read("t" + std::to_string(k));
    ASSERT_TRUE(v.ok());
    EXPECT_EQ((*v)[0], 1.0f * k);
  }
  // The single-file form of a directory.
  const std::string one = (dir_ / "one").string();
  ASSERT_TRUE(WriteSafetensorsCheckpoint(one, ts, 1).ok());
  auto r1 = SafetensorsReader::Open(one);
  ASSERT_TRUE(r1.ok()) << r1.status().message();
  EXPECT_EQ(r1->FileOf(*r1->Find("t4")), (dir_ / "one" / "model.safetensors").string());
}

TEST_F(SafetensorsTest, WriterRefusesBadInput) {
  EXPECT_FALSE(EncodeSafetensors({{"a", {2, 2}, {1, 2, 3}, SafetensorsDtype::kF32}}).ok());
  EXPECT_FALSE(EncodeSafetensors({{"a", {1}, {1}, SafetensorsDtype::kF32},
                                  {"a", {1}, {1}, SafetensorsDtype::kF32}})
                   .ok());
  EXPECT_FALSE(EncodeSafetensors({{"a", {1}, {1}, SafetensorsDtype::kOther}}).ok());
}

TEST_F(SafetensorsTest, MalformedHeadersNameFileTensorAndField) {
  const std::string f32x2 = R"("dtype":"F32","shape":[2])";
  const std::string data(16, '\0');
  struct Case {
    std::string header;
    uint64_t length;
    std::string expect;
  };
  const uint64_t kSame = std::numeric_limits<uint64_t>::max();
  const std::vector<Case> cases = {
      {"{}", 1000, "header length 1000 runs past the end of the file (26 bytes)"},
      {R"({"a": {)", kSame, "header is not valid JSON"},
      {"[1, 2]", kSame, "header is not a JSON object"},
      {R"({"a": {)" + f32x2 + R"(,"data_offsets":[8,24]}})", kSame,
       "tensor 'a': field 'data_offsets': [8, 24] runs past the data section (16 bytes)"},
      {R"({"a": {)" + f32x2 + R"(,"data_offsets":[0,8]}, "b": {)" + f32x2 +
           R"(,"data_offsets":[4,12]}})",
       kSame, "tensor 'b': field 'data_offsets': [4, 12] overlaps tensor 'a' [0, 8]"},
      {R"({"a": {"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", kSame,
       "tensor 'a': field 'data_offsets': [0, 8] spans 8 bytes, but shape [3] of F32 needs 12"},
      {R"({"a": {"dtype":"F17","shape":[2],"data_offsets":[0,8]}})", kSame,
       "tensor 'a': field 'dtype': unknown dtype 'F17'"},
      {R"({"a": {"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", kSame,
       "tensor 'a': field 'shape': -2 is not a non-negative integer"},
      {R"({"a": {"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", kSame,
       "tensor 'a': field 'data_offsets': [8,0] is not a [begin, end] pair"},
      {R"({"a": {"dtype":"F32","shape":[2]}})", kSame, "tensor 'a': field 'data_offsets': missing"},
      {R"({"a": 5})", kSame, "tensor 'a': expected an object"},
      {R"({"__metadata__": {"k": 1}})", kSame, "field '__metadata__.k': expected a string"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const std::string path =
        Raw("c" + std::to_string(i) + ".safetensors", c.header, data, c.length);
    const std::string msg = OpenError(path);
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "case " << i << ": " << msg;
  }
  const std::string tiny = (dir_ / "tiny.safetensors").string();
  std::ofstream(tiny) << "abc";
  EXPECT_NE(OpenError(tiny).find("3 bytes, too short"), std::string::npos);
}

// issue 35: an all-NaN checkpoint generated token 0 silently; a tensor holding a
// NaN or an infinity in any float dtype is named, with how many and where.
TEST_F(SafetensorsTest, CheckFiniteNamesATensorWithNaNOrInfinity) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<SafetensorsTensor> ts = {{"fine", {2}, {1, -2}, SafetensorsDtype::kBF16},
                                       {"nan32", {3}, {nan, nan, nan}, SafetensorsDtype::kF32},
                                       {"inf16", {3}, {0, -inf, 1}, SafetensorsDtype::kF16},
                                       {"nanb16", {2, 2}, {1, 2, 3, nan}, SafetensorsDtype::kBF16}};
  const std::string path = (dir_ / "nan.safetensors").string();
  ASSERT_TRUE(WriteSafetensors(path, ts).ok());
  auto r = SafetensorsReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->CheckFinite("fine").ok());
  EXPECT_EQ(r->CheckFinite("nan32").message(),
            path +
                ": tensor 'nan32': all of its 3 values are NaN or infinite (the first at "
                "element 0); weights must be finite");
  EXPECT_EQ(r->CheckFinite("inf16").message(),
            path +
                ": tensor 'inf16': 1 of its 3 values are NaN or infinite (the first at "
                "element 1); weights must be finite");
  EXPECT_NE(r->CheckFinite("nanb16").message().find("1 of its 4 values"), std::string::npos);
  EXPECT_EQ(r->CheckFinite("nope").code(), StatusCode::kNotFound);
}

TEST_F(SafetensorsTest, ReadErrorsNameTheTensor) {
  const std::string path = Raw("r.safetensors",
                               R"({"i": {"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
                               R"( "c": {"dtype":"F32","shape":[1,1,2],"data_offsets":[8,16]}})",
                               std::string(16, '\0'));
  auto r = SafetensorsReader::Open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto missing = r->Read("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no tensor 'nope'"), std::string::npos);
  auto ints = r->Read("i");
  ASSERT_FALSE(ints.ok());
  EXPECT_NE(ints.status().message().find("tensor 'i': dtype I64 cannot be read as fp32"),
            std::string::npos);
  float out[4];
  Status rank3 = r->ReadBlock("c", {0, 1, 0, 1}, false, out, 1);
  EXPECT_NE(rank3.message().find("shape [1, 1, 2] has rank 3"), std::string::npos)
      << rank3.message();
  auto whole = r->Read("c");  // whole reads take any rank
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->size(), 2u);
  ASSERT_TRUE(WriteSafetensors(path, {{"m", {2, 2}, {1, 2, 3, 4}, SafetensorsDtype::kF32}}).ok());
  auto r2 = SafetensorsReader::Open(path);
  ASSERT_TRUE(r2.ok());
  Status outside = r2->ReadBlock("m", {1, 2, 0, 2}, false, out, 2);
  EXPECT_NE(outside.message().find("tensor 'm': rows [1, 3) × columns [0, 2) lie outside its "
                                   "shape [2, 2]"),
            std::string::npos)
      << outside.message();
}

TEST_F(SafetensorsTest, BadCheckpointDirectories) {
  EXPECT_EQ(SafetensorsReader::Open((dir_ / "absent").string()).status().code(),
            StatusCode::kNotFound);
  fs::create_directories(dir_ / "empty");
  EXPECT_NE(OpenError((dir_ / "empty").string()).find("neither model.safetensors nor"),
            std::string::npos);

  fs::create_directories(dir_ / "idx");
  const fs::path index = dir_ / "idx" / "model.safetensors.index.json";
  std::ofstream(index) << "{not json";
  EXPECT_NE(OpenError((dir_ / "idx").string()).find("not valid JSON"), std::string::npos);
  std::ofstream(index, std::ios::trunc) << R"({"weight_map": {"a": "../x.safetensors"}})";
  EXPECT_NE(OpenError((dir_ / "idx").string())
                .find("field 'weight_map.a': shard '../x.safetensors' is not a file"),
            std::string::npos);
  std::ofstream(index, std::ios::trunc) << R"({"weight_map": {"a": "s1.safetensors"}})";
  EXPECT_NE(OpenError((dir_ / "idx").string()).find("s1.safetensors: no such file"),
            std::string::npos);
  ASSERT_TRUE(WriteSafetensors((dir_ / "idx" / "s1.safetensors").string(),
                               {{"b", {1}, {1}, SafetensorsDtype::kF32}})
                  .ok());
  const std::string msg = OpenError((dir_ / "idx").string());
  EXPECT_NE(msg.find("no tensor 'a', which the index puts in this file"), std::string::npos) << msg;
}

}  // namespace
}  // namespace shardscope::runtime
