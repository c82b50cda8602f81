// LoRA adapters end to end, on the identity runtime (whose adapters are
// stand-ins: each answers its own deterministic vector, see
// runtime/identity/identity_runtime.h): registered through the admin route
// and the CLI, selected as "base:lora" in the path or the OpenAI body, or by
// the native body's "lora"; a mixed stream of base and adapter requests,
// each answered under its own adapter; adapters added while load runs
// against the base, with nothing failing and the base never reloaded; the
// per-adapter worker metrics.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <filesystem>
#include <fstream>
#include <msgpack.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "queue/keys.h"
#include "queue/message.h"
#include "queue/subjects.h"
#include "runtime/identity/identity_runtime.h"
#include "support/run_command.h"
#include "support/fake_generator.h"
#include "support/http_client.h"
#include "support/json_items.h"
#include "support/test_cluster.h"
#include "wire/work_message.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kDim = 16;
constexpr char kBase[] = "team/embed";

std::vector<float> Expected(const std::string& text, const std::string& lora = "") {
  return IdentityVector(IdentityTokens(text), kDim, true, lora);
}

void ExpectVector(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << what << ", component " << i;
}

class Lora : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new TestCluster();
    cluster_->Register(IdentityProfile(kBase, "identity: {dim: 16}\n"));
    worker_ = cluster_->StartWorker().release();
    cluster_->WaitForWorkers(kBase, 1);
    gateway_ = cluster_->StartGateway().release();
  }
  static void TearDownTestSuite() {
    delete gateway_;
    delete worker_;
    delete cluster_;
  }

  // A PEFT-shaped directory (the identity runtime reads only that
  // adapter_config.json is there).
  static std::string AdapterDir(const std::string& name, bool with_config = true) {
    const fs::path dir = fs::path(cluster_->dir()) / "adapters" / name;
    fs::create_directories(dir);
    if (with_config) std::ofstream(dir / "adapter_config.json") << R"({"peft_type": "LORA", "r": 8})";
    return dir.string();
  }

  static HttpResult Call(const std::string& method, const std::string& path, const std::string& body = "") {
    HttpClient http(gateway_->port());
    std::map<std::string, std::string> headers;
    if (!body.empty()) headers.emplace("Content-Type", "application/json");
    auto res = http.Request(method, path, body, headers);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    return res.ok() ? *res : HttpResult{};
  }

  static HttpResult AddLora(const std::string& base, const std::string& name, const std::string& dir) {
    return Call("POST", "/v1/admin/models/" + base + "/loras", json{{"name", name}, {"path", dir}}.dump());
  }

  // Registers adapter `name` on the base (once per suite).
  static void EnsureLora(const std::string& name) {
    const json spec = json::parse(Call("GET", std::string("/v1/admin/models/") + kBase).body);
    if (spec.contains("loras")) {
      for (const auto& l : spec["loras"]) {
        if (l["name"] == name) return;
      }
    }
    HttpResult added = AddLora(kBase, name, AdapterDir(name));
    ASSERT_EQ(added.status, 201) << added.body;
  }

  static std::string ErrorCode(const HttpResult& r) {
    const json body = json::parse(r.body, nullptr, false);
    return body.is_object() && body.contains("error") ? body["error"]["code"].get<std::string>() : "";
  }

  static inline TestCluster* cluster_ = nullptr;
  static inline worker::Worker* worker_ = nullptr;
  static inline gateway::Gateway* gateway_ = nullptr;
};

