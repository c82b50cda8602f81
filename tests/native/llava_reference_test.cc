// The native vision-language generator (LLaVA: runtime/native/
// image_prompt_encoder.h under the Llama-family decoder) against an
// independent float64 reference (tests/reference/llava_reference.py: PIL's
// preprocessing, the CLIP or SigLIP tower, the projector and the decoder
// written from the architecture) on scripts/make-test-models' llava-tiny (a
// CLIP tower read at layer -2 without its class token) and
// llava-siglip-tiny (a SigLIP tower read at its last layer, every patch).
//
// The prompt is the model's own chat template rendered over a message with
// an image and a question, tokenized (one <image> token); the reference
// widens it to the image's 16 rows and decodes greedily without a cache.
// Checked: the widened prompt; the logits after the prompt from one prefill
// and from a prefill in chunks of 5 that cut the image's rows apart; the
// greedy continuation through the KV cache, token for token; and that
// another image changes the answer's logits (the image is read).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "catalog/model_spec.h"
#include "runtime/generator.h"
#include "runtime/native/loaders/decoder_config.h"
#include "runtime/registry/registry.h"
#include "runtime/runtime.h"
#include "support/files.h"
#include "support/seeded_images.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kNewTokens = 10;
constexpr double kRelBound = 1e-4;  // as decoder_reference_test.cc's

class LlavaReference : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    dir_ = std::string(SHOAL_TEST_MODELS) + "/" + GetParam();
    tmp_ = fs::temp_directory_path() / ("shoal-llava-" + std::to_string(::getpid()));
    fs::create_directories(tmp_);
    // Seeded 32 × 32 images (the tower's size: PIL and Shoal resize nothing).
    ASSERT_TRUE(testing::WriteSeededImages(tmp_, 5));
    auto spec = ModelSpec::Parse(
        "id: t/llava\nruntime: native\ntask: generate\npath: " + dir_ +
        "\nnative: {max_context: 128, kv_cache_tokens: 512, kv_block_tokens: 8}\n");
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    auto m = FindRuntime("native")->Load(*ModelConfig::FromSpec(*spec), LoadContext{2});
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m).value();
    gen_ = model_->generator();
    ASSERT_NE(gen_, nullptr);
  }
  void TearDown() override { fs::remove_all(tmp_); }

  json Reference(const std::vector<int32_t>& ids, const std::string& image) {
    json in = {{"ids", ids}, {"images", {(tmp_ / image).string()}}, {"new_tokens", kNewTokens}};
    std::ofstream(tmp_ / "in.json") << in.dump();
    const std::string cmd = std::string("/usr/bin/python3 ") + SHOAL_LLAVA_REFERENCE + " " + dir_ +
                            " " + (tmp_ / "in.json").string() + " " + (tmp_ / "out.json").string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream f(tmp_ / "out.json");
    return json::parse(f, nullptr, false);
  }

  std::string dir_;
  fs::path tmp_;
  std::unique_ptr<Model> model_;
  Generator* gen_ = nullptr;
};

double MaxRelError(const float* native, const std::vector<double>& ref) {
  double err = 0, top = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, std::abs(native[i] - ref[i]));
    top = std::max(top, std::abs(ref[i]));
  }
  return err / (1 + top);
}

