// The upstream runtime (src/runtime/upstream): Shoal in front of a real
// OpenAI-compatible server — llama-server, built from the llama.cpp source
// node-llama-cpp ships (scripts/build-llama-server) — serving the GGUF
// copies of the seeded test models. Embeddings and generations through
// gateway → JetStream → worker → llama-server equal llama-server's own
// answers; concurrent requests reach it as one call; items wait out an
// upstream that is down. The ways an upstream misbehaves (500, garbage,
// silence, a stream cut short, a missing model) are scripted HTTP servers,
// each a clear error with its documented code.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <tuple>
#include <nlohmann/json.hpp>

#include "admin/catalog_admin.h"
#include "catalog/model_spec.h"
#include "runtime/process/conformance.h"
#include "runtime/registry/registry.h"
#include "support/http_client.h"
#include "support/llama_server.h"
#include "support/metrics_text.h"
#include "support/scripted_http_server.h"
#include "support/test_cluster.h"
#include "support/test_models.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kGenerator = kModels + "/llama-tiny-gguf-f32/llama-tiny-F32.gguf";
const std::string kEmbedder = kModels + "/bert-tiny-mean-gguf-f32/bert-tiny-mean-F32.gguf";

json Post(HttpClient& http, const std::string& path, const json& body, int want = 200) {
  auto res = http.PostJson(path, body.dump());
  EXPECT_TRUE(res.ok()) << res.status().ToString();
  if (!res.ok()) return {};
  EXPECT_EQ(res->status, want) << path << " " << body.dump().substr(0, 300) << " → " << res->body.substr(0, 500);
  return json::parse(res->body, nullptr, false);
}

std::vector<float> Normalized(const json& v) {
  std::vector<float> x = v.get<std::vector<float>>();
  double n = 0;
  for (float f : x) n += double(f) * f;
  for (float& f : x) f = static_cast<float>(f / std::sqrt(n));
  return x;
}

std::string Profile(const std::string& id, const std::string& task, const std::string& base_url,
                    const std::string& model, const std::string& extra = "") {
  return "id: " + id + "\nruntime: upstream\ntask: " + task + "\nupstream: {base_url: " + base_url +
         ", model: " + model + "}\n" + extra;
}

// The first of a few prompts whose greedy completion of `tokens` tokens
// llama-server answers; "" if none.
std::string FirstPromptAnswered(HttpClient& direct, const std::string& model, int tokens) {
  for (const char* p : {"The school of fish", "Tell me", "The river", "A worker that is busy", "Good tools",
                        "What makes a good batch?", "the kitchen", "An encoder", "fish", "numbers like 42"}) {
    auto r = direct.PostJson("/v1/completions", json{{"model", model}, {"prompt", p}, {"max_tokens", tokens},
                                                     {"temperature", 0}, {"ignore_eos", true}}.dump());
    if (r.ok() && r->status == 200) return p;
  }
  return "";
}

class Upstream : public ::testing::Test {
 protected:
  void SetUp() override {
    if (LlamaServer::Binary().empty() || !fs::exists(kGenerator) || !fs::exists(kEmbedder)) {
      GTEST_SKIP() << "no llama-server (scripts/build-llama-server) or GGUF fixtures (scripts/make-test-gguf)";
    }
  }
  std::string Log(const std::string& name) { return cluster_.dir() + "/" + name + ".log"; }

  TestCluster cluster_;
};

