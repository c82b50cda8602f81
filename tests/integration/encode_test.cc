// The request path end to end: HTTP → gateway → JetStream → pulling worker →
// core NATS → gateway → HTTP, against a real nats-server.
#include <gtest/gtest.h>

#include <msgpack.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "runtime/identity/identity_runtime.h"
#include "support/http_client.h"
#include "support/test_cluster.h"

namespace shoal::testing {
namespace {

constexpr int kDim = 24;

std::string MsgpackItems(const std::vector<std::string>& texts, bool normalize = true) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(2);
  pk.pack(std::string("items"));
  pk.pack_array(static_cast<uint32_t>(texts.size()));
  for (const auto& t : texts) {
    pk.pack_map(1);
    pk.pack(std::string("text"));
    pk.pack(t);
  }
  pk.pack(std::string("normalize"));
  pk.pack(normalize);
  return std::string(buf.data(), buf.size());
}

std::vector<float> Expected(const std::string& text, bool normalize = true) {
  return IdentityVector(IdentityTokens(text), kDim, normalize);
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << "component " << i;
}

class EncodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.Register(IdentityProfile("test/embed", "identity: {dim: 24}\n"));
    worker_ = cluster_.StartWorker();
    cluster_.WaitForWorkers("test/embed", 1);
    gateway_ = cluster_.StartGateway();
    ASSERT_TRUE(gateway_);
  }

  TestCluster cluster_;
  std::unique_ptr<worker::Worker> worker_;
  std::unique_ptr<gateway::Gateway> gateway_;
};

TEST_F(EncodeTest, MsgpackRequestGetsIdentityVectorsAndTimingHeaders) {
  HttpClient http(gateway_->port());
  const std::vector<std::string> texts = {"hello world", "the quick brown fox", ""};
  auto res = http.PostMsgpack("/v1/encode/test/embed", MsgpackItems(texts));
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->Header("content-type"), "application/msgpack");
  EXPECT_FALSE(res->Header("x-shoal-request-id").empty());
  EXPECT_FALSE(res->Header("x-shoal-queue-ms").empty());
  EXPECT_FALSE(res->Header("x-shoal-inference-ms").empty());
  EXPECT_EQ(res->Header("x-shoal-attempts"), "1");

  auto handle = msgpack::unpack(res->body.data(), res->body.size());
  auto doc = handle.get().as<std::map<std::string, msgpack::object>>();
  EXPECT_EQ(doc.at("model").as<std::string>(), "test/embed");
  auto items = doc.at("items").as<std::vector<std::map<std::string, std::vector<float>>>>();
  ASSERT_EQ(items.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) ExpectClose(items[i].at("dense"), Expected(texts[i]));
  EXPECT_EQ((doc.at("usage").as<std::map<std::string, int>>().at("tokens")), 2 + 4 + 1);
}

TEST_F(EncodeTest, JsonInJsonOutAndNegotiatedMsgpack) {
  HttpClient http(gateway_->port());
  const std::string body = R"({"items":[{"text":"a b c"}],"normalize":false})";
  auto res = http.PostJson("/v1/encode/test/embed", body);
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->Header("content-type"), "application/json");
  auto j = nlohmann::json::parse(res->body);
  ExpectClose(j["items"][0]["dense"].get<std::vector<float>>(), Expected("a b c", false));

  auto packed = http.PostJson("/v1/encode/test/embed", body, {{"Accept", "application/msgpack"}});
  ASSERT_TRUE(packed.ok());
  EXPECT_EQ(packed->Header("content-type"), "application/msgpack");
  auto mp = http.PostMsgpack("/v1/encode/test/embed", MsgpackItems({"x"}), {{"Accept", "application/json"}});
  ASSERT_TRUE(mp.ok());
  EXPECT_EQ(mp->Header("content-type"), "application/json");
  ExpectClose(nlohmann::json::parse(mp->body)["items"][0]["dense"].get<std::vector<float>>(), Expected("x"));
}

