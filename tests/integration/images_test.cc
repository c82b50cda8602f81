// Image items through the whole serving path — gateway, (payload store),
// JetStream, worker, the native runtime's image towers: CLIP's (and
// SigLIP's) vision tower
// on /v1/encode (JSON base64, a data URL, MessagePack bin, an image over the
// 1 MB offload threshold) and /v1/embeddings (OpenAI-style image_url parts),
// a ViT classifier on /v1/extract, two-tower CLIP and SigLIP models (texts
// and images on /v1/encode, a text against images and an image against
// texts on /v1/score), and the refusals (a corrupt image, text to an image
// model, an image to a text model). What comes back equals the runtime
// called directly; the towers themselves are held to float64 references in
// tests/native/vision_reference_test.cc and image_text_reference_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "admin/model_directory.h"
#include "runtime/registry/registry.h"
#include "runtime/runtime.h"
#include "support/files.h"
#include "support/http_client.h"
#include "support/test_cluster.h"
#include "support/test_models.h"
#include "wire/json_writer.h"
#include "wire/msgpack_writer.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The file's bytes ("" when it cannot be read: the comparison then fails).
std::string Bytes(const fs::path& p) { return shoal::testing::FileText(p.string()); }

std::string Base64(std::string_view bytes) {
  std::string out;
  wire::AppendBase64(bytes, &out);
  return out;
}

class ImageServing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("shoal-image-serving-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // PIL writes the images: a gradient PNG, a JPEG, and noise too large for
    // a NATS message (the payload store carries it).
    const std::string script =
        "import numpy as np, sys; from PIL import Image; d = sys.argv[1]; r = np.random.default_rng(5)\n"
        "y, x = np.mgrid[0:40, 0:50]\n"
        "Image.fromarray(np.stack([x * 5, y * 6, (x + y) * 2], -1).astype(np.uint8)).save(d + '/small.png')\n"
        "Image.fromarray(r.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(d + '/photo.jpg', quality=90)\n"
        "Image.fromarray(r.integers(0, 256, (600, 700, 3), dtype=np.uint8)).save(d + '/big.png')\n";
    std::ofstream(dir_ / "make.py") << script;
    ASSERT_EQ(std::system(("/usr/bin/python3 " + (dir_ / "make.py").string() + " " + dir_.string()).c_str()), 0);
    ASSERT_GT(fs::file_size(dir_ / "big.png"), 1000u * 1000u);

    cluster_ = new TestCluster();
    for (auto [name, id] : {std::pair{"clip-vision-tiny", "t/clip-vision"}, {"siglip-vision-tiny", "t/siglip"},
                            {"vit-classifier-tiny", "t/vit"}, {"bert-tiny-mean", "t/bert"}, {"clip-tiny", "t/clip"},
                            {"siglip-tiny", "t/siglip-two"}, {"cross-encoder-tiny", "t/reranker"}}) {
      auto spec = admin::SpecFromDirectory(kModels + "/" + name, id);
      ASSERT_TRUE(spec.ok()) << spec.status().ToString();
      spec->pinned = true;
      specs_[id] = *spec;
      cluster_->Register(spec->ToJson());
    }
    EXPECT_EQ(specs_["t/clip-vision"].task, Task::kEncode);
    EXPECT_EQ(specs_["t/vit"].task, Task::kExtract);  // inferred from ViTForImageClassification
    EXPECT_EQ(specs_["t/clip"].image_text_score, ImageTextScore::kSoftmax);  // from CLIPModel
    EXPECT_EQ(specs_["t/siglip-two"].image_text_score, ImageTextScore::kSigmoid);
    EXPECT_EQ(specs_["t/clip-vision"].image_text_score, ImageTextScore::kNone);
    worker_ = cluster_->StartWorker().release();
    for (const auto& [id, spec] : specs_) cluster_->WaitForWorkers(id, 1);
    gateway_ = cluster_->StartGateway().release();
  }
  static void TearDownTestSuite() {
    delete gateway_;
    delete worker_;
    delete cluster_;
    fs::remove_all(dir_);
  }

  static json Post(const std::string& path, const std::string& body, int want_status = 200) {
    HttpClient http(gateway_->port());
    auto res = http.PostJson(path, body);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    if (!res.ok()) return {};
    EXPECT_EQ(res->status, want_status) << path << " " << res->body.substr(0, 300);
    return json::parse(res->body, nullptr, false);
  }

  // The model loaded directly in this process: what the served one must answer.
  static std::unique_ptr<Model> Direct(const std::string& id) {
    auto m = FindRuntime("native")->Load(*ModelConfig::FromSpec(specs_[id]), LoadContext{1});
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }

  static inline fs::path dir_;
  static inline std::map<std::string, ModelSpec> specs_;
  static inline TestCluster* cluster_ = nullptr;
  static inline worker::Worker* worker_ = nullptr;
  static inline gateway::Gateway* gateway_ = nullptr;
};