TEST_P(LlavaReference, AnImageAndAQuestionAnswerAsTheReferenceDoes) {
  const GeneratorInfo& info = gen_->info();
  ASSERT_EQ(info.image_positions, 16u) << "16 patches (CLIP's class token dropped)";
  const ChatTurn turn{.role = "user",
                      .content = "What is in the picture?",
                      .parts = {{.image = true}, {.text = "What is in the picture?"}}};
  auto rendered = gen_->RenderChat({&turn, 1}, true, "");
  ASSERT_TRUE(rendered.ok()) << rendered.status().ToString();
  EXPECT_EQ(
      *rendered,
      "<|im_start|>user\n<image>\nWhat is in the picture?<|im_end|>\n<|im_start|>assistant\n");
  auto spelled = gen_->EncodePrompt(*rendered, false);
  ASSERT_TRUE(spelled.ok());
  ASSERT_EQ(std::count(spelled->begin(), spelled->end(), info.image_token), 1);

  const json ref = Reference(*spelled, "a.png");
  ASSERT_TRUE(ref.is_object());
  auto rows = gen_->EmbedImage(testing::FileText((tmp_ / "a.png").string()), 2);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  std::vector<int32_t> ids;
  PlacedEmbeddings placed;
  for (int32_t id : *spelled) {
    if (id == info.image_token)
      placed = {static_cast<uint32_t>(ids.size()), info.image_positions, rows->data()};
    ids.insert(ids.end(), id == info.image_token ? info.image_positions : 1, id);
  }
  EXPECT_EQ(ids, ref["ids"].get<std::vector<int32_t>>());
  const auto want = ref["last_logits"].get<std::vector<double>>();
  const size_t vocab = info.vocab_size;
  std::vector<int32_t> blocks(16);
  for (int32_t b = 0; b < 16; ++b) blocks[b] = b;

  // One prefill; then in chunks of 5, which cut the image's rows apart.
  std::vector<float> logits(vocab);
  SequenceChunk whole{
      .tokens = ids, .start = 0, .blocks = blocks, .logit_rows = 1, .embeddings = {&placed, 1}};
  ASSERT_TRUE(gen_->Forward({&whole, 1}, logits.data(), 2).ok());
  EXPECT_LE(MaxRelError(logits.data(), want), kRelBound) << "one prefill";
  for (size_t at = 0; at < ids.size(); at += 5) {
    const size_t n = std::min<size_t>(5, ids.size() - at);
    SequenceChunk c{.tokens = std::span<const int32_t>(ids).subspan(at, n),
                    .start = static_cast<uint32_t>(at),
                    .blocks = blocks,
                    .logit_rows = at + n == ids.size() ? 1u : 0u,
                    .embeddings = {&placed, 1}};
    ASSERT_TRUE(gen_->Forward({&c, 1}, logits.data(), 2).ok());
  }
  EXPECT_LE(MaxRelError(logits.data(), want), kRelBound) << "chunked prefill";

  // Greedy decoding through the cache.
  std::vector<int32_t> seq = ids, got;
  for (int step = 0; step < kNewTokens; ++step) {
    got.push_back(
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    seq.push_back(got.back());
    if (step + 1 == kNewTokens) break;
    SequenceChunk d{.tokens = std::span<const int32_t>(seq).last(1),
                    .start = static_cast<uint32_t>(seq.size() - 1),
                    .blocks = blocks,
                    .logit_rows = 1,
                    .embeddings = {&placed, 1}};
    ASSERT_TRUE(gen_->Forward({&d, 1}, logits.data(), 2).ok());
  }
  EXPECT_EQ(got, ref["greedy"].get<std::vector<int32_t>>());
  EXPECT_GT(ref["min_margin"].get<double>(), 1e-3) << "the reference's greedy path has a near-tie";

  // Another image, the same question: other logits, here as in the reference.
  const json other = Reference(*spelled, "b.png");
  auto other_rows = gen_->EmbedImage(testing::FileText((tmp_ / "b.png").string()), 2);
  ASSERT_TRUE(other_rows.ok());
  placed.rows = other_rows->data();
  ASSERT_TRUE(gen_->Forward({&whole, 1}, logits.data(), 2).ok());
  const auto want_other = other["last_logits"].get<std::vector<double>>();
  EXPECT_LE(MaxRelError(logits.data(), want_other), kRelBound) << "the other image";
  double moved = 0;
  for (size_t i = 0; i < vocab; ++i) moved = std::max(moved, std::abs(want_other[i] - want[i]));
  EXPECT_GT(moved, 0.1) << "the image does not move the logits";

  // Bytes that are no image: INVALID_INPUT, not a crash.
  auto bad = gen_->EmbedImage("not an image", 2);
  EXPECT_EQ(bad.status().code(), Code::kInvalidInput) << bad.status().ToString();
}

// llava-1.5's config.json as the Hub has it: a text_config that names no
// sizes (transformers writes only what differs from LlamaConfig's).
TEST(LlavaConfig, ATextConfigTakesItsClassDefaults) {
  const fs::path dir =
      fs::temp_directory_path() / ("shoal-llava-config-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "config.json")
      << R"({"architectures": ["LlavaForConditionalGeneration"], "model_type": "llava",
    "image_token_index": 32000, "text_config": {"model_type": "llama", "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-05, "vocab_size": 32064}, "vision_config": {"model_type": "clip_vision_model"}})";
  auto c = native::LoadDecoderConfig(dir.string());
  fs::remove_all(dir);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->vision_language);
  EXPECT_EQ(c->hidden_size, 4096u);
  EXPECT_EQ(c->intermediate_size, 11008u);
  EXPECT_EQ(c->num_hidden_layers, 32u);
  EXPECT_EQ(c->num_key_value_heads, 32u);
  EXPECT_EQ(c->vocab_size, 32064u) << "what the config says wins";
  EXPECT_EQ(c->max_position_embeddings, 4096u);
}

// What the vision side cannot read is refused at load, naming the field.
TEST(LlavaConfig, RefusesWhatItDoesNotRun) {
  const fs::path src = std::string(SHOAL_TEST_MODELS) + "/llava-tiny";
  const fs::path dir =
      fs::temp_directory_path() / ("shoal-llava-refused-" + std::to_string(::getpid()));
  for (const auto& [key, value, says] :
       {std::tuple{"vision_feature_layer", json::array({-2, -1}),
                   "vision_feature_layer: one layer"},
        {"vision_feature_select_strategy", json("patches"), "'patches' is not default or full"},
        {"projector_hidden_act", json("relu"), "'relu' is not supported (gelu)"},
        {"image_token_index", json(100000), "is not in the vocabulary"}}) {
    SCOPED_TRACE(key);
    fs::remove_all(dir);
    fs::copy(src, dir, fs::copy_options::recursive);
    std::ifstream in(dir / "config.json");
    json config = json::parse(in);
    in.close();
    config[key] = value;
    std::ofstream(dir / "config.json") << config.dump();
    auto spec = ModelSpec::Parse(
        "id: t/llava\nruntime: native\ntask: generate\npath: " + dir.string() + "\n");
    ASSERT_TRUE(spec.ok());
    auto m = FindRuntime("native")->Load(*ModelConfig::FromSpec(*spec), LoadContext{1});
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find(says), std::string::npos) << m.status().message();
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Models, LlavaReference,
                         ::testing::Values("llava-tiny", "llava-siglip-tiny"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace shoal
