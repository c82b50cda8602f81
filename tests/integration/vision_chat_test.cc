// Images in chat: OpenAI-style image_url parts on /v1/chat/completions,
// through gateway → JetStream → worker, to a vision-language model (the
// seeded llava-tiny: LlavaForConditionalGeneration on the native runtime).
// What comes back is the float64 reference's greedy answer
// (tests/reference/llava_reference.py) for each image — asked in the order
// a, b, a, so that a prefix cache which let one image's keys and values
// stand for another's would show — and the refusals: an image to a
// text-only model, bytes that are no image, a URL to fetch.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "admin/model_directory.h"
#include "runtime/generator.h"
#include "runtime/registry/registry.h"
#include "runtime/runtime.h"
#include "runtime/text_stream.h"
#include "support/files.h"
#include "support/http_client.h"
#include "support/seeded_images.h"
#include "support/test_cluster.h"
#include "support/test_models.h"
#include "wire/json_writer.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kNewTokens = 10;
const std::string kQuestion = "What is in the picture?";

std::string DataUrl(const fs::path& png) {
  std::string out = "data:image/png;base64,";
  wire::AppendBase64(FileText(png.string()), &out);
  return out;
}

json ImagePart(const std::string& url) {
  return {{"type", "image_url"}, {"image_url", {{"url", url}}}};
}

class VisionChat : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("shoal-vision-chat-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ASSERT_TRUE(WriteSeededImages(dir_, 9));
    cluster_ = new TestCluster();
    for (auto [name, id] : {std::pair{"llava-tiny", "t/llava"}, {"qwen3-tiny", "t/chat"}}) {
      auto spec = admin::SpecFromDirectory(kModels + "/" + name, id);
      ASSERT_TRUE(spec.ok()) << spec.status().ToString();
      spec->pinned = true;
      specs_[id] = *spec;
      cluster_->Register(spec->ToJson());
    }
    EXPECT_EQ(specs_["t/llava"].task,
              Task::kGenerate);  // inferred from LlavaForConditionalGeneration
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

  // A chat of one user message with `content`, greedy, on `route`:
  // /v1/chat/completions (OpenAI's), or the native /v1/generate/{model},
  // which answers token ids.
  static json Chat(const std::string& model, const json& content, int want_status = 200,
                   const std::string& route = "/v1/chat/completions") {
    json body = {{"messages", {{{"role", "user"}, {"content", content}}}},
                 {"max_tokens", kNewTokens},
                 {"temperature", 0}};
    if (route == "/v1/chat/completions") body["model"] = model;
    HttpClient http(gateway_->port());
    auto res =
        http.PostJson(route == "/v1/chat/completions" ? route : route + "/" + model, body.dump());
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    if (!res.ok()) return {};
    EXPECT_EQ(res->status, want_status) << res->body.substr(0, 300);
    return json::parse(res->body, nullptr, false);
  }

  struct Answer {
    std::vector<int32_t> ids;  // up to the model's end of turn
    std::string text;          // as a client reads it (TextStream's UTF-8)
    size_t prompt_tokens = 0;
  };
  // The reference's greedy answer to the question about `image`.
  static Answer ReferenceAnswer(const std::string& image) {
    auto model =
        FindRuntime("native")->Load(*ModelConfig::FromSpec(specs_["t/llava"]), LoadContext{1});
    EXPECT_TRUE(model.ok()) << model.status().ToString();
    if (!model.ok()) return {};
    Generator* gen = (*model)->generator();
    const ChatTurn turn{
        .role = "user", .content = kQuestion, .parts = {{.image = true}, {.text = kQuestion}}};
    auto ids = gen->EncodePrompt(*gen->RenderChat({&turn, 1}, true, ""), false);
    const json in = {
        {"ids", *ids}, {"images", {(dir_ / image).string()}}, {"new_tokens", kNewTokens}};
    std::ofstream(dir_ / "in.json") << in.dump();
    const std::string cmd = std::string("/usr/bin/python3 ") + SHOAL_LLAVA_REFERENCE + " " +
                            specs_["t/llava"].path + " " + (dir_ / "in.json").string() + " " +
                            (dir_ / "out.json").string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream f(dir_ / "out.json");
    const json out = json::parse(f, nullptr, false);
    Answer a;
    a.prompt_tokens = out["ids"].size();
    TextStream text({});
    const auto& eos = gen->info().eos_ids;
    for (int32_t id : out["greedy"].get<std::vector<int32_t>>()) {
      if (std::find(eos.begin(), eos.end(), id) != eos.end()) break;
      a.ids.push_back(id);
      a.text += text.Push(gen->TokenBytes(id));
    }
    a.text += text.Finish();
    return a;
  }

  static inline fs::path dir_;
  static inline std::map<std::string, ModelSpec> specs_;
  static inline TestCluster* cluster_ = nullptr;
  static inline worker::Worker* worker_ = nullptr;
  static inline gateway::Gateway* gateway_ = nullptr;
};