TEST_F(ImageServing, ClipEmbedsImagesSentAsBase64DataUrlsBinaryAndThroughThePayloadStore) {
  const std::string small = Bytes(dir_ / "small.png"), photo = Bytes(dir_ / "photo.jpg"),
                    big = Bytes(dir_ / "big.png");
  auto direct = Direct("t/clip-vision");
  ASSERT_TRUE(direct);
  std::vector<EncodeInput> in(3);
  in[0].image = small, in[1].image = photo, in[2].image = big;
  std::vector<EncodeOutput> want(3);
  ASSERT_TRUE(direct->Encode(in, want).ok());
  for (const EncodeOutput& w : want) ASSERT_TRUE(w.status.ok()) << w.status.ToString();

  const json j = Post("/v1/encode/t/clip-vision",
                      json{{"items",
                            {{{"image", Base64(small)}},
                             {{"image", "data:image/jpeg;base64," + Base64(photo)}},
                             {{"image", Base64(big)}}}}}
                          .dump());
  ASSERT_EQ(j["items"].size(), 3u) << j.dump().substr(0, 300);
  for (size_t i = 0; i < 3; ++i) {
    const auto got = j["items"][i]["dense"].get<std::vector<float>>();
    ASSERT_EQ(got.size(), 24u);
    double norm = 0;
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_NEAR(got[k], want[i].dense[k], 1e-6) << i;
      norm += got[k] * got[k];
    }
    EXPECT_NEAR(norm, 1.0, 1e-5);
  }
  EXPECT_EQ(j["usage"]["tokens"], 3 * 17);  // 16 patches and the class token each

  // MessagePack: the image as bin, the answer the same.
  std::string body;
  wire::MsgpackWriter w(&body);
  w.MapHeader(1);
  w.Str("items");
  w.ArrayHeader(1);
  w.MapHeader(1);
  w.Str("image");
  w.Bin(photo);
  HttpClient http(gateway_->port());
  auto res = http.PostMsgpack("/v1/encode/t/clip-vision", body, {{"Accept", "application/json"}});
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->status, 200) << res->body.substr(0, 300);
  const auto packed = json::parse(res->body)["items"][0]["dense"].get<std::vector<float>>();
  for (size_t k = 0; k < packed.size(); ++k) EXPECT_NEAR(packed[k], want[1].dense[k], 1e-6);
}

TEST_F(ImageServing, SiglipEmbedsThroughItsPoolingHead) {
  const std::string photo = Bytes(dir_ / "photo.jpg");
  auto direct = Direct("t/siglip");
  ASSERT_TRUE(direct);
  EncodeInput in{.image = photo};
  EncodeOutput want;
  ASSERT_TRUE(direct->Encode({&in, 1}, {&want, 1}).ok());
  const json j = Post("/v1/encode/t/siglip", json{{"items", {{{"image", Base64(photo)}}}}}.dump());
  const auto got = j["items"][0]["dense"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), 48u) << j.dump().substr(0, 300);  // the hidden size: SigLIP has no projection
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want.dense[k], 1e-6);
  EXPECT_EQ(j["usage"]["tokens"], 16);  // the patches, no class token
}

TEST_F(ImageServing, OpenAiEmbeddingsTakeImageUrlPartsAsDataUrls) {
  const std::string photo = Bytes(dir_ / "photo.jpg");
  auto direct = Direct("t/clip-vision");
  ASSERT_TRUE(direct);
  EncodeInput in{.image = photo};
  EncodeOutput want;
  ASSERT_TRUE(direct->Encode({&in, 1}, {&want, 1}).ok());
  const json part = {{"type", "image_url"},
                     {"image_url", {{"url", "data:image/jpeg;base64," + Base64(photo)}, {"detail", "auto"}}}};
  const json j = Post("/v1/embeddings", json{{"model", "t/clip-vision"}, {"input", {part}}}.dump());
  const auto got = j["data"][0]["embedding"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), want.dense.size()) << j.dump().substr(0, 300);
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want.dense[k], 1e-6);
  auto message = [](const json& r) { return r["error"]["message"].get<std::string>(); };
  const json http = Post("/v1/embeddings", R"({"model": "t/clip-vision", "input": [{"type": "image_url",
      "image_url": {"url": "https://example.com/cat.jpg"}}]})", 400);
  EXPECT_NE(message(http).find("only data: URLs"), std::string::npos) << http.dump();
  const json detail = Post("/v1/embeddings", R"({"model": "t/clip-vision", "input": [{"type": "image_url",
      "image_url": {"url": "data:image/png;base64,AAAA", "detail": "high"}}]})", 400);
  EXPECT_NE(message(detail).find("input[0].image_url.detail"), std::string::npos) << detail.dump();
}

