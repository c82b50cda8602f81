// The native image towers (runtime/native/models/vision_transformer.h)
// against an independent float64 forward pass (tests/reference/
// vision_reference.py, torch tensor operations written from the
// architectures) on the seeded models scripts/make-test-vision-models
// writes: CLIP's vision model with its projection (F32), SigLIP's with its
// attention-pooling head (BF16 weights) and a ViT image classifier (F16). Images of several sizes go through the model's
// own image processor (image/processor.h, itself checked against PIL and
// numpy in tests/unit/image_test.cc) and run as one packed batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "image/processor.h"
#include "runtime/native/models/vision_transformer.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json ReadJson(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

// Seeded images: gradients with noise, of sizes the processor must resize
// and (for CLIP) crop.
std::vector<image::Image> SeededImages() {
  std::mt19937 rng(25);
  std::vector<image::Image> out;
  for (auto [w, h] : {std::pair{50u, 40u}, {32u, 32u}, {17u, 61u}}) {
    image::Image img = image::BlankImage(w, h);
    for (uint32_t y = 0; y < h; ++y) {
      for (uint32_t x = 0; x < w; ++x) {
        uint8_t* p = img.Pixel(x, y);
        p[0] = static_cast<uint8_t>(x * 255 / w);
        p[1] = static_cast<uint8_t>(y * 255 / h);
        p[2] = static_cast<uint8_t>(rng() % 256);
      }
    }
    out.push_back(std::move(img));
  }
  return out;
}

std::vector<std::vector<double>> VisionReference(const std::string& dir, const std::vector<image::PixelValues>& px) {
  const fs::path tmp = fs::temp_directory_path() / ("shoal-vision-ref-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  {
    std::ofstream f(tmp / "pixels.f32", std::ios::binary);
    for (const auto& p : px) f.write(reinterpret_cast<const char*>(p.chw.data()), p.chw.size() * sizeof(float));
  }
  const std::string cmd = std::string("/usr/bin/python3 ") + SHOAL_VISION_REFERENCE + " " + dir + " " +
                          (tmp / "pixels.f32").string() + " " + std::to_string(px.size()) + " " +
                          (tmp / "out.json").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const json out = ReadJson(tmp / "out.json");
  fs::remove_all(tmp);
  return out["outputs"].get<std::vector<std::vector<double>>>();
}

class VisionReferenceTest : public ::testing::TestWithParam<const char*> {};

TEST_P(VisionReferenceTest, BatchedImagesEqualTheFloat64Reference) {
  const std::string dir = std::string(SHOAL_TEST_MODELS) + "/" + GetParam();
  if (!fs::exists(dir)) GTEST_SKIP() << dir << " is missing (scripts/make-test-vision-models)";
  auto config = VisionConfig::FromJson(ReadJson(dir + "/config.json"));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto model = VisionTransformer::Load(dir, *config, cpu::Precision::kF32);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto processor = image::ImageProcessor::FromConfig(ReadJson(dir + "/preprocessor_config.json"));
  ASSERT_TRUE(processor.ok()) << processor.status().ToString();

  std::vector<image::PixelValues> px;
  for (const image::Image& img : SeededImages()) px.push_back(processor->Apply(img));
  std::vector<float> got;
  ASSERT_TRUE((*model)->Forward(px, &got, 2).ok());
  const size_t dim = (*model)->output_dim();
  ASSERT_EQ(got.size(), px.size() * dim);
  const auto want = VisionReference(dir, px);
  ASSERT_EQ(want.size(), px.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < px.size(); ++i) {
    ASSERT_EQ(want[i].size(), dim);
    for (size_t k = 0; k < dim; ++k) {
      worst = std::max(worst, std::abs(got[i * dim + k] - want[i][k]));
      scale = std::max(scale, std::abs(want[i][k]));
    }
  }
  std::printf("%s: %zu outputs of %zu, largest |reference| %.3g, largest difference %.3g\n", GetParam(), px.size(),
              dim, scale, worst);
  EXPECT_GT(scale, 0.1);  // the outputs are not all near zero
  EXPECT_LT(worst, 1e-4 * std::max(1.0, scale));

  // An image alone gives what it gave in the batch.
  std::vector<float> alone;
  ASSERT_TRUE((*model)->Forward(std::span(px).subspan(2, 1), &alone, 1).ok());
  for (size_t k = 0; k < dim; ++k) EXPECT_NEAR(alone[k], got[2 * dim + k], 1e-5);
  // Pixel values of another size are refused, naming the image.
  image::PixelValues wrong{16, 16, std::vector<float>(3 * 16 * 16)};
  const Status s = (*model)->Forward(std::span(&wrong, 1), &alone, 1);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("images[0]"), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(Towers, VisionReferenceTest,
                         ::testing::Values("clip-vision-tiny", "siglip-vision-tiny", "vit-classifier-tiny"));

TEST(VisionConfig, WhatItCannotRunIsRefusedNamingTheField) {
  auto error = [](const char* text) {
    auto c = VisionConfig::FromJson(json::parse(text));
    EXPECT_FALSE(c.ok()) << text;
    return c.ok() ? std::string() : c.status().message();
  };
  EXPECT_NE(error(R"({"architectures": ["Dinov2Model"]})").find("Dinov2Model"), std::string::npos);
  EXPECT_NE(error(R"({"architectures": ["SiglipVisionModel"], "vision_use_head": false})").find("vision_use_head"),
            std::string::npos);
  EXPECT_NE(error(R"({"architectures": ["CLIPVisionModelWithProjection"], "hidden_act": "relu"})").find("hidden_act"),
            std::string::npos);
  EXPECT_NE(error(R"({"architectures": ["CLIPVisionModelWithProjection"], "image_size": 30, "patch_size": 8})")
                .find("image_size"),
            std::string::npos);
  EXPECT_NE(error(R"({"architectures": ["ViTForImageClassification"], "id2label": {"0": "a"}, "qkv_bias": false})")
                .find("qkv_bias"),
            std::string::npos);
  EXPECT_NE(error(R"({"architectures": ["ViTForImageClassification"]})").find("id2label"), std::string::npos);
  EXPECT_NE(error(R"({"architectures": ["ViTForImageClassification"], "id2label": {"cat": "0"}})").find("id2label"),
            std::string::npos);  // a label id that is not a number: an error, not an exception
  EXPECT_NE(error(R"({"architectures": ["CLIPModel"]})").find("vision_config"), std::string::npos);
  // What a config leaves out is the class's default, as Hugging Face saves
  // only what differs: a CLIPModel's vision_config of a ViT-B/32.
  auto clip = VisionConfig::FromJson(json::parse(R"({"architectures": ["CLIPModel"], "vision_config": {}})"));
  ASSERT_TRUE(clip.ok());
  EXPECT_EQ(clip->hidden_size, 768u);
  EXPECT_EQ(clip->patch_size, 32u);
  EXPECT_EQ(clip->projection_dim, 512u);
  EXPECT_EQ(clip->act, BlockActivation::kQuickGelu);
  EXPECT_EQ(clip->patches(), 49u);
}

}  // namespace
}  // namespace shoal::native