TEST_F(EncodeTest, OpenAiEmbeddingsFloatAndBase64) {
  HttpClient http(gateway_->port());
  auto res = http.PostJson("/v1/embeddings", R"({"model":"test/embed","input":["one two","three"]})");
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->status, 200) << res->body;
  auto j = nlohmann::json::parse(res->body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "test/embed");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["data"][1]["object"], "embedding");
  ExpectClose(j["data"][0]["embedding"].get<std::vector<float>>(), Expected("one two"));
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(j["usage"]["total_tokens"], 3);

  auto b64 = http.PostJson("/v1/embeddings",
                           R"({"model":"test/embed","input":"one two","encoding_format":"base64"})");
  ASSERT_TRUE(b64.ok());
  ASSERT_EQ(b64->status, 200);
  const std::string encoded = nlohmann::json::parse(b64->body)["data"][0]["embedding"];
  // Decode base64 → little-endian float32, compare.
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : encoded) {
    if (c == '=') break;
    acc = (acc << 6) | static_cast<uint32_t>(kAlphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  ASSERT_EQ(bytes.size(), kDim * sizeof(float));
  std::vector<float> v(kDim);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  ExpectClose(v, Expected("one two"));
}

TEST_F(EncodeTest, ModelsListLabelsTheIdentityRuntime) {
  HttpClient http(gateway_->port());
  auto res = http.Get("/v1/models");
  ASSERT_TRUE(res.ok());
  auto j = nlohmann::json::parse(res->body);
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "test/embed");
  EXPECT_EQ(j["data"][0]["shoal"]["runtime"], "identity");
  EXPECT_EQ(j["data"][0]["shoal"]["test_only"], true);
  EXPECT_EQ(j["data"][0]["shoal"]["serving"], true);
}

TEST_F(EncodeTest, ProbesAnswer) {
  HttpClient http(gateway_->port());
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health.ok());
  EXPECT_EQ(health->status, 200);
  auto ready = http.Get("/readyz");
  ASSERT_TRUE(ready.ok());
  EXPECT_EQ(ready->status, 200);
}

TEST_F(EncodeTest, ConcurrentClientsAllGetTheirOwnAnswers) {
  constexpr int kThreads = 8, kPerThread = 40;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      HttpClient http(gateway_->port());
      for (int i = 0; i < kPerThread; ++i) {
        const std::string text = "client " + std::to_string(t) + " request " + std::to_string(i);
        auto res = http.PostMsgpack("/v1/encode/test/embed", MsgpackItems({text, text + " again"}));
        if (!res.ok() || res->status != 200) continue;
        auto h = msgpack::unpack(res->body.data(), res->body.size());
        auto doc = h.get().as<std::map<std::string, msgpack::object>>();
        auto items = doc.at("items").as<std::vector<std::map<std::string, std::vector<float>>>>();
        if (items.size() == 2 && items[0].at("dense") == Expected(text) &&
            items[1].at("dense") == Expected(text + " again")) {
          ++ok;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kThreads * kPerThread);
  EXPECT_EQ(cluster_.WaitForEmptyStream(), 0u) << "every work message was acknowledged";
}

TEST(EncodeProcesses, GatewayAndWorkerAsSeparateProcesses) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("test/proc", "identity: {dim: 24}\n"));
  Subprocess worker = cluster.SpawnWorker();
  cluster.WaitForWorkers("test/proc", 1);
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  auto gw = Subprocess::Spawn({SHOAL_BINARY, "gateway", "--nats", cluster.nats_url(), "--port",
                               std::to_string(*port)},
                              cluster.dir() + "/gateway.log");
  ASSERT_TRUE(gw.ok());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!PortAcceptsConnections(*port)) {
    ASSERT_LT(std::chrono::steady_clock::now(), until) << "gateway did not start";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  HttpClient http(*port);
  auto res = http.PostJson("/v1/embeddings", R"({"model":"test/proc","input":"separate processes"})");
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->status, 200) << res->body;
  ExpectClose(nlohmann::json::parse(res->body)["data"][0]["embedding"].get<std::vector<float>>(),
              Expected("separate processes"));
  EXPECT_EQ(gw->Stop(SIGTERM, std::chrono::seconds(15)), 0);
  EXPECT_EQ(worker.Stop(SIGTERM, std::chrono::seconds(15)), 0);
}

}  // namespace
}  // namespace shoal::testing