TEST_F(ImageServing, AVitClassifierLabelsImagesOnExtract) {
  const std::string photo = Bytes(dir_ / "photo.jpg");
  auto direct = Direct("t/vit");
  ASSERT_TRUE(direct);
  ExtractInput in{.image = photo};
  ExtractOutput want;
  ASSERT_TRUE(direct->Extract({&in, 1}, {&want, 1}).ok());
  ASSERT_TRUE(want.status.ok()) << want.status.ToString();
  const json j = Post("/v1/extract/t/vit", json{{"items", {{{"image", Base64(photo)}}}}, {"top_k", 2}}.dump());
  const json& labels = j["items"][0]["labels"];
  ASSERT_EQ(labels.size(), 2u) << j.dump();
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(labels[k]["label"], want.labels[k].label);
    EXPECT_NEAR(labels[k]["score"].get<double>(), want.labels[k].score, 1e-6);
  }
  EXPECT_GE(labels[0]["score"].get<double>(), labels[1]["score"].get<double>());
  const json all = Post("/v1/extract/t/vit", json{{"items", {{{"image", Base64(photo)}}}}}.dump());
  double sum = 0;
  for (const json& l : all["items"][0]["labels"]) sum += l["score"].get<double>();
  EXPECT_NEAR(sum, 1.0, 1e-5);  // softmax over the four labels
}

TEST_F(ImageServing, TwoTowerModelsEmbedTextsAndImagesAndScoreOneAgainstTheOther) {
  const std::string small = Bytes(dir_ / "small.png"), photo = Bytes(dir_ / "photo.jpg");
  const std::vector<std::string> texts = {"a photo of a cat", "a red dog", "blue fish"};
  for (const char* id : {"t/clip", "t/siglip-two"}) {
    SCOPED_TRACE(id);
    auto direct = Direct(id);
    ASSERT_TRUE(direct);
    // Texts and images in one request, as the runtime embeds them.
    const json got = Post(std::string("/v1/encode/") + id,
                          json{{"items", {{{"text", texts[0]}}, {{"image", Base64(small)}}}}}.dump());
    std::vector<EncodeInput> in = {{.text = texts[0]}, {.image = small}};
    std::vector<EncodeOutput> want(2);
    ASSERT_TRUE(direct->Encode(in, want).ok());
    for (size_t i = 0; i < 2; ++i) {
      const auto v = got["items"][i]["dense"].get<std::vector<float>>();
      ASSERT_EQ(v.size(), want[i].dense.size());
      for (size_t k = 0; k < v.size(); ++k) EXPECT_NEAR(v[k], want[i].dense[k], 1e-6);
    }
    // OpenAI's route: a text and an image part side by side.
    const json openai = Post("/v1/embeddings", json{{"model", id},
                                                    {"input", {texts[0], {{"type", "image_url"},
                                                                          {"image_url", {{"url", "data:image/png;base64," + Base64(small)}}}}}}}
                                                   .dump());
    ASSERT_EQ(openai["data"].size(), 2u);

    // A text against images: the runtime's logits, then the model's own
    // activation (CLIP: softmax over the images; SigLIP: a sigmoid each).
    const json raw = Post(std::string("/v1/score/") + id,
                          json{{"query", texts[0]}, {"images", {Base64(small), Base64(photo)}}, {"raw_scores", true}}.dump());
    std::vector<ScoreInput> pairs = {{.text = texts[0], .image = small}, {.text = texts[0], .image = photo}};
    std::vector<ScoreOutput> logits(2);
    ASSERT_TRUE(direct->Score(pairs, logits).ok());
    ASSERT_EQ(raw["scores"].size(), 2u);
    for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(raw["scores"][i].get<double>(), logits[i].logits[0], 1e-5);
    const json scores =
        Post(std::string("/v1/score/") + id, json{{"query", texts[0]}, {"images", {Base64(small), Base64(photo)}}}.dump());
    const double a = logits[0].logits[0], b = logits[1].logits[0];
    if (std::string(id) == "t/clip") {
      EXPECT_NEAR(scores["scores"][0].get<double>(), 1 / (1 + std::exp(b - a)), 1e-5);
      EXPECT_NEAR(scores["scores"][0].get<double>() + scores["scores"][1].get<double>(), 1.0, 1e-5);
    } else {
      EXPECT_NEAR(scores["scores"][0].get<double>(), 1 / (1 + std::exp(-a)), 1e-5);
      EXPECT_NEAR(scores["scores"][1].get<double>(), 1 / (1 + std::exp(-b)), 1e-5);
    }
    // An image against texts (zero-shot labelling): one score per text.
    const json labels = Post(std::string("/v1/score/") + id,
                             json{{"query", {{"image", Base64(photo)}}}, {"texts", texts}, {"raw_scores", true}}.dump());
    ASSERT_EQ(labels["scores"].size(), texts.size());
    std::vector<ScoreInput> by_text;
    for (const std::string& t : texts) by_text.push_back({.text = t, .image = photo});
    std::vector<ScoreOutput> want_labels(texts.size());
    ASSERT_TRUE(direct->Score(by_text, want_labels).ok());
    for (size_t i = 0; i < texts.size(); ++i) {
      EXPECT_NEAR(labels["scores"][i].get<double>(), want_labels[i].logits[0], 1e-5);
    }
  }
  // Two texts to an image–text model, images to a cross-encoder, images to
  // a model that does not score: each refused.
  auto message = [](const json& j) { return j["error"]["message"].get<std::string>(); };
  const json texts_only = Post("/v1/score/t/clip", R"({"query": "a", "texts": ["b"]})", 400);
  EXPECT_NE(message(texts_only).find("not two texts"), std::string::npos) << texts_only.dump();
  const json reranker = Post("/v1/score/t/reranker", json{{"query", "a"}, {"images", {Base64(small)}}}.dump(), 400);
  EXPECT_NE(message(reranker).find("takes text, not images"), std::string::npos) << reranker.dump();
  const json vision_only = Post("/v1/score/t/clip-vision", json{{"query", "a"}, {"images", {Base64(small)}}}.dump(), 400);
  EXPECT_NE(message(vision_only).find("does not score"), std::string::npos) << vision_only.dump();
}