TEST_F(Lora, TheAdminRouteRegistersChecksAndRemovesAdapters) {
  const std::string dir = AdapterDir("support-v1");
  HttpResult added = AddLora(kBase, "support-v1", dir);
  ASSERT_EQ(added.status, 201) << added.body;
  const json stored = json::parse(added.body);
  EXPECT_EQ(stored["model"], kBase);
  EXPECT_EQ(stored["name"], "support-v1");
  EXPECT_EQ(stored["path"], fs::weakly_canonical(dir).string());
  EXPECT_EQ(stored["memory_bytes"].get<uint64_t>(), kIdentityLoraBytes) << "measured by the runtime";

  // The spec keeps it, with its memory; the list route shows it.
  const json spec = json::parse(Call("GET", std::string("/v1/admin/models/") + kBase).body);
  ASSERT_EQ(spec["loras"].size(), 1u) << spec.dump();
  EXPECT_EQ(spec["loras"][0]["name"], "support-v1");
  EXPECT_EQ(spec["loras"][0]["memory_bytes"].get<uint64_t>(), kIdentityLoraBytes);
  const json listed = json::parse(Call("GET", std::string("/v1/admin/models/") + kBase + "/loras").body);
  ASSERT_EQ(listed["data"].size(), 1u);
  EXPECT_EQ(listed["data"][0]["name"], "support-v1");

  // Refusals: no such base, a bad name, a taken name, not an adapter.
  HttpResult no_base = AddLora("team/nothing", "x", dir);
  EXPECT_EQ(no_base.status, 404) << no_base.body;
  EXPECT_EQ(ErrorCode(no_base), "MODEL_NOT_FOUND");
  for (const std::string& bad : std::vector<std::string>{"has space", "a/b", "base:x", "", std::string(65, 'n')}) {
    HttpResult r = AddLora(kBase, bad, dir);
    EXPECT_EQ(r.status, 400) << "'" << bad << "': " << r.body;
    EXPECT_EQ(ErrorCode(r), "INVALID_INPUT") << bad;
  }
  HttpResult twice = AddLora(kBase, "support-v1", dir);
  EXPECT_EQ(twice.status, 400) << twice.body;
  EXPECT_NE(twice.body.find("already"), std::string::npos) << twice.body;
  HttpResult not_peft = AddLora(kBase, "empty", AdapterDir("empty", /*with_config=*/false));
  EXPECT_EQ(not_peft.status, 400) << not_peft.body;
  EXPECT_NE(not_peft.body.find("adapter_config.json"), std::string::npos) << not_peft.body;
  HttpResult nowhere = AddLora(kBase, "nowhere", "/nonexistent/adapter");
  EXPECT_EQ(nowhere.status, 400) << nowhere.body;
  EXPECT_EQ(Call("POST", std::string("/v1/admin/models/") + kBase + "/loras", R"({"name": "x"})").status, 400);
  EXPECT_EQ(Call("POST", std::string("/v1/admin/models/") + kBase + "/loras",
                 R"({"name": "x", "path": "/tmp", "rank": 8})")
                .status,
            400);
  // None of the refused ones reached the spec.
  EXPECT_EQ(json::parse(Call("GET", std::string("/v1/admin/models/") + kBase).body)["loras"].size(), 1u);

  // Removed: gone from the spec; requests for it are 404; removing it again is 404.
  HttpResult removed = Call("DELETE", std::string("/v1/admin/models/") + kBase + "/loras/support-v1");
  EXPECT_EQ(removed.status, 200) << removed.body;
  EXPECT_FALSE(json::parse(Call("GET", std::string("/v1/admin/models/") + kBase).body).contains("loras"));
  HttpResult gone = Call("POST", std::string("/v1/encode/") + kBase + ":support-v1", R"({"items":[{"text":"x"}]})");
  EXPECT_EQ(gone.status, 404) << gone.body;
  EXPECT_EQ(Call("DELETE", std::string("/v1/admin/models/") + kBase + "/loras/support-v1").status, 404);
  // The base itself is untouched by all this.
  EXPECT_EQ(Call("GET", std::string("/v1/admin/models/") + kBase).status, 200);
}

TEST_F(Lora, AProfileThatNamesAdaptersHasThemCheckedWhenRegistered) {
  const json good = {{"spec",
                      {{"id", "team/with-loras"},
                       {"runtime", "identity"},
                       {"identity", {{"dim", 4}}},
                       {"loras", {{{"name", "a"}, {"path", AdapterDir("profile-a")}}}}}}};
  HttpResult added = Call("POST", "/v1/admin/models", good.dump());
  ASSERT_EQ(added.status, 201) << added.body;
  EXPECT_EQ(json::parse(added.body)["loras"][0]["memory_bytes"].get<uint64_t>(), kIdentityLoraBytes);
  json bad = good;
  bad["spec"]["id"] = "team/with-bad-loras";
  bad["spec"]["loras"][0]["path"] = AdapterDir("profile-bare", /*with_config=*/false);
  HttpResult refused = Call("POST", "/v1/admin/models", bad.dump());
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("adapter_config.json"), std::string::npos) << refused.body;
  EXPECT_EQ(Call("GET", "/v1/admin/models/team/with-bad-loras").status, 404);
  EXPECT_EQ(Call("DELETE", "/v1/admin/models/team/with-loras").status, 200);
}