// Served by `shoal runtime-host`, the upstream runtime passes the protocol's
// conformance suite as a runtime that counts no tokens (the server's limits;
// truncate refused; generations of text without ids).
TEST_F(Upstream, PassesTheConformanceSuiteServedByTheRuntimeHost) {
  LlamaServer embedder(kEmbedder, "bert", {"--embeddings", "--pooling", "mean", "-c", "2048"}, Log("embedder"));
  LlamaServer generator(kGenerator, "llama", {"-c", "1024", "-np", "2"}, Log("generator"));
  ASSERT_TRUE(embedder.ok());
  ASSERT_TRUE(generator.ok());
  for (const auto& [id, task, url, model] : {std::tuple{"t/bert-up", "encode", embedder.base_url(), "bert"},
                                             {"t/llama-up", "generate", generator.base_url(), "llama"}}) {
    auto spec = ModelSpec::Parse(Profile(id, task, url, model));
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    runtime_process::ConformanceOptions o;
    o.model = *ModelConfig::FromSpec(*spec);
    const auto results = runtime_process::RunConformance(
        {.command = {SHOAL_BINARY, "runtime-host", "--runtime", "upstream"}}, o, [](const auto&) {});
    EXPECT_GE(results.size(), 12u) << id;
    for (const auto& r : results) {
      EXPECT_TRUE(r.status.ok()) << id << ": " << r.name << ": " << r.status.message();
      EXPECT_FALSE(r.skipped) << id << ": " << r.name;
    }
  }
}

TEST_F(Upstream, EmbeddingsEqualTheUpstreamsOwnAndConcurrentRequestsShareOneCall) {
  LlamaServer server(kEmbedder, "bert", {"--embeddings", "--pooling", "mean", "-c", "2048", "-b", "2048", "-ub", "2048"},
                     Log("llama-server"));
  ASSERT_TRUE(server.ok());
  const std::string profile = Profile("t/bert-up", "encode", server.base_url(), "bert",
                                     "batching: {max_batch_requests: 32, max_batch_wait_ms: 50}\n");
  {  // what registration checks (the test request, the probe set) it passes
    auto spec = ModelSpec::Parse(profile);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    auto check = admin::CheckModel(*spec);
    ASSERT_TRUE(check.ok()) << check.status().ToString();
    EXPECT_NE(check->probes.golden_json.find("shoal-probes-v1"), std::string::npos);
  }
  cluster_.Register(profile);
  auto worker = cluster_.StartWorker();
  ASSERT_TRUE(worker);
  auto gateway = cluster_.StartGateway();
  ASSERT_TRUE(gateway);
  HttpClient http(gateway->port());
  HttpClient direct(server.port());

  const std::vector<std::string> texts = {"the river runs past the mill", "fish", "a school of small fish swims"};
  const json want = Post(direct, "/v1/embeddings", {{"model", "bert"}, {"input", texts}});
  ASSERT_EQ(want["data"].size(), texts.size()) << want.dump();
  json items = json::array();
  for (const auto& t : texts) items.push_back({{"text", t}});
  const json got = Post(http, "/v1/encode/t/bert-up", {{"items", items}});
  ASSERT_EQ(got["items"].size(), texts.size()) << got.dump();
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto a = got["items"][i]["dense"].get<std::vector<float>>();
    const auto b = Normalized(want["data"][i]["embedding"]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-5) << i;
  }
  EXPECT_EQ(got["usage"]["tokens"], want["usage"]["prompt_tokens"]);
  // The OpenAI route of the gateway too.
  const json openai = Post(http, "/v1/embeddings", {{"model", "t/bert-up"}, {"input", texts[1]}});
  ASSERT_EQ(openai["data"].size(), 1u) << openai.dump();

  // Sixteen one-text requests at once: the worker batches them, and each
  // batch goes upstream as calls of at most the server's slots, at once.
  const double batches_before = MetricValue(worker->RenderMetrics(), R"(shoal_worker_batches_total{model="t/bert-up"})").value_or(0);
  std::vector<std::future<json>> calls;
  for (int i = 0; i < 16; ++i) {
    calls.push_back(std::async(std::launch::async, [&, i] {
      HttpClient c(gateway->port());
      return Post(c, "/v1/encode/t/bert-up", {{"items", {{{"text", texts[i % 3]}}}}});
    }));
  }
  for (int i = 0; i < 16; ++i) {
    const json r = calls[i].get();
    ASSERT_EQ(r["items"].size(), 1u);
    const auto a = r["items"][0]["dense"].get<std::vector<float>>();
    const auto b = Normalized(want["data"][i % 3]["embedding"]);
    for (size_t k = 0; k < a.size(); ++k) ASSERT_NEAR(a[k], b[k], 1e-5);
  }
  const double batches = MetricValue(worker->RenderMetrics(), R"(shoal_worker_batches_total{model="t/bert-up"})").value_or(0) - batches_before;
  EXPECT_LT(batches, 16) << "requests arriving together share batches";
  std::printf("16 concurrent embedding requests reached llama-server in %.0f batch(es)\n", batches);

  // llama-server fails an input over its batch with a 500: INFERENCE_ERROR
  // with its message (a 400 would fail the input alone: UpstreamFaults).
  std::string words;
  for (int i = 0; i < 4000; ++i) words += "river ";
  const json too_long = Post(http, "/v1/encode/t/bert-up", {{"items", {{{"text", words}}}}}, 500);
  EXPECT_EQ(too_long["error"]["code"], "INFERENCE_ERROR");
  EXPECT_NE(too_long["error"]["message"].get<std::string>().find("too large"), std::string::npos) << too_long.dump();
  // `truncate` is refused: the OpenAI API cannot ask for it.
  Post(http, "/v1/encode/t/bert-up", {{"items", {{{"text", "fish"}}}}, {"truncate", true}}, 400);
}

