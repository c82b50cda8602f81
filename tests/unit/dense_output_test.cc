// Dense output types and Matryoshka truncation. The expected values are
// numpy's, from sentence-transformers' quantize_embeddings formulas on
// float32 arrays and numpy's float16 cast (computed once with Debian's
// python3-numpy; the script is in the comment of each table).
#include "wire/dense_output.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "wire/json_writer.h"

namespace shoal::wire {
namespace {

// v = np.array([0.5,-0.25,0.9,-1,1,0,-0.5,0.003,-0.003,1.5,-2,0.1], np.float32)
const std::vector<float> kVector = {0.5f, -0.25f, 0.9f, -1.0f, 1.0f, 0.0f, -0.5f, 0.003f, -0.003f, 1.5f, -2.0f, 0.1f};

TEST(DenseOutput, QuantizesAsSentenceTransformers) {
  // ((np.clip(v,-1,1) + 1) / (np.float32(2) / 255) - 128).astype(np.int8), and without - 128 as uint8
  EXPECT_EQ(QuantizeDense(kVector, DenseType::kInt8),
            (std::vector<int32_t>{63, -32, 114, -128, 126, 0, -64, 0, 0, 126, -128, 12}));
  EXPECT_EQ(QuantizeDense(kVector, DenseType::kUint8),
            (std::vector<int32_t>{191, 95, 242, 0, 254, 127, 63, 127, 127, 254, 0, 140}));
  // np.packbits(v > 0) - 128 as int8; np.packbits(v > 0)
  EXPECT_EQ(QuantizeDense(kVector, DenseType::kBinary), (std::vector<int32_t>{41, -48}));
  EXPECT_EQ(QuantizeDense(kVector, DenseType::kUbinary), (std::vector<int32_t>{169, 80}));
}

TEST(DenseOutput, RoundsToHalfAsNumpy) {
  // np.array([...], np.float32).astype(np.float16).astype(np.float32)
  const std::pair<float, float> cases[] = {
      {0.1f, 0.0999755859375f},       {1.0f / 3, 0.333251953125f},     {65504.0f, 65504.0f},
      {65519.9f, 65504.0f},           {1e-5f, 1.0013580322265625e-05f}, {6e-8f, 5.960464477539063e-08f},
      {2.98e-8f, 0.0f},               {2049.0f, 2048.0f},               {2051.0f, 2052.0f},
      {1e-7f, 1.1920928955078125e-07f}, {-3.0e-5f, -2.9981136322021484e-05f}};
  for (const auto& [in, want] : cases) EXPECT_EQ(RoundToHalf(in), want) << in;
  EXPECT_EQ(RoundToHalf(65520.0f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(RoundToHalf(-0.0f)));
  EXPECT_TRUE(std::isnan(RoundToHalf(std::numeric_limits<float>::quiet_NaN())));
}

TEST(DenseOutput, TruncatesAndRenormalizes) {
  std::vector<float> v = {3, 4, 12};
  ASSERT_TRUE(TruncateDense(2, true, &v).ok());
  EXPECT_EQ(v, (std::vector<float>{0.6f, 0.8f}));
  std::vector<float> raw = {3, 4, 12};
  ASSERT_TRUE(TruncateDense(2, false, &raw).ok());
  EXPECT_EQ(raw, (std::vector<float>{3, 4}));
  std::vector<float> whole = {3, 4, 12};
  ASSERT_TRUE(TruncateDense(0, true, &whole).ok());
  EXPECT_EQ(whole.size(), 3u);
  Status s = TruncateDense(4, true, &whole);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("4 is more than the model's 3"), std::string::npos);
}

TEST(DenseOutput, NamesAndJson) {
  for (const char* name : {"float32", "float16", "int8", "uint8", "binary", "ubinary"}) {
    DenseType t;
    ASSERT_TRUE(ParseDenseType(name, &t)) << name;
    EXPECT_EQ(DenseTypeName(t), name);
  }
  DenseType t;
  EXPECT_TRUE(ParseDenseType("float", &t));
  EXPECT_EQ(t, DenseType::kFloat32);
  EXPECT_FALSE(ParseDenseType("int4", &t));

  std::string out;
  JsonWriter w(&out);
  WriteDenseJson({0.5f, -1.0f, 0.25f}, DenseType::kInt8, &w);
  EXPECT_EQ(out, "[63,-128,31]");
  EXPECT_FALSE(DenseOutput{}.reshapes());
  EXPECT_FALSE((DenseOutput{0, {DenseType::kFloat32}}).reshapes());
  EXPECT_TRUE((DenseOutput{0, {DenseType::kInt8}}).reshapes());
  EXPECT_TRUE((DenseOutput{8, {}}).reshapes());
}

}  // namespace
}  // namespace shoal::wire
