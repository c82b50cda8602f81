// TfjsWeights: the real USE-Lite manifest (offsets of
// /work/shared/notes/use-lite-forward.md §4) and synthetic manifests for the
// error paths and a tensor straddling a shard border.
#include "runtime/native/use_lite/tfjs_weights.h"
#include "use_lite_dist.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace shoal::native {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() /
            ("shoal_tfjs_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path_ / name, std::ios::binary) << bytes;
    return (path_ / name).string();
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

std::string Floats(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

// Two float32 tensors, [3] then [2,2]; the second straddles the shard border
// (shard 1 holds 5 floats, shard 2 the last 2).
constexpr const char* kManifest = R"({"modelTopology": {}, "weightsManifest": [{
  "paths": ["s1", "s2"],
  "weights": [
    {"name": "a", "shape": [3], "dtype": "float32"},
    {"name": "b", "shape": [2, 2], "dtype": "float32"}]}]})";

TEST(TfjsWeights, TensorStraddlingShardsReadsWhole) {
  TempDir dir;
  dir.Write("s1", Floats({1, 2, 3, 4, 5}));
  dir.Write("s2", Floats({6, 7}));
  std::string json = dir.Write("model.json", kManifest);
  auto w = TfjsWeights::Load(json);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ((*w)->size_bytes(), 28u);
  auto a = (*w)->Float32("a", {3});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(std::vector<float>(a->begin(), a->end()), (std::vector<float>{1, 2, 3}));
  auto b = (*w)->Float32("b", {2, 2});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(std::vector<float>(b->begin(), b->end()), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ((*w)->Find("b")->offset, 12u);
}

TEST(TfjsWeights, MissingModelJsonNamesTheFile) {
  TempDir dir;
  auto w = TfjsWeights::Load(dir.path() + "/model.json");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), Code::kModelLoadFailed);
  EXPECT_NE(w.status().message().find("model.json"), std::string::npos) << w.status().message();
}

TEST(TfjsWeights, MissingShardNamesTheShard) {
  TempDir dir;
  dir.Write("s1", Floats({1, 2, 3, 4, 5}));
  auto w = TfjsWeights::Load(dir.Write("model.json", kManifest));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("cannot open shard"), std::string::npos)
      << w.status().message();
  EXPECT_NE(w.status().message().find("s2"), std::string::npos);
}

TEST(TfjsWeights, ShortShardFails) {
  TempDir dir;
  dir.Write("s1", Floats({1, 2, 3, 4, 5}));
  dir.Write("s2", Floats({6}));
  auto w = TfjsWeights::Load(dir.Write("model.json", kManifest));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), Code::kModelLoadFailed);
  EXPECT_NE(w.status().message().find("short"), std::string::npos) << w.status().message();
  EXPECT_NE(w.status().message().find("24 bytes"), std::string::npos) << w.status().message();
}

TEST(TfjsWeights, LongShardFails) {
  TempDir dir;
  dir.Write("s1", Floats({1, 2, 3, 4, 5}));
  dir.Write("s2", Floats({6, 7, 8}));
  auto w = TfjsWeights::Load(dir.Write("model.json", kManifest));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("too long"), std::string::npos) << w.status().message();
}

TEST(TfjsWeights, UnknownDtypeFails) {
  TempDir dir;
  dir.Write("s1", Floats({1, 2}));
  auto w = TfjsWeights::Load(dir.Write("model.json", R"({"weightsManifest": [{"paths": ["s1"],
      "weights": [{"name": "c", "shape": [1], "dtype": "complex64"}]}]})"));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("unsupported dtype 'complex64'"), std::string::npos)
      << w.status().message();
}

TEST(TfjsWeights, QuantizedWeightsFail) {
  TempDir dir;
  dir.Write("s1", "ab");
  auto w = TfjsWeights::Load(dir.Write("model.json", R"({"weightsManifest": [{"paths": ["s1"],
      "weights": [{"name": "q", "shape": [2], "dtype": "float32",
                   "quantization": {"dtype": "uint8", "scale": 1, "min": 0}}]}]})"));
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("quantized"), std::string::npos) << w.status().message();
}

TEST(TfjsWeights, BadJsonIsAnErrorNotAnException) {
  TempDir dir;
  auto w = TfjsWeights::Load(dir.Write("model.json", R"({"weightsManifest": [{"paths": )"));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), Code::kModelLoadFailed);
  auto none = TfjsWeights::Parse(R"({"modelTopology": {}})", dir.path());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("weightsManifest"), std::string::npos);
  auto bad_shape = TfjsWeights::Parse(
      R"({"weightsManifest": [{"paths": ["s1"], "weights": [{"name": "x", "shape": [-1], "dtype": "float32"}]}]})",
      dir.path());
  ASSERT_FALSE(bad_shape.ok());
  EXPECT_NE(bad_shape.status().message().find("bad shape"), std::string::npos);
}

TEST(TfjsWeights, LookupChecksNameShapeAndDtype) {
  TempDir dir;
  dir.Write("s1", Floats({1, 2, 3, 4, 5}));
  dir.Write("s2", Floats({6, 7}));
  auto w = TfjsWeights::Load(dir.Write("model.json", kManifest));
  ASSERT_TRUE(w.ok());
  auto missing = (*w)->Float32("nope", {3});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no tensor named 'nope'"), std::string::npos);
  auto shape = (*w)->Float32("b", {4});
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("[2,2], expected [4]"), std::string::npos)
      << shape.status().message();
  auto dtype = (*w)->Int32("a", {3});
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.status().message().find("is float32, expected int32"), std::string::npos);
  EXPECT_EQ((*w)->Find("nope"), nullptr);
}

class TfjsWeightsPackage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kDist + "/model.json")) GTEST_SKIP() << "no USE-Lite package at " << kDist;
  }
};

TEST_F(TfjsWeightsPackage, ManifestMatchesTheNotes) {
  auto w = TfjsWeights::Load(kDist + "/model.json");
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ((*w)->size_bytes(), 27903656u);
  EXPECT_EQ((*w)->tensors().size(), 61u);
  const std::string a = "module_apply_default/Encoder_en/KonaTransformer/Encode/";
  struct Expect {
    std::string name;
    size_t offset;
  };
  for (const Expect& e : std::vector<Expect>{
           {"module/Embeddings_en", 18132056},
           {a + "TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", 26326104},
           {a + "TransformerStack/Layer_1/TransformerLayer/FFN/conv2/Tensordot/Reshape_1", 0},
           {"module/Encoder_en/hidden_layers/tanh_layer_0/bias", 27901600},
       }) {
    const TfjsTensor* t = (*w)->Find(e.name);
    ASSERT_NE(t, nullptr) << e.name;
    EXPECT_EQ(t->offset, e.offset) << e.name;
  }
  // The straddling tensor of the real package: the embedding table starts in
  // shard 5 (at 16 MiB + 1,354,840) and ends in shard 7.
  auto emb = (*w)->Float32("module/Embeddings_en", {8002, 256});
  ASSERT_TRUE(emb.ok());
  EXPECT_EQ(emb->size(), 8002u * 256u);
  auto max_len =
      (*w)->Int32("module_apply_default/Encoder_en/KonaTransformer/ClipToMaxLength/Less/y", {});
  ASSERT_TRUE(max_len.ok());
  EXPECT_EQ((*max_len)[0], 128);
  auto scale =
      (*w)->Float32(a + "TransformerStack/Layer_0/TransformerLayer/MultiheadAttention/mul/y", {});
  ASSERT_TRUE(scale.ok());
  EXPECT_EQ((*scale)[0], 0.125f);
}

}  // namespace
}  // namespace shoal::native