TEST_F(Upstream, GenerationsStreamThroughAsTheUpstreamWritesThem) {
  LlamaServer server(kGenerator, "llama", {"-c", "1024", "-np", "4"}, Log("llama-server"));
  ASSERT_TRUE(server.ok());
  cluster_.Register(Profile("t/llama-up", "generate", server.base_url(), "llama"));
  auto worker = cluster_.StartWorker();
  ASSERT_TRUE(worker);
  auto gateway = cluster_.StartGateway();
  ASSERT_TRUE(gateway);
  HttpClient http(gateway->port());
  HttpClient direct(server.port());

  // llama-server answers 500 when its output is not valid UTF-8, which the
  // seeded model's random weights often make: the first prompt it answers.
  const std::string prompt = FirstPromptAnswered(direct, "llama", 12);
  ASSERT_FALSE(prompt.empty());
  const json completion = {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}};
  json upstream_body = completion;
  upstream_body["model"] = "llama";
  json shoal_body = completion;
  shoal_body["model"] = "t/llama-up";
  const json want = Post(direct, "/v1/completions", upstream_body);
  const json got = Post(http, "/v1/completions", shoal_body);
  const std::string text = want["choices"][0]["text"];
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(got["choices"][0]["text"], text);
  EXPECT_EQ(got["choices"][0]["finish_reason"], want["choices"][0]["finish_reason"]);
  EXPECT_EQ(got["usage"]["prompt_tokens"], want["usage"]["prompt_tokens"]);
  EXPECT_EQ(got["usage"]["completion_tokens"], want["usage"]["completion_tokens"]);

  // Streamed through the gateway: the same text, in more than one event.
  shoal_body["stream"] = true;
  StreamConnection c(gateway->port());
  ASSERT_TRUE(c.PostJson("/v1/completions", shoal_body.dump()).ok());
  auto head = c.ReadHead();
  ASSERT_TRUE(head.ok());
  ASSERT_EQ(head->status, 200);
  auto events = c.RemainingEvents();
  ASSERT_TRUE(events.ok());
  std::string streamed;
  int with_text = 0;
  for (const std::string& e : *events) {
    const json j = json::parse(e, nullptr, false);
    if (!j.is_object() || j["choices"].empty()) continue;
    const std::string piece = j["choices"][0]["text"];
    with_text += !piece.empty();
    streamed += piece;
  }
  EXPECT_EQ(streamed, text);
  EXPECT_GT(with_text, 1);

  // Chat: rendered by the upstream's template, as the upstream answers it.
  const json chat = {{"messages", {{{"role", "user"}, {"content", "Tell me about the river."}}}},
                     {"max_tokens", 10}, {"temperature", 0}};
  json chat_up = chat, chat_shoal = chat;
  chat_up["model"] = "llama";
  chat_shoal["model"] = "t/llama-up";
  auto chat_direct = direct.PostJson("/v1/chat/completions", chat_up.dump());
  ASSERT_TRUE(chat_direct.ok());
  if (chat_direct->status == 200) {
    EXPECT_EQ(Post(http, "/v1/chat/completions", chat_shoal)["choices"][0]["message"]["content"],
              json::parse(chat_direct->body)["choices"][0]["message"]["content"]);
  } else {  // the same refusal, as INFERENCE_ERROR with what it said
    const json refused = Post(http, "/v1/chat/completions", chat_shoal, 500);
    EXPECT_NE(refused["error"]["message"].get<std::string>().find(json::parse(chat_direct->body)["error"]["message"].get<std::string>()),
              std::string::npos) << refused.dump();
  }

  // response_format goes on to the upstream, which holds its output to it
  // (llama-server: its own grammar from the schema).
  const json schema = {{"type", "object"},
                       {"properties", {{"answer", {{"enum", {"yes", "no"}}}}}},
                       {"required", {"answer"}},
                       {"additionalProperties", false}};
  json formatted = chat;
  formatted["max_tokens"] = 160;  // room for the whitespace llama-server's grammar allows
  formatted["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "a"}, {"schema", schema}}}};
  json formatted_up = formatted, formatted_shoal = formatted;
  formatted_up["model"] = "llama";
  formatted_shoal["model"] = "t/llama-up";
  auto formatted_direct = direct.PostJson("/v1/chat/completions", formatted_up.dump());
  ASSERT_TRUE(formatted_direct.ok());
  ASSERT_EQ(formatted_direct->status, 200) << formatted_direct->body;
  const json answer = Post(http, "/v1/chat/completions", formatted_shoal);
  const std::string content = answer["choices"][0]["message"]["content"];
  EXPECT_EQ(content, json::parse(formatted_direct->body)["choices"][0]["message"]["content"]);
  EXPECT_EQ(answer["choices"][0]["finish_reason"], "stop") << content;
  const json doc = json::parse(content, nullptr, false);
  EXPECT_TRUE(doc == json({{"answer", "yes"}}) || doc == json({{"answer", "no"}})) << content;
  // A raw prompt has no response_format in OpenAI's completions: refused, not sent.
  Post(http, "/v1/generate/t/llama-up", {{"prompt", "a"}, {"max_tokens", 4}, {"response_format", {{"type", "json_object"}}}},
       400);

  // A stop string, applied upstream.
  const std::string stop = text.substr(text.size() / 2, 2);
  json cut = shoal_body;
  cut.erase("stream");
  cut["stop"] = {stop};
  const json stopped = Post(http, "/v1/completions", cut);
  EXPECT_EQ(stopped["choices"][0]["text"], text.substr(0, text.find(stop)));
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");

  // The upstream's refusal is the client's 400; what no stream carries is refused.
  std::string words;
  for (int i = 0; i < 3000; ++i) words += "river ";
  const json long_prompt = Post(http, "/v1/completions", {{"model", "t/llama-up"}, {"prompt", words}, {"max_tokens", 4}}, 400);
  EXPECT_EQ(long_prompt["error"]["code"], "INVALID_INPUT") << long_prompt.dump();
  Post(http, "/v1/completions", {{"model", "t/llama-up"}, {"prompt", "a"}, {"max_tokens", 4}, {"logprobs", 1}}, 400);

  // OpenAI's logit adjustments go on to the upstream, which applies them:
  // the answer is the upstream's own to the same request.
  for (const auto& [field, value] : {std::pair<const char*, json>{"presence_penalty", 1.5},
                                     {"frequency_penalty", 1.0},
                                     {"logit_bias", {{"100", 100}}}}) {
    json adjusted_up = upstream_body, adjusted_shoal = completion;
    adjusted_up[field] = value;
    adjusted_shoal[field] = value;
    adjusted_shoal["model"] = "t/llama-up";
    auto adjusted_direct = direct.PostJson("/v1/completions", adjusted_up.dump());
    ASSERT_TRUE(adjusted_direct.ok());
    if (adjusted_direct->status != 200) continue;  // not valid UTF-8 (above): nothing to compare
    EXPECT_EQ(Post(http, "/v1/completions", adjusted_shoal)["choices"][0]["text"],
              json::parse(adjusted_direct->body)["choices"][0]["text"])
        << field;
  }
  // vLLM's are not OpenAI's: refused, not sent to a server that may ignore them.
  json repeated = completion;
  repeated["model"] = "t/llama-up";
  repeated["repetition_penalty"] = 1.3;
  const json not_openai = Post(http, "/v1/completions", repeated, 400);
  EXPECT_NE(not_openai.dump().find("repetition_penalty"), std::string::npos) << not_openai.dump();
}