TEST_F(Lora, RequestsSelectAnAdapterInEveryForm) {
  EnsureLora("legal");
  const std::string text = "the party of the first part";
  const std::string body = json{{"items", {{{"text", text}}}}}.dump();

  // "base:lora" in the path.
  HttpResult by_path = Call("POST", std::string("/v1/encode/") + kBase + ":legal", body);
  ASSERT_EQ(by_path.status, 200) << by_path.body;
  const json path_json = json::parse(by_path.body);
  EXPECT_EQ(path_json["model"], std::string(kBase) + ":legal") << "named as the client named it";
  ExpectVector(Dense(path_json["items"][0]), Expected(text, "legal"), "path form");

  // The native body's "lora", in JSON and in MessagePack.
  HttpResult by_field = Call("POST", std::string("/v1/encode/") + kBase,
                             json{{"items", {{{"text", text}}}}, {"lora", "legal"}}.dump());
  ASSERT_EQ(by_field.status, 200) << by_field.body;
  ExpectVector(Dense(json::parse(by_field.body)["items"][0]), Expected(text, "legal"), "body field");
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(2);
  pk.pack(std::string("items"));
  pk.pack_array(1);
  pk.pack_map(1);
  pk.pack(std::string("text"));
  pk.pack(text);
  pk.pack(std::string("lora"));
  pk.pack(std::string("legal"));
  HttpClient http(gateway_->port());
  auto packed = http.PostMsgpack(std::string("/v1/encode/") + kBase, std::string(buf.data(), buf.size()),
                                 {{"Accept", "application/json"}});
  ASSERT_TRUE(packed.ok());
  ASSERT_EQ(packed->status, 200) << packed->body;
  ExpectVector(Dense(json::parse(packed->body)["items"][0]), Expected(text, "legal"), "msgpack field");

  // Both forms, agreeing, are fine; disagreeing, a 400.
  EXPECT_EQ(Call("POST", std::string("/v1/encode/") + kBase + ":legal",
                 json{{"items", {{{"text", text}}}}, {"lora", "legal"}}.dump())
                .status,
            200);
  HttpResult contradicted = Call("POST", std::string("/v1/encode/") + kBase + ":legal",
                                 json{{"items", {{{"text", text}}}}, {"lora", "other"}}.dump());
  EXPECT_EQ(contradicted.status, 400) << contradicted.body;
  EXPECT_EQ(ErrorCode(contradicted), "INVALID_INPUT");

  // OpenAI embeddings with model "base:lora".
  HttpResult openai =
      Call("POST", "/v1/embeddings", json{{"model", std::string(kBase) + ":legal"}, {"input", text}}.dump());
  ASSERT_EQ(openai.status, 200) << openai.body;
  const json oa = json::parse(openai.body);
  EXPECT_EQ(oa["model"], std::string(kBase) + ":legal");
  ExpectVector(oa["data"][0]["embedding"].get<std::vector<float>>(), Expected(text, "legal"), "openai");

  // The base is still the base; an adapter is not the base.
  HttpResult base = Call("POST", std::string("/v1/encode/") + kBase, body);
  ASSERT_EQ(base.status, 200) << base.body;
  ExpectVector(Dense(json::parse(base.body)["items"][0]), Expected(text), "base");
  EXPECT_NE(Expected(text), Expected(text, "legal"));

  // Unknown adapters are 404 in every form; "base:" names none.
  for (const auto& [path, req] : std::vector<std::pair<std::string, std::string>>{
           {std::string("/v1/encode/") + kBase + ":nope", body},
           {std::string("/v1/encode/") + kBase, json{{"items", {{{"text", text}}}}, {"lora", "nope"}}.dump()},
           {"/v1/embeddings", json{{"model", std::string(kBase) + ":nope"}, {"input", text}}.dump()},
       }) {
    HttpResult r = Call("POST", path, req);
    EXPECT_EQ(r.status, 404) << path << ": " << r.body;
    EXPECT_EQ(ErrorCode(r), "MODEL_NOT_FOUND") << path;
    EXPECT_NE(r.body.find(std::string("model '") + kBase + "' has no LoRA 'nope'"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Call("POST", std::string("/v1/encode/") + kBase + ":", body).status, 400);
  EXPECT_EQ(Call("POST", "/v1/encode/team/nothing:legal", body).status, 404);

  // /v1/models lists the adapter after its base.
  const json models = json::parse(Call("GET", "/v1/models").body);
  bool listed = false;
  for (const auto& m : models["data"]) {
    if (m["id"] != std::string(kBase) + ":legal") continue;
    listed = true;
    EXPECT_EQ(m["parent"], kBase);
    EXPECT_EQ(m["shoal"]["base"], kBase);
    EXPECT_EQ(m["shoal"]["lora"], "legal");
    EXPECT_EQ(m["shoal"]["memory_bytes"].get<uint64_t>(), kIdentityLoraBytes);
  }
  EXPECT_TRUE(listed) << models.dump();
}

TEST_F(Lora, AMixedStreamGetsEachItsOwnAdapter) {
  EnsureLora("alpha");
  EnsureLora("beta");
  const std::vector<std::string> loras = {"", "alpha", "beta"};
  // Several clients at once, each request under one of the three, so the
  // worker's batches mix them.
  constexpr int kClients = 6, kRequests = 30;
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      HttpClient http(gateway_->port());
      for (int i = 0; i < kRequests; ++i) {
        const std::string& lora = loras[(c + i) % loras.size()];
        const std::string text = "client " + std::to_string(c) + " says " + std::to_string(i);
        const std::string path = std::string("/v1/encode/") + kBase + (lora.empty() ? "" : ":" + lora);
        auto res = http.PostJson(path, json{{"items", {{{"text", text}}, {{"text", text + " again"}}}}}.dump());
        if (!res.ok() || res->status != 200) {
          ++failures;
          ADD_FAILURE() << path << ": " << (res.ok() ? res->body : res.status().ToString());
          continue;
        }
        const json body = json::parse(res->body);
        ExpectVector(Dense(body["items"][0]), Expected(text, lora), path);
        ExpectVector(Dense(body["items"][1]), Expected(text + " again", lora), path);
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(failures.load(), 0);

  // The worker counted the adapters' items and tokens, not the base's.
  const std::string metrics = worker_->RenderMetrics();
  for (const std::string lora : {"alpha", "beta"}) {
    const std::string series = "shoal_worker_lora_items_total{model=\"team/embed\",lora=\"" + lora + "\"}";
    EXPECT_NE(metrics.find(series), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("shoal_worker_lora_tokens_total{model=\"team/embed\",lora=\"" + lora + "\"}"),
              std::string::npos);
  }
  EXPECT_EQ(metrics.find("lora=\"\""), std::string::npos) << "base items are not adapter items";
}

TEST_F(Lora, AdaptersAddedUnderLoadFailNothingAndDoNotReloadTheBase) {
  const auto before = worker_->residency().counters;
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> load;
  for (int c = 0; c < 3; ++c) {
    load.emplace_back([&, c] {
      HttpClient http(gateway_->port());
      for (int i = 0; !stop; ++i) {
        const std::string text = "load " + std::to_string(c) + " " + std::to_string(i);
        auto res = http.PostJson(std::string("/v1/encode/") + kBase, json{{"items", {{{"text", text}}}}}.dump());
        if (res.ok() && res->status == 200) {
          ++ok;
        } else {
          ++failed;
          ADD_FAILURE() << (res.ok() ? res->body : res.status().ToString());
        }
      }
    });
  }
  // Adapters registered one after another while the load runs, each used at
  // once through the gateway that registered it (it answers 201 once its
  // own catalog has the adapter; the worker may see it a moment later).
  HttpClient http(gateway_->port());
  for (int k = 0; k < 6; ++k) {
    const std::string name = "hot-" + std::to_string(k);
    HttpResult added = AddLora(kBase, name, AdapterDir(name));
    ASSERT_EQ(added.status, 201) << added.body;
    const std::string text = "fresh adapter " + name;
    auto res = http.PostJson(std::string("/v1/encode/") + kBase + ":" + name,
                             json{{"items", {{{"text", text}}}}}.dump());
    ASSERT_TRUE(res.ok());
    ASSERT_EQ(res->status, 200) << res->body;
    ExpectVector(Dense(json::parse(res->body)["items"][0]), Expected(text, name), name);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // And a few removed under load too.
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(Call("DELETE", std::string("/v1/admin/models/") + kBase + "/loras/hot-" + std::to_string(k)).status, 200);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  stop = true;
  for (auto& t : load) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_GT(ok.load(), 10);
  // The base stayed loaded all along: no load and no eviction since.
  const auto after = worker_->residency().counters;
  EXPECT_EQ(after.loads, before.loads);
  EXPECT_EQ(after.evictions, before.evictions);
  EXPECT_EQ(Call("POST", std::string("/v1/encode/") + kBase + ":hot-0", R"({"items":[{"text":"x"}]})").status, 404);
  EXPECT_EQ(Call("POST", std::string("/v1/encode/") + kBase + ":hot-5", R"({"items":[{"text":"x"}]})").status, 200);
}

// A key scoped to a base model may use its adapters; a key scoped to
// another model may not (403 before anything is looked up), and lists none
// of them.
TEST_F(Lora, AKeyForTheBaseMayUseItsAdapters) {
  EnsureLora("scoped");
  auto bucket = queue::OpenKeysBucket(cluster_->control_plane().js.get());
  ASSERT_TRUE(bucket.ok()) << bucket.status().ToString();
  gateway::GatewayOptions options;
  options.auth = gateway::AuthMode::kKeys;
  options.admin_token = "lora-admin";
  auto gw = cluster_->StartGateway(options);
  ASSERT_TRUE(gw);
  auto issue = [&](const std::string& name, std::vector<std::string> models) {
    queue::ApiKey key;
    key.name = name;
    key.models = std::move(models);
    auto issued = queue::IssueKey(bucket->get(), key);
    EXPECT_TRUE(issued.ok()) << issued.status().ToString();
    return issued.ok() ? issued->secret : "";
  };
  const std::string base_key = issue("lora-base", {kBase});
  const std::string other_key = issue("lora-other", {"team/other"});
  auto call = [&](const std::string& secret, const std::string& path, const std::string& body) {
    HttpClient http(gw->port());
    std::map<std::string, std::string> h = {{"Authorization", "Bearer " + secret}};
    if (!body.empty()) h.emplace("Content-Type", "application/json");
    auto res = http.Request(body.empty() ? "GET" : "POST", path, body, h);
    EXPECT_TRUE(res.ok());
    return res.ok() ? *res : HttpResult{};
  };
  for (int i = 0; i < 200 && (call(base_key, "/v1/models", "").status != 200 ||
                              call(other_key, "/v1/models", "").status != 200);
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string body = json{{"items", {{{"text", "in scope"}}}}}.dump();
  EXPECT_EQ(call(base_key, std::string("/v1/encode/") + kBase + ":scoped", body).status, 200);
  EXPECT_EQ(call(base_key, "/v1/embeddings", json{{"model", std::string(kBase) + ":scoped"}, {"input", "x"}}.dump())
                .status,
            200);
  HttpResult refused = call(other_key, std::string("/v1/encode/") + kBase + ":scoped", body);
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_EQ(ErrorCode(refused), "FORBIDDEN");
  EXPECT_EQ(call(other_key, std::string("/v1/encode/") + kBase + ":nope", body).status, 403)
      << "nothing is learned of the base's adapters";
  const std::string listed_base = call(base_key, "/v1/models", "").body;
  EXPECT_NE(listed_base.find(std::string("\"") + kBase + ":scoped\""), std::string::npos) << listed_base;
  const std::string listed_other = call(other_key, "/v1/models", "").body;
  EXPECT_EQ(listed_other.find(":scoped"), std::string::npos) << listed_other;
}

// A work message naming an adapter the worker's model does not have — as
// when a worker is behind the catalog, or its runtime refused the adapter —
// goes back to the stream for a moment, then fails MODEL_NOT_FOUND: never
// the base model's answer, never silence.
TEST_F(Lora, AnAdapterTheWorkerLacksFailsAfterAShortWaitNotAsTheBase) {
  auto& nc = cluster_->control_plane().nc;
  natsSubscription* raw_sub = nullptr;
  ASSERT_EQ(natsConnection_SubscribeSync(&raw_sub, nc.get(), "_INBOX.lora-test.1"), NATS_OK);
  queue::SubscriptionPtr sub(raw_sub);
  wire::WorkHeader work;
  work.request_id = "lora-test-1";
  work.reply = "_INBOX.lora-test.1";
  work.lora = "ghost";
  std::string message;
  wire::AppendWork(work, "\x81\xa4text\xa1" "a", &message);  // {"text": "a"}
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(queue::Publish(nc.get(), queue::WorkSubject("default", kBase), message).ok());
  natsMsg* reply = nullptr;
  ASSERT_EQ(natsSubscription_NextMsg(&reply, sub.get(), 5000), NATS_OK);
  const auto waited = std::chrono::steady_clock::now() - t0;
  const queue::Message r{queue::MsgPtr(reply)};
  wire::ReplyHeader h;
  std::string_view body;
  ASSERT_TRUE(wire::ReadReply(r.payload(), &h, &body).ok());
  EXPECT_EQ(h.error, Code::kModelNotFound);
  EXPECT_NE(body.find("has no LoRA 'ghost'"), std::string_view::npos) << body;
  EXPECT_GE(waited, std::chrono::milliseconds(400)) << "two short naks first";
  natsMsg* extra = nullptr;
  EXPECT_EQ(natsSubscription_NextMsg(&extra, sub.get(), 500), NATS_TIMEOUT) << "one answer";
  if (extra) natsMsg_Destroy(extra);
}

// Generation under an adapter, through the gateway: the test plays the
// worker (support/fake_generator.h) and reads the work message as a worker
// would — the adapter in Shoal-Lora, the base in the work's model.
class LoraGeneration : public ::testing::Test {
 protected:
  static constexpr char kGen[] = "test/gen";
  static std::string Profile() {
    return IdentityProfile(kGen,
                           "task: generate\nmemory_bytes: 1000\npinned: false\n"
                           "loras: [{name: poet, path: /adapters/poet, memory_bytes: 10}]\n");
  }
  void SetUp() override {
    cluster_.Register(Profile());
    auto spec = ModelSpec::Parse(Profile());
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    worker_ = std::make_unique<FakeGenerator>(cluster_, *spec);
    gateway_ = cluster_.StartGateway();
    HttpClient http(gateway_->port());
    for (int i = 0; i < 200; ++i) {  // until the gateway sees the fake worker
      const json list = json::parse(http.Get("/v1/models")->body);
      bool serving = false;
      for (const auto& m : list["data"]) serving = serving || (m["id"] == kGen && m["shoal"]["serving"]);
      if (serving) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "the gateway never saw the fake worker";
  }

  // Sends `body` to `path`, answers the work message as the worker, returns
  // the work headers and the response.
  std::pair<FakeGenerator::Work, json> Run(const std::string& path, const std::string& body) {
    auto pending = std::async(std::launch::async, [port = gateway_->port(), path, body] {
      HttpClient http(port);
      return http.PostJson(path, body);
    });
    FakeGenerator::Work w = worker_->Take();
    wire::GenerationChunk last;
    last.text = "ok";
    last.token_ids = {1};
    last.finish = wire::FinishReason::kStop;
    worker_->Send(w, 0, last, true);
    auto res = pending.get();
    EXPECT_TRUE(res.ok());
    EXPECT_EQ(res->status, 200) << res->body;
    return {w, json::parse(res->body, nullptr, false)};
  }

  TestCluster cluster_;
  std::unique_ptr<FakeGenerator> worker_;
  std::unique_ptr<gateway::Gateway> gateway_;
};

TEST_F(LoraGeneration, TheAdapterTravelsAsAHeaderFromEveryRoute) {
  auto [chat, chat_body] = Run("/v1/chat/completions",
                               R"({"model":"test/gen:poet","messages":[{"role":"user","content":"a rhyme"}]})");
  EXPECT_EQ(chat.lora, "poet");
  EXPECT_EQ(chat.request.model, kGen) << "the work names the base";
  EXPECT_EQ(chat_body["model"], "test/gen:poet");

  auto [completion, completion_body] = Run("/v1/completions", R"({"model":"test/gen:poet","prompt":"roses"})");
  EXPECT_EQ(completion.lora, "poet");
  EXPECT_EQ(completion_body["model"], "test/gen:poet");

  auto [native, native_body] = Run("/v1/generate/test/gen", R"({"prompt":"roses","lora":"poet"})");
  EXPECT_EQ(native.lora, "poet");
  auto [path, path_body] = Run("/v1/generate/test/gen:poet", R"({"prompt":"roses"})");
  EXPECT_EQ(path.lora, "poet");
  EXPECT_EQ(path_body["model"], "test/gen:poet");

  auto [base, base_body] = Run("/v1/chat/completions",
                               R"({"model":"test/gen","messages":[{"role":"user","content":"plain"}]})");
  EXPECT_EQ(base.lora, "") << "the base: no adapter";
  EXPECT_EQ(base_body["model"], kGen);

  HttpClient http(gateway_->port());
  auto unknown = http.PostJson("/v1/chat/completions",
                               R"({"model":"test/gen:prose","messages":[{"role":"user","content":"x"}]})");
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->status, 404) << unknown->body;
  EXPECT_EQ(json::parse(unknown->body)["error"]["message"], "model 'test/gen' has no LoRA 'prose'");
  auto contradicted = http.PostJson("/v1/generate/test/gen:poet", R"({"prompt":"x","lora":"prose"})");
  ASSERT_TRUE(contradicted.ok());
  EXPECT_EQ(contradicted->status, 400) << contradicted->body;
}

// `shoal models add-lora` / `remove-lora`, as an operator types them.
std::pair<int, std::string> ShoalModels(const std::string& nats_url, const std::string& args) {
  const std::string cmd = std::string(SHOAL_BINARY) + " models --nats " + nats_url + " " + args + " 2>&1";
  return RunCommand(cmd);
}

TEST_F(Lora, TheCliAddsAndRemovesAdapters) {
  const std::string url = cluster_->nats_url();
  const std::string dir = AdapterDir("from-cli");
  auto [rc, out] = ShoalModels(url, std::string("add-lora ") + kBase + " " + dir + " --name from-cli");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(std::string("added ") + kBase + ":from-cli"), std::string::npos) << out;

  // Served through the gateway (once its catalog has it).
  const std::string text = "said on the command line";
  HttpResult res;
  for (int i = 0; i < 100; ++i) {
    res = Call("POST", std::string("/v1/encode/") + kBase + ":from-cli", json{{"items", {{{"text", text}}}}}.dump());
    if (res.status != 404) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(res.status, 200) << res.body;
  ExpectVector(Dense(json::parse(res.body)["items"][0]), Expected(text, "from-cli"), "cli adapter");

  std::tie(rc, out) = ShoalModels(url, std::string("add-lora ") + kBase + " " + dir + " --name from-cli");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("already"), std::string::npos) << out;
  std::tie(rc, out) = ShoalModels(url, std::string("add-lora ") + kBase + " " + AdapterDir("cli-bare", false) +
                                           " --name cli-bare");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("adapter_config.json"), std::string::npos) << out;
  std::tie(rc, out) = ShoalModels(url, "add-lora team/nothing " + dir + " --name x");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("not in the catalog"), std::string::npos) << out;

  std::tie(rc, out) = ShoalModels(url, std::string("remove-lora ") + kBase + " from-cli");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(std::string("removed ") + kBase + ":from-cli"), std::string::npos) << out;
  std::tie(rc, out) = ShoalModels(url, std::string("remove-lora ") + kBase + " from-cli");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("has no LoRA 'from-cli'"), std::string::npos) << out;
}

}  // namespace
}  // namespace shoal::testing
