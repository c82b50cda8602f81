// The llama.cpp runtime behind the runtime protocol (`shoal-llamacpp`, a
// sidecar on llama.cpp's own libraries), on GGUF files written from the
// seeded Hugging Face models (scripts/make-test-gguf): the conformance
// suite with generation, GGUF directories registered on their runtime, and
// served through gateway → JetStream → worker → sidecar — chat, completions,
// streaming, stop strings and embeddings, checked against the native
// runtime on the same weights (itself checked against float64 references)
// — and the sidecar SIGKILLed in the middle of streams under load.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "admin/catalog_admin.h"
#include "admin/model_directory.h"
#include "runtime/process/conformance.h"
#include "support/child_processes.h"
#include "support/http_client.h"
#include "support/json_items.h"
#include "support/metrics_text.h"
#include "support/model_configs.h"
#include "support/test_cluster.h"
#include "support/test_models.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kSidecar = (fs::path(SHOAL_BINARY).parent_path() / "shoal-llamacpp").string();

bool HaveFixtures() {
  return fs::exists(kSidecar) && fs::exists(kModels + "/llama-tiny-gguf-f32") &&
         fs::exists(kModels + "/bert-tiny-mean-gguf-f32");
}

#define SKIP_WITHOUT_LLAMACPP()                                                                      \
  if (!HaveFixtures()) GTEST_SKIP() << "no shoal-llamacpp or GGUF fixtures (scripts/make-test-gguf)"

TEST(LlamaCppSidecar, PassesTheConformanceSuiteWithGeneration) {
  SKIP_WITHOUT_LLAMACPP();
  for (const auto& [dir, task] : {std::pair{"llama-tiny-gguf-f32", "generate"}, {"bert-tiny-mean-gguf-f32", "encode"}}) {
    runtime_process::ConformanceOptions o;
    o.model = Config("id: t/c\nruntime: llamacpp\ntask: " + std::string(task) + "\npath: " + kModels + "/" + dir +
                     "\nmax_input_tokens: 16\n");
    const auto results = runtime_process::RunConformance({.command = {kSidecar}}, o, [](const auto&) {});
    EXPECT_GE(results.size(), 10u);
    for (const auto& r : results) {
      EXPECT_TRUE(r.status.ok()) << dir << ": " << r.name << ": " << r.status.message();
      EXPECT_FALSE(r.skipped) << r.name;
    }
  }
}

class LlamaCppServing : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveFixtures()) GTEST_SKIP() << "no shoal-llamacpp or GGUF fixtures (scripts/make-test-gguf)";
  }

  static json Post(HttpClient& http, const std::string& path, const json& body, int want = 200) {
    auto res = http.PostJson(path, body.dump());
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    if (!res.ok()) return {};
    EXPECT_EQ(res->status, want) << path << " " << res->body;
    return json::parse(res->body, nullptr, false);
  }

  // The text of a streamed chat completion (its SSE events' deltas).
  static std::string StreamedChat(uint16_t port, const json& body) {
    StreamConnection c(port);
    if (!c.PostJson("/v1/chat/completions", body.dump()).ok()) return "<not sent>";
    auto head = c.ReadHead();
    if (!head.ok() || head->status != 200) return "<status " + (head.ok() ? std::to_string(head->status) : "?") + ">";
    auto events = c.RemainingEvents();
    if (!events.ok()) return "<" + events.status().ToString() + ">";
    std::string text;
    for (const std::string& e : *events) {
      if (e == "[DONE]") break;
      const json j = json::parse(e, nullptr, false);
      if (!j.is_object() || j["choices"].empty()) continue;
      const json& delta = j["choices"][0]["delta"];
      if (delta.contains("content") && delta["content"].is_string()) text += delta["content"].get<std::string>();
    }
    return text;
  }
};