TEST_F(Upstream, ItemsWaitOutAnUpstreamThatIsDownAndNoneIsLost) {
  LlamaServer server(kGenerator, "llama", {"-c", "512"}, Log("llama-server"));
  ASSERT_TRUE(server.ok());
  // Deliveries enough to outlast the restart (each refused one is put back after 500 ms).
  cluster_.Register(Profile("t/llama-up", "generate", server.base_url(), "llama", "queue: {max_deliver: 100}\n"));
  auto worker = cluster_.StartWorker();
  ASSERT_TRUE(worker);
  auto gateway = cluster_.StartGateway();
  ASSERT_TRUE(gateway);
  HttpClient direct(server.port());
  const json body = {{"model", "t/llama-up"}, {"prompt", FirstPromptAnswered(direct, "llama", 6)},
                     {"max_tokens", 6}, {"temperature", 0}, {"ignore_eos", true}};
  HttpClient http(gateway->port());
  const std::string want = Post(http, "/v1/completions", body)["choices"][0]["text"];

  server.Kill();
  const uint64_t before = cluster_.ConsumerDeliveries("t/llama-up");
  auto pending = std::async(std::launch::async, [&] {
    HttpClient c(gateway->port(), 60000);
    return Post(c, "/v1/completions", body);
  });
  // Tried, refused (nothing listens), put back, tried again: then the upstream returns.
  ASSERT_TRUE(WaitFor([&] { return cluster_.ConsumerDeliveries("t/llama-up") >= before + 2; }));
  server.Restart();
  ASSERT_TRUE(server.ok());
  const json got = pending.get();
  EXPECT_EQ(got["choices"][0]["text"], want) << got.dump();
}

