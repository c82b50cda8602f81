// The two-tower image–text models (CLIPModel, SiglipModel) through the native
// runtime — runtime/native/vision_model.h with models/text_transformer.h —
// against independent float64 forward passes: tests/reference/
// text_tower_reference.py for the text towers (run padded to their length
// with the masks transformers builds, where Shoal runs each text at its own
// length) and vision_reference.py for the image towers, on the seeded
// clip-tiny (F32) and siglip-tiny (F16) of scripts/make-test-vision-models.
// Texts are tokenized by the directory's tokenizer: clip-tiny's tokenizer.json
// (the tokenizer has its own reference tests); siglip-tiny's spiece.model,
// converted as it loads, whose ids must equal what transformers' steps on
// the sentencepiece library give (siglip_tokenizer_reference.py). Scores are
// checked against the reference's logit_scale · cos + logit_bias.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "catalog/model_spec.h"
#include "image/decode.h"
#include "image/processor.h"
#include "runtime/native/models/text_transformer.h"
#include "runtime/native/native_runtime.h"
#include "runtime/native/tokenizers/model_tokenizer.h"
#include "support/files.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json ReadJsonAt(const fs::path& p) {
  std::ifstream f(p);
  return json::parse(f);
}

double Cosine(const std::vector<double>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
  return ab / std::sqrt(aa * bb);
}

class ImageTextReferenceTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dir_ = std::string(SHOAL_TEST_MODELS) + "/" + GetParam();
    if (!fs::exists(dir_)) GTEST_SKIP() << dir_ << " is missing (scripts/make-test-vision-models)";
    tmp_ = fs::temp_directory_path() / ("shoal-image-text-" + std::to_string(::getpid()));
    fs::create_directories(tmp_);
  }
  void TearDown() override {
    if (!tmp_.empty()) fs::remove_all(tmp_);
  }

  // The reference's embeddings of `sequences`, and its logit scale and bias.
  json TextReference(const std::vector<std::vector<int32_t>>& sequences) {
    std::ofstream(tmp_ / "ids.json") << json{{"sequences", sequences}}.dump();
    const std::string cmd = std::string("/usr/bin/python3 ") + SHOAL_TEXT_TOWER_REFERENCE + " " + dir_ + " " +
                            (tmp_ / "ids.json").string() + " " + (tmp_ / "text.json").string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return ReadJsonAt(tmp_ / "text.json");
  }

  // SigLIP's ids of `texts` as transformers' SiglipTokenizer gives them (on
  // the sentencepiece library), cut to `positions` as truncation=True cuts:
  // the text's ids, then "</s>".
  std::vector<std::vector<int32_t>> SiglipReferenceIds(const std::vector<std::string>& texts, size_t positions) {
    {
      std::ofstream corpus(tmp_ / "texts.jsonl");
      for (const std::string& t : texts) corpus << json(t).dump() << "\n";
    }
    const std::string cmd = std::string("/usr/bin/python3 ") + SHOAL_SIGLIP_TOKENIZER_REFERENCE + " " + dir_ + " " +
                            (tmp_ / "texts.jsonl").string() + " > " + (tmp_ / "ids.jsonl").string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream lines(tmp_ / "ids.jsonl");
    std::vector<std::vector<int32_t>> ids;
    for (std::string line; std::getline(lines, line);) {
      std::vector<int32_t> seq = json::parse(line).get<std::vector<int32_t>>();
      if (seq.size() > positions) {
        const int32_t eos = seq.back();
        seq.resize(positions - 1);
        seq.push_back(eos);
      }
      ids.push_back(std::move(seq));
    }
    return ids;
  }

  // A PNG PIL writes (a seeded gradient), its bytes.
  std::string Png() {
    const std::string script =
        "import sys, numpy as np\nfrom PIL import Image\n"
        "y, x = np.mgrid[0:40, 0:50]\n"
        "Image.fromarray(np.stack([x * 5, y * 6, (x * y) % 256], -1).astype(np.uint8)).save(sys.argv[1])\n";
    std::ofstream(tmp_ / "png.py") << script;
    const std::string cmd = "/usr/bin/python3 " + (tmp_ / "png.py").string() + " " + (tmp_ / "image.png").string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return testing::FileText((tmp_ / "image.png").string());
  }

  // The image reference's embedding of `png`, prepared by the model's processor.
  std::vector<double> ImageReference(const std::string& png) {
    auto img = image::DecodeImage(png, image::ImageLimits{});
    EXPECT_TRUE(img.ok());
    auto processor = image::ImageProcessor::FromConfig(ReadJsonAt(dir_ + "/preprocessor_config.json"));
    EXPECT_TRUE(processor.ok());
    const image::PixelValues px = processor->Apply(*img);
    std::ofstream(tmp_ / "pixels.f32", std::ios::binary)
        .write(reinterpret_cast<const char*>(px.chw.data()), px.chw.size() * sizeof(float));
    const std::string cmd = std::string("/usr/bin/python3 ") + SHOAL_VISION_REFERENCE + " " + dir_ + " " +
                            (tmp_ / "pixels.f32").string() + " 1 " + (tmp_ / "image.json").string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return ReadJsonAt(tmp_ / "image.json")["outputs"][0].get<std::vector<double>>();
  }

  std::string dir_;
  fs::path tmp_;
};