TEST_F(ImageServing, BadImagesAndTheWrongKindOfInputAreInvalidInput) {
  auto message = [](const json& j) { return j["error"]["message"].get<std::string>(); };
  const std::string small = Bytes(dir_ / "small.png");
  const json corrupt =
      Post("/v1/encode/t/clip-vision", json{{"items", {{{"image", Base64(small.substr(0, 60))}}}}}.dump(), 400);
  EXPECT_EQ(corrupt["error"]["code"], "INVALID_INPUT");
  EXPECT_NE(message(corrupt).find("PNG image cannot be decoded"), std::string::npos) << corrupt.dump();
  const json text = Post("/v1/encode/t/clip-vision", R"({"items":[{"text":"a cat"}]})", 400);
  EXPECT_NE(message(text).find("takes images, not text"), std::string::npos) << text.dump();
  const json image = Post("/v1/encode/t/bert", json{{"items", {{{"image", Base64(small)}}}}}.dump(), 400);
  EXPECT_NE(message(image).find("takes text, not images"), std::string::npos) << image.dump();
  const json both = Post("/v1/encode/t/clip-vision", json{{"items", {{{"text", "a"}, {"image", Base64(small)}}}}}.dump(), 400);
  EXPECT_NE(message(both).find("items[0]: one text, image or document"), std::string::npos) << both.dump();
  const json not64 = Post("/v1/encode/t/clip-vision", R"({"items":[{"image":"not base64!"}]})", 400);
  EXPECT_NE(message(not64).find("items[0].image"), std::string::npos) << not64.dump();
  const json url = Post("/v1/encode/t/clip-vision", R"({"items":[{"image":"data:image/png,abc"}]})", 400);
  EXPECT_NE(message(url).find("must be base64"), std::string::npos) << url.dump();
  const json text_file = Post("/v1/encode/t/clip-vision", json{{"items", {{{"image", Base64("hello")}}}}}.dump(), 400);
  EXPECT_NE(message(text_file).find("not an image"), std::string::npos) << text_file.dump();
  const json agg =
      Post("/v1/extract/t/vit", json{{"items", {{{"image", Base64(small)}}}}, {"aggregation", "max"}}.dump(), 400);
  EXPECT_NE(message(agg).find("labels whole images"), std::string::npos) << agg.dump();
}

}  // namespace
}  // namespace shoal::testing