// A model of the upstream runtime loaded directly, for the faults.
std::unique_ptr<Model> LoadUpstream(const std::string& task, const std::string& base_url, Status* error = nullptr,
                                    const std::string& extra = "timeout_ms: 300") {
  auto spec = ModelSpec::Parse("id: m\nruntime: upstream\ntask: " + task + "\nupstream: {base_url: " + base_url +
                               ", " + extra + "}\n");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  auto config = ModelConfig::FromSpec(*spec);
  auto model = FindRuntime("upstream")->Load(*config, LoadContext{});
  if (error) *error = model.ok() ? Status::Ok() : model.status();
  return model.ok() ? std::move(model).value() : nullptr;
}

const std::string kModelList = ScriptedHttpServer::Reply(200, "application/json", R"({"object":"list","data":[{"id":"m"}]})");

GenerationUpdate Generate(Model& model) {
  std::promise<GenerationUpdate> final;
  GenerationJob job;
  job.prompt = "hi";
  job.max_tokens = 4;
  model.streaming_generator()->Start(job, [&](GenerationUpdate&& u) {
    if (u.final) final.set_value(std::move(u));
  });
  return final.get_future().get();
}

Status EncodeOne(Model& model) {
  EncodeInput in{.text = "hi"};
  EncodeOutput out;
  Status s = model.Encode({&in, 1}, {&out, 1});
  return s.ok() ? out.status : s;
}