TEST_P(ImageTextReferenceTest, TextsAndScoresEqualTheFloat64Reference) {
  NativeRuntime runtime;
  auto spec = ModelSpec::Parse("id: t/two-towers\nruntime: native\npath: " + dir_ + "\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto model = runtime.Load(*ModelConfig::FromSpec(*spec), LoadContext{2});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_TRUE((*model)->takes_text());
  EXPECT_TRUE((*model)->takes_images());
  const auto config = TextTowerConfig::FromJson(ReadJsonAt(dir_ + "/config.json"));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const bool clip = config->family == TextTowerConfig::Family::kClip;

  // What the tokenizer makes of the texts: the tower's own limit, the long
  // one cut to it.
  const std::string long_text = "the red dog and the blue fish and the red bird and a cat of the shoal and a dog";
  const std::vector<std::string> texts = {"a photo of a cat", "The  RED dog, and the blue fish!", "shoal", long_text};
  auto tokenizer = LoadModelTokenizer(dir_);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().ToString();
  std::vector<std::vector<int32_t>> ids;
  for (const std::string& t : texts) {
    auto e = (*tokenizer)->Encode(t, {.add_special_tokens = true, .max_length = config->max_position_embeddings,
                                      .truncate = true});
    ASSERT_TRUE(e.ok());
    ids.push_back(e->ids);
  }
  // The special tokens each family's tokenizer adds, and whole words.
  const auto id_of = [&](const char* piece) { return (*tokenizer)->TokenToId(piece).value_or(-1); };
  if (clip) {
    EXPECT_EQ(ids[0], (std::vector<int32_t>{id_of("<|startoftext|>"), id_of("a</w>"), id_of("photo</w>"),
                                            id_of("of</w>"), id_of("a</w>"), id_of("cat</w>"), id_of("<|endoftext|>")}));
  } else {
    EXPECT_EQ(ids, SiglipReferenceIds(texts, config->max_position_embeddings));
    EXPECT_EQ(ids[0].back(), id_of("</s>"));
  }
  EXPECT_EQ(ids[3].size(), config->max_position_embeddings) << "the long text is cut to the tower's positions";

  std::vector<EncodeInput> in;
  for (size_t i = 0; i < texts.size(); ++i) in.push_back({.text = texts[i], .truncate = i == 3, .normalize = false});
  EncodeInput too_long{.text = long_text, .truncate = false};
  in.push_back(too_long);
  std::vector<EncodeOutput> out(in.size());
  ASSERT_TRUE((*model)->Encode(in, out).ok());
  const json ref = TextReference(ids);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_TRUE(out[i].status.ok()) << out[i].status.ToString();
    const auto want = ref["outputs"][i].get<std::vector<double>>();
    ASSERT_EQ(out[i].dense.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      worst = std::max(worst, std::abs(out[i].dense[k] - want[k]));
      scale = std::max(scale, std::abs(want[k]));
    }
    EXPECT_EQ(out[i].tokens, ids[i].size());
    EXPECT_EQ(out[i].truncated, i == 3);
  }
  std::printf("%s text tower: largest |reference| %.3g, largest difference %.3g\n", GetParam(), scale, worst);
  EXPECT_GT(scale, 0.1);
  EXPECT_LT(worst, 1e-4 * std::max(1.0, scale));
  EXPECT_EQ(out[4].status.code(), Code::kInvalidInput) << "over the tower's positions, not truncated";

  // Scores: the logit of each text against an image, and the image alone
  // encoded as the image reference gives it.
  const std::string png = Png();
  const std::vector<double> image_ref = ImageReference(png);
  std::vector<ScoreInput> pairs;
  for (size_t i = 0; i < 3; ++i) pairs.push_back({.text = texts[i], .image = png});
  pairs.push_back({.text = texts[0], .text_pair = texts[1]});  // two texts: refused
  std::vector<ScoreOutput> scored(pairs.size());
  ASSERT_TRUE((*model)->Score(pairs, scored).ok());
  const double logit_scale = ref["logit_scale"], logit_bias = ref["logit_bias"];
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(scored[i].status.ok()) << scored[i].status.ToString();
    ASSERT_EQ(scored[i].logits.size(), 1u);
    const double want = logit_scale * Cosine(ref["outputs"][i].get<std::vector<double>>(), image_ref) + logit_bias;
    EXPECT_NEAR(scored[i].logits[0], want, 1e-4 * std::max(1.0, std::abs(want))) << texts[i];
  }
  EXPECT_EQ(scored[3].status.code(), Code::kInvalidInput);
  EXPECT_NE(scored[3].status.message().find("not two texts"), std::string::npos) << scored[3].status.message();

  EncodeInput image_in{.normalize = false, .image = png};
  EncodeOutput image_out;
  ASSERT_TRUE((*model)->Encode({&image_in, 1}, {&image_out, 1}).ok());
  ASSERT_TRUE(image_out.status.ok()) << image_out.status.ToString();
  ASSERT_EQ(image_out.dense.size(), image_ref.size());
  for (size_t k = 0; k < image_ref.size(); ++k) EXPECT_NEAR(image_out.dense[k], image_ref[k], 1e-4);
}