TEST_F(VisionChat, AnImageAndAQuestionAnswerAsTheReferenceDoes) {
  const Answer a = ReferenceAnswer("a.png"), b = ReferenceAnswer("b.png");
  ASSERT_NE(a.ids, b.ids) << "the two images should be told apart";
  auto content = [](const std::string& image) {
    return json::array({ImagePart(DataUrl(dir_ / image)), {{"type", "text"}, {"text", kQuestion}}});
  };
  for (const char* image : {"a.png", "b.png", "a.png"}) {
    SCOPED_TRACE(image);
    const Answer& want = std::string(image) == "a.png" ? a : b;
    const json r = Chat("t/llava", content(image), 200, "/v1/generate");
    ASSERT_TRUE(r.is_object());
    EXPECT_EQ(r["token_ids"].get<std::vector<int32_t>>(), want.ids);
    EXPECT_EQ(r["usage"]["prompt_tokens"], want.prompt_tokens) << "the image's 16 positions count";
  }
  const json openai = Chat("t/llava", content("b.png"));
  EXPECT_EQ(openai["choices"][0]["message"]["content"], b.text);
  // Two images in one message: two placeholders, 2 × 16 positions.
  const json two = Chat("t/llava", {ImagePart(DataUrl(dir_ / "a.png")),
                                    ImagePart(DataUrl(dir_ / "b.png")),
                                    {{"type", "text"}, {"text", kQuestion}}});
  EXPECT_EQ(two["usage"]["prompt_tokens"], a.prompt_tokens + 16 + 1)
      << "another <image>\\n and its rows";
  // An image over a NATS message's size: the request travels through the payload store.
  ASSERT_GT(fs::file_size(dir_ / "big.png"), 1000u * 1000u);
  const json big = Chat("t/llava", content("big.png"));
  EXPECT_EQ(big["usage"]["prompt_tokens"], a.prompt_tokens);
}

TEST_F(VisionChat, RefusesWhatItCannotRead) {
  auto message = [](const json& r) {
    return r.value("error", json::object()).value("message", "");
  };
  const json text_only =
      Chat("t/chat", {ImagePart(DataUrl(dir_ / "a.png")), {{"type", "text"}, {"text", "Hi"}}}, 400);
  EXPECT_NE(message(text_only).find("messages[0].content[0]: model 't/chat' reads no images"),
            std::string::npos)
      << text_only.dump();
  std::string garbage = "data:image/png;base64,";
  wire::AppendBase64("not an image at all", &garbage);
  const json corrupt =
      Chat("t/llava", {ImagePart(garbage), {{"type", "text"}, {"text", "Hi"}}}, 400);
  EXPECT_NE(message(corrupt).find("messages[0].content[0]: "), std::string::npos) << corrupt.dump();
  const json url = Chat("t/llava", json::array({ImagePart("https://example.com/cat.png")}), 400);
  EXPECT_NE(message(url).find("only data: URLs"), std::string::npos) << url.dump();
}

}  // namespace
}  // namespace shoal::testing