// How one request of `task` ends on a model of the upstream at `base_url`.
Status OneRequest(const std::string& task, const std::string& base_url) {
  Status error;
  auto model = LoadUpstream(task, base_url, &error);
  if (!model) return error;
  return task == "encode" ? EncodeOne(*model) : Generate(*model).status;
}

TEST(UpstreamFaults, RegistrationRefusesAnUnreachableServerAndAModelItDoesNotList) {
  Status error;
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  // Unreachable: a worker loads it (the server may come back), registration refuses it.
  const std::string nowhere = "http://127.0.0.1:" + std::to_string(*port) + "/v1";
  auto model = LoadUpstream("encode", nowhere, &error);
  ASSERT_TRUE(model) << error.ToString();
  EXPECT_EQ(EncodeOne(*model).code(), Code::kNoCapacity);
  auto spec = ModelSpec::Parse("id: m\nruntime: upstream\ntask: encode\nupstream: {base_url: " + nowhere + "}\n");
  ASSERT_TRUE(spec.ok());
  auto checked = admin::CheckModel(*spec);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.status().code(), Code::kInvalidInput);
  EXPECT_NE(checked.status().message().find("onnect"), std::string::npos) << checked.status().message();
  ScriptedHttpServer other({{"/v1/models", ScriptedHttpServer::Reply(200, "application/json",
                                                                      R"({"data":[{"id":"qwen"},{"id":"bge"}]})")}});
  EXPECT_EQ(LoadUpstream("encode", other.base_url(), &error), nullptr);
  EXPECT_NE(error.message().find("qwen, bge"), std::string::npos) << error.message();
  EXPECT_EQ(LoadUpstream("score", other.base_url(), &error), nullptr);
  EXPECT_EQ(LoadUpstream("encode", other.base_url(), &error, "api_key_env: SHOAL_TEST_UNSET_KEY"), nullptr);
  EXPECT_NE(error.message().find("SHOAL_TEST_UNSET_KEY"), std::string::npos) << error.message();
}

TEST(UpstreamFaults, A500IsAnInferenceErrorWithItsMessage) {
  const std::string failing = ScriptedHttpServer::Reply(500, "application/json", R"({"error":{"message":"CUDA out of memory"}})");
  ScriptedHttpServer server({{"/v1/models", kModelList}, {"/v1/embeddings", failing}, {"/v1/completions", failing}});
  for (const char* task : {"encode", "generate"}) {
    const Status s = OneRequest(task, server.base_url());
    EXPECT_EQ(s.code(), Code::kInferenceError) << task;
    EXPECT_NE(s.message().find("CUDA out of memory"), std::string::npos) << s.message();
  }
}

TEST(UpstreamFaults, AnInputTheUpstreamRefusesFailsAloneAndTheOthersAreAnswered) {
  const std::string vector = R"({"data":[{"index":0,"embedding":[3,4]}],"usage":{"prompt_tokens":2}})";
  ScriptedHttpServer server(
      {{"/v1/models", kModelList},
       {"/v1/embeddings", ScriptedHttpServer::Reply(200, "application/json", vector)},
       {"/v1/embeddings|poison", ScriptedHttpServer::Reply(400, "application/json",
                                                           R"({"error":{"message":"input has a poison word"}})")}});
  auto model = LoadUpstream("encode", server.base_url());
  ASSERT_TRUE(model);
  std::vector<EncodeInput> in = {{.text = "fish"}, {.text = "poison"}, {.text = "river"}};
  std::vector<EncodeOutput> out(3);
  ASSERT_TRUE(model->Encode(in, out).ok());
  EXPECT_TRUE(out[0].status.ok());
  EXPECT_EQ(out[0].dense, (std::vector<float>{0.6f, 0.8f}));
  EXPECT_EQ(out[1].status.code(), Code::kInvalidInput);
  EXPECT_NE(out[1].status.message().find("poison word"), std::string::npos) << out[1].status.message();
  EXPECT_TRUE(out[2].status.ok());
  EXPECT_EQ(server.requests(), 3 + 1 + 3);  // /models, /props, /info, the batch, then each input alone
}