INSTANTIATE_TEST_SUITE_P(TwoTowers, ImageTextReferenceTest, ::testing::Values("clip-tiny", "siglip-tiny"));

TEST(TextTowerConfig, DefaultsAndRefusals) {
  // What a config leaves out is the class's default: CLIP ViT-B/32's text tower.
  auto clip = TextTowerConfig::FromJson(json::parse(R"({"architectures": ["CLIPModel"], "text_config": {}})"));
  ASSERT_TRUE(clip.ok()) << clip.status().ToString();
  EXPECT_EQ(clip->vocab_size, 49408u);
  EXPECT_EQ(clip->hidden_size, 512u);
  EXPECT_EQ(clip->max_position_embeddings, 77u);
  EXPECT_EQ(clip->projection_dim, 512u);
  EXPECT_TRUE(clip->causal());
  auto siglip = TextTowerConfig::FromJson(json::parse(R"({"architectures": ["SiglipModel"], "text_config": {}})"));
  ASSERT_TRUE(siglip.ok()) << siglip.status().ToString();
  EXPECT_EQ(siglip->max_position_embeddings, 64u);
  EXPECT_EQ(siglip->projection_dim, 768u) << "projection_size defaults to hidden_size";
  EXPECT_FALSE(siglip->causal());
  auto error = [](const char* text) {
    auto c = TextTowerConfig::FromJson(json::parse(text));
    EXPECT_FALSE(c.ok()) << text;
    return c.ok() ? std::string() : c.status().message();
  };
  EXPECT_NE(error(R"({"architectures": ["CLIPVisionModelWithProjection"]})").find("no text tower"), std::string::npos);
  EXPECT_NE(error(R"({"architectures": ["CLIPModel"]})").find("text_config"), std::string::npos);
  EXPECT_NE(error(R"({"architectures": ["CLIPModel"], "text_config": {"hidden_act": "relu"}})").find("hidden_act"),
            std::string::npos);
  EXPECT_NE(error(R"({"architectures": ["SiglipModel"], "text_config": {"pad_token_id": 40000}})").find("pad_token_id"),
            std::string::npos);
}

}  // namespace
}  // namespace shoal::native