TEST_F(LlamaCppServing, GgufDirectoriesServeThroughTheQueueAsTheNativeRuntimeDoes) {
  TestCluster cluster;
  auto admin = admin::CatalogAdmin::Connect(cluster.nats_url());
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  for (const auto& [dir, task] : {std::pair{"llama-tiny-gguf-f32", Task::kGenerate},
                                  {"llama-tiny-gguf-q8_0", Task::kGenerate},
                                  {"bert-tiny-mean-gguf-f32", Task::kEncode}}) {
    auto spec = admin::SpecFromDirectory(kModels + "/" + dir, std::string("t/") + dir);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->runtime, "llamacpp") << dir;
    EXPECT_EQ(spec->task, task) << dir;
    auto registered = admin->Register(*spec);
    ASSERT_TRUE(registered.ok()) << registered.status().ToString();
    EXPECT_GT(registered->version.spec.memory_bytes, 0u);
  }
  // The references: the native runtime on the Hugging Face weights.
  cluster.Register("id: t/llama-native\nruntime: native\ntask: generate\npath: " + kModels +
                   "/llama-tiny\nnative: {max_context: 256}\n");
  cluster.Register("id: t/bert-native\nruntime: native\ntask: encode\npath: " + kModels + "/bert-tiny-mean\n");
  auto worker = cluster.StartWorker();
  ASSERT_TRUE(worker);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  HttpClient http(gateway->port());

  auto chat = [](const std::string& model, json extra = json::object()) {
    json body = {{"model", model},
                 {"messages", {{{"role", "user"}, {"content", "Tell me about the river."}}}},
                 {"max_tokens", 16},
                 {"temperature", 0}};
    body.update(extra);
    return body;
  };
  const json want = Post(http, "/v1/chat/completions", chat("t/llama-native"));
  const json got = Post(http, "/v1/chat/completions", chat("t/llama-tiny-gguf-f32"));
  ASSERT_FALSE(want["choices"].empty()) << want.dump();
  ASSERT_FALSE(got["choices"].empty()) << got.dump();
  const std::string text = want["choices"][0]["message"]["content"];
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(got["choices"][0]["message"]["content"], text) << "greedy F32 llama.cpp = the native runtime";
  EXPECT_EQ(got["usage"], want["usage"]);
  EXPECT_EQ(got["choices"][0]["finish_reason"], want["choices"][0]["finish_reason"]);
  EXPECT_EQ(StreamedChat(gateway->port(), chat("t/llama-tiny-gguf-f32", {{"stream", true}})), text);

  // A stop string cuts the text where the native runtime cuts it.
  const std::string stop = text.substr(text.size() / 2, 2);
  const json cut_want = Post(http, "/v1/chat/completions", chat("t/llama-native", {{"stop", {stop}}}));
  const json cut = Post(http, "/v1/chat/completions", chat("t/llama-tiny-gguf-f32", {{"stop", {stop}}}));
  EXPECT_EQ(cut["choices"][0]["message"]["content"], cut_want["choices"][0]["message"]["content"]);
  EXPECT_EQ(cut["choices"][0]["finish_reason"], "stop");

  // Completions, a seed, and Q8_0 weights (close to F32: most greedy tokens agree).
  const json completion = Post(http, "/v1/completions",
                               {{"model", "t/llama-tiny-gguf-q8_0"}, {"prompt", "The school of fish"},
                                {"max_tokens", 8}, {"temperature", 0.8}, {"seed", 7}, {"ignore_eos", true}});
  EXPECT_EQ(completion["usage"]["completion_tokens"], 8) << completion.dump();
  EXPECT_EQ(Post(http, "/v1/completions",
                 {{"model", "t/llama-tiny-gguf-q8_0"}, {"prompt", "The school of fish"}, {"max_tokens", 8},
                  {"temperature", 0.8}, {"seed", 7}, {"ignore_eos", true}})["choices"][0]["text"],
            completion["choices"][0]["text"]);

  // Embeddings from the bert GGUF equal the native runtime's.
  const json body = {{"items", {{{"text", "the river runs"}}, {{"text", "fish"}}}}};
  const json e_want = Post(http, "/v1/encode/t/bert-native", body);
  const json e_got = Post(http, "/v1/encode/t/bert-tiny-mean-gguf-f32", body);
  ASSERT_EQ(e_got["items"].size(), 2u) << e_got.dump();
  for (size_t i = 0; i < 2; ++i) {
    const auto a = Dense(e_got["items"][i]), b = Dense(e_want["items"][i]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-4);
  }
  EXPECT_EQ(e_got["usage"]["tokens"], e_want["usage"]["tokens"]);

  // A prompt over the context is the client's fault.
  std::string words;
  for (int i = 0; i < 3000; ++i) words += "river ";
  Post(http, "/v1/completions", {{"model", "t/llama-tiny-gguf-f32"}, {"prompt", words}, {"max_tokens", 4}}, 400);

  // response_format reaches the sidecar's grammar sampler: whatever the
  // random weights prefer, the answer is one of the schema's documents.
  const json schema = {{"type", "object"},
                       {"properties", {{"answer", {{"enum", {"yes", "no"}}}}, {"sure", {{"type", "boolean"}}}}},
                       {"required", {"answer", "sure"}},
                       {"additionalProperties", false}};
  const json format = {{"type", "json_schema"}, {"json_schema", {{"name", "answer"}, {"schema", schema}}}};
  // The native runtime holds the same model's output to the same schema.
  for (const char* model : {"t/llama-tiny-gguf-f32", "t/llama-native"})
  for (double temperature : {0.0, 1.0}) {
    const json a = Post(http, "/v1/chat/completions",
                        chat(model, {{"response_format", format}, {"max_tokens", 200}, {"temperature", temperature}}));
    ASSERT_FALSE(a["choices"].empty()) << a.dump();
    EXPECT_EQ(a["choices"][0]["finish_reason"], "stop") << a.dump();
    const json doc = json::parse(a["choices"][0]["message"]["content"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(doc.is_object()) << a.dump();
    EXPECT_EQ(doc.size(), 2u) << doc.dump();
    EXPECT_TRUE(doc["answer"] == "yes" || doc["answer"] == "no") << doc.dump();
    EXPECT_TRUE(doc["sure"].is_boolean()) << doc.dump();
  }
  // regex and choice are the native runtime's: refused here, not ignored.
  const json refused = Post(http, "/v1/generate/t/llama-tiny-gguf-f32",
                            {{"prompt", "x"}, {"response_format", {{"type", "choice"}, {"choices", {"a", "b"}}}}}, 400);
  EXPECT_NE(refused.dump().find("native runtime's"), std::string::npos) << refused.dump();
  // So are tools, for now.
  const json tools = {{{"type", "function"}, {"function", {{"name", "f"}}}}};
  const json tooled = Post(http, "/v1/chat/completions", chat("t/llama-tiny-gguf-f32", {{"tools", tools}}), 400);
  EXPECT_NE(tooled.dump().find("tools: model 't/llama-tiny-gguf-f32' (runtime llamacpp) does not call tools"),
            std::string::npos) << tooled.dump();

  // The logit adjustments reach the sidecar over the protocol and its
  // sampler applies them: greedy, each answer is the native runtime's with
  // the same adjustment (the same weights, the same definitions).
  const std::vector<std::pair<const char*, json>> adjustments = {
      {"presence_penalty", 2.0},   {"frequency_penalty", 1.5}, {"repetition_penalty", 1.8},
      {"logit_bias", {{"100", 100}, {"200", -100}}}, {"min_tokens", 16}};
  for (const auto& [field, value] : adjustments) {
    const json n = Post(http, "/v1/chat/completions", chat("t/llama-native", {{field, value}}));
    const json l = Post(http, "/v1/chat/completions", chat("t/llama-tiny-gguf-f32", {{field, value}}));
    ASSERT_FALSE(n["choices"].empty() || l["choices"].empty()) << field << " " << n.dump() << l.dump();
    EXPECT_EQ(l["choices"][0]["message"]["content"], n["choices"][0]["message"]["content"]) << field;
    EXPECT_EQ(l["usage"]["completion_tokens"], n["usage"]["completion_tokens"]) << field;
  }
  // A bias of 100 makes its token the greedy pick every time: not ignored.
  const json biased = Post(http, "/v1/chat/completions", chat("t/llama-tiny-gguf-f32", {{"logit_bias", {{"100", 100}}}}));
  EXPECT_NE(biased["choices"][0]["message"]["content"], text) << biased.dump();
  // top_logprobs is still the native runtime's.
  const json alternatives = Post(http, "/v1/chat/completions",
                                 chat("t/llama-tiny-gguf-f32", {{"logprobs", true}, {"top_logprobs", 2}}), 400);
  EXPECT_NE(alternatives.dump().find("top_logprobs"), std::string::npos) << alternatives.dump();
}

TEST_F(LlamaCppServing, StreamsSurviveTheSidecarsSigkillMidStream) {
  TestCluster cluster;
  auto admin = admin::CatalogAdmin::Connect(cluster.nats_url());
  ASSERT_TRUE(admin.ok());
  auto spec = admin::SpecFromDirectory(kModels + "/llama-tiny-gguf-f32", "t/llama-gguf");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_TRUE(admin->Register(*spec).ok());
  worker::WorkerOptions wo;
  wo.runtime_processes.health_every = std::chrono::milliseconds(50);
  auto worker = cluster.StartWorkerWith(wo);
  ASSERT_TRUE(worker);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  const json body = {{"model", "t/llama-gguf"},
                     {"messages", {{{"role", "user"}, {"content", "Tell me about the fish."}}}},
                     {"max_tokens", 48},
                     {"ignore_eos", true},
                     {"temperature", 0},
                     {"stream", true}};
  const std::string want = StreamedChat(gateway->port(), body);
  ASSERT_FALSE(want.empty());

  constexpr int kClients = 4, kEach = 6;
  std::atomic<int> done{0}, right{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        const std::string got = StreamedChat(gateway->port(), body);
        if (got == want) ++right;
        ++done;
      }
    });
  }
  ASSERT_TRUE(WaitFor([&] { return done >= kClients; }));
  const auto pids = ChildProcesses(getpid(), "shoal-llamacpp");
  ASSERT_EQ(pids.size(), 1u);
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(pids[0], SIGKILL), 0);
  for (auto& c : clients) c.join();
  EXPECT_EQ(right.load(), kClients * kEach) << "every stream whole, each token once";
  EXPECT_EQ(MetricValue(worker->RenderMetrics(),
                        R"(shoal_runtime_process_deaths_total{runtime="llamacpp",reason="exited"})"),
            1);
  std::printf("llamacpp sidecar SIGKILLed mid-stream: %d/%d streams whole, done %.2f s after the kill\n",
              right.load(), kClients * kEach,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count());
}

}  // namespace
}  // namespace shoal::testing