// An embedder's batch goes out as calls of at most inputs_per_call texts,
// at once, answered in the batch's order: the number llama-server's /props
// (total_slots) or TEI's /info (max_client_batch_size, past which TEI
// refuses a call) gives, unless the profile says.
TEST(UpstreamCalls, ABatchGoesOutInCallsOfWhatTheServerRunsAtOnce) {
  auto vectors = [](int n) {
    json data = json::array();
    for (int i = 0; i < n; ++i) data.push_back({{"index", i}, {"embedding", {i + 1, 0}}});
    return ScriptedHttpServer::Reply(200, "application/json",
                                     json{{"data", data}, {"usage", {{"prompt_tokens", 2 * n}}}}.dump());
  };
  const std::map<std::string, std::string> embeddings = {
      {"/v1/models", kModelList}, {R"(/v1/embeddings|["a1","a2"])", vectors(2)},
      {R"(/v1/embeddings|["b1","b2"])", vectors(2)}, {R"(/v1/embeddings|["c1"])", vectors(1)},
      {"/v1/embeddings", vectors(5)}};  // all in one call
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(embeddings.begin(), embeddings.end());
    return extra;
  };
  const std::string props = ScriptedHttpServer::Reply(200, "application/json", R"({"total_slots":2})");
  const std::string info = ScriptedHttpServer::Reply(200, "application/json", R"({"max_client_batch_size":2})");
  for (const auto& [server_says, profile, calls] :
       {std::tuple{with({{"/props", props}}), std::string("timeout_ms: 3000"), 3},  // llama-server
        {with({{"/info", info}}), "timeout_ms: 3000", 3},                           // TEI
        {with({{"/props", props}}), "timeout_ms: 3000, inputs_per_call: 5", 1},     // the profile says
        {with({}), "timeout_ms: 3000", 1}}) {                                       // nothing says
    ScriptedHttpServer server(server_says);
    Status error;
    auto model = LoadUpstream("encode", server.base_url(), &error, profile);
    ASSERT_TRUE(model) << error.ToString();
    std::vector<EncodeInput> in;
    for (const char* t : {"a1", "a2", "b1", "b2", "c1"}) in.push_back({.text = t, .normalize = false});
    std::vector<EncodeOutput> out(in.size());
    ASSERT_TRUE(model->Encode(in, out).ok());
    int sent = 0;
    for (const auto& r : server.received()) {
      if (r.path != "/v1/embeddings") continue;
      ++sent;
      EXPECT_LE(json::parse(r.body)["input"].size(), calls == 1 ? 5u : 2u) << r.body;
    }
    EXPECT_EQ(sent, calls) << profile;
    uint32_t tokens = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      ASSERT_TRUE(out[i].status.ok()) << out[i].status.ToString();
      ASSERT_EQ(out[i].dense.size(), 2u);
      // Each call's vectors come back in its own order: [k + 1, 0] for its k-th text.
      const size_t k = calls == 1 ? i : i % 2;
      EXPECT_EQ(out[i].dense[0], static_cast<float>(k + 1)) << in[i].text;
      tokens += out[i].tokens;
    }
    EXPECT_EQ(tokens, 10u) << "every call's token count is shared out";
  }
  Status error;
  EXPECT_EQ(LoadUpstream("generate", "http://127.0.0.1:1/v1", &error, "inputs_per_call: 4"), nullptr);
  EXPECT_NE(error.message().find("inputs_per_call"), std::string::npos) << error.message();
}

// More streams at once than the loop takes from one wait (64): each is
// answered whole, in its own order, and ends as its stream says.
TEST(UpstreamCalls, ManyStreamsAtOnceEachGetTheirWholeText) {
  const std::string stream =
      "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\n"
      "data: {\"choices\":[{\"text\":\"c\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
  ScriptedHttpServer server(
      {{"/v1/models", kModelList}, {"/v1/completions", ScriptedHttpServer::Reply(200, "text/event-stream", stream)}});
  auto model = LoadUpstream("generate", server.base_url(), nullptr, "timeout_ms: 60000");
  ASSERT_TRUE(model);
  constexpr int kStreams = 100;
  std::mutex mu;
  std::vector<std::string> text(kStreams);
  std::vector<std::promise<GenerationUpdate>> finals(kStreams);
  std::vector<std::future<GenerationUpdate>> ends;
  for (auto& f : finals) ends.push_back(f.get_future());
  for (int i = 0; i < kStreams; ++i) {
    GenerationJob job;
    job.prompt = "hi " + std::to_string(i);
    job.max_tokens = 3;
    model->streaming_generator()->Start(job, [&, i](GenerationUpdate&& u) {
      if (u.final) return finals[i].set_value(std::move(u));
      std::lock_guard lock(mu);
      text[i] += u.text;
    });
  }
  for (int i = 0; i < kStreams; ++i) {
    const GenerationUpdate u = ends[i].get();
    EXPECT_TRUE(u.status.ok()) << i << ": " << u.status.ToString();
    EXPECT_EQ(u.finish_reason, "length") << i;
    std::lock_guard lock(mu);
    EXPECT_EQ(text[i], "abc") << i;
  }
  EXPECT_EQ(server.requests(), kStreams + 1);  // /models at load, then one call a stream
}

TEST(UpstreamFaults, GarbageAndStreamsCutShortAreInferenceErrors) {
  const std::string sse = "text/event-stream";
  for (const std::string& stream :
       {std::string("data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: <html>oops</html>\n\n"),
        std::string("data: {\"choices\":[{\"text\":\"a\"}]}\n\n"),  // no finish, no [DONE]
        std::string("this is not an event stream at all\n\n")}) {
    ScriptedHttpServer server({{"/v1/models", kModelList}, {"/v1/completions", ScriptedHttpServer::Reply(200, sse, stream)},
                               {"/v1/embeddings", ScriptedHttpServer::Reply(200, "application/json", "{\"data\": 7}")}});
    EXPECT_EQ(OneRequest("generate", server.base_url()).code(), Code::kInferenceError) << stream;
    EXPECT_EQ(OneRequest("encode", server.base_url()).code(), Code::kInferenceError);
  }
}

TEST(UpstreamFaults, ASilentUpstreamTimesOut) {
  ScriptedHttpServer server({{"/v1/models", kModelList}, {"/v1/completions", ScriptedHttpServer::kHang},
                             {"/v1/embeddings", ScriptedHttpServer::kHang}});
  for (const char* task : {"encode", "generate"}) {
    const Status s = OneRequest(task, server.base_url());
    EXPECT_EQ(s.code(), Code::kInferenceError) << task;
    EXPECT_NE(s.message().find("300 ms"), std::string::npos) << s.message();
  }
}

TEST(UpstreamFaults, ACancelledStreamEndsCancelled) {
  ScriptedHttpServer server({{"/v1/models", kModelList}, {"/v1/completions", ScriptedHttpServer::kHang}});
  auto model = LoadUpstream("generate", server.base_url(), nullptr, "timeout_ms: 60000");
  ASSERT_TRUE(model);
  std::promise<GenerationUpdate> final;
  GenerationJob job;
  job.prompt = "hi";
  const uint64_t h = model->streaming_generator()->Start(job, [&](GenerationUpdate&& u) {
    if (u.final) final.set_value(std::move(u));
  });
  ASSERT_TRUE(WaitFor([&] { return server.requests() >= 2; }));  // /models, then the stream
  model->streaming_generator()->Cancel(h);
  const GenerationUpdate u = final.get_future().get();
  EXPECT_TRUE(u.status.ok());
  EXPECT_EQ(u.finish_reason, "cancelled");
}

}  // namespace
}  // namespace shoal::testing
