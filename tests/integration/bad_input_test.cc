// Every documented error, through the real path: the right status, the
// right code, a message naming what is wrong — never a crash or a hang.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/http_client.h"
#include "support/test_cluster.h"

namespace shoal::testing {
namespace {

void ExpectError(const Result<HttpResult>& res, int status, const std::string& code,
                 const std::string& message_part = "") {
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->status, status) << res->body;
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << res->body;
  EXPECT_EQ(j["error"]["code"], code) << res->body;
  EXPECT_NE(j["error"]["message"].get<std::string>().find(message_part), std::string::npos)
      << res->body;
  EXPECT_TRUE(j["error"].contains("request_id"));
}

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
    // Registered, but no worker will pull for it.
    cluster_.Register(IdentityProfile("test/orphan", "pool: nowhere\n"));
    // 300 ms of simulated device time per batch.
    cluster_.Register(IdentityProfile("test/slow", "identity: {dim: 8, us_per_batch: 300000}\n"
                                                   "batching: {max_batch_requests: 1}\n"));
    worker_ = cluster_.StartWorker();
    cluster_.WaitForWorkers("test/embed", 1);
    gateway::GatewayOptions o;
    o.http.max_body_bytes = 64 * 1024;
    o.no_capacity_wait = std::chrono::milliseconds(300);
    o.limits.max_item_bytes = 8 * 1024;
    gateway_ = cluster_.StartGateway(o);
    ASSERT_TRUE(gateway_);
  }

  TestCluster cluster_;
  std::unique_ptr<worker::Worker> worker_;
  std::unique_ptr<gateway::Gateway> gateway_;
};

TEST_F(BadInputTest, UnknownModelIs404) {
  HttpClient http(gateway_->port());
  ExpectError(http.PostJson("/v1/encode/no/such-model", R"({"items":[{"text":"x"}]})"), 404,
              "MODEL_NOT_FOUND", "no/such-model");
  ExpectError(http.PostJson("/v1/embeddings", R"({"model":"nope","input":"x"})"), 404,
              "MODEL_NOT_FOUND", "nope");
}

TEST_F(BadInputTest, MalformedBodiesAre400NamingTheField) {
  HttpClient http(gateway_->port());
  ExpectError(http.PostMsgpack("/v1/encode/test/embed", "\xc1\x00"), 400, "INVALID_INPUT", "body");
  ExpectError(http.PostMsgpack("/v1/encode/test/embed", "\x81\xa5items\x91\x81\xa4text\x2a"), 400,
              "INVALID_INPUT", "items[0].text: expected a string, got an integer");
  ExpectError(http.PostJson("/v1/encode/test/embed", "{\"items\": [{\"text\": 5}]}"), 400,
              "INVALID_INPUT", "items[0].text: expected a string, got a number");
  ExpectError(http.PostJson("/v1/encode/test/embed", "{\"items\": [{\"text\": \"a\""), 400,
              "INVALID_INPUT", "malformed JSON");
  ExpectError(http.PostJson("/v1/embeddings", R"({"model":"test/embed","input":"a\ud800"})"), 400,
              "INVALID_INPUT", "input: invalid UTF-16 surrogate: a high surrogate alone");
  // A str32 whose declared length (1 GiB) runs past the body.
  ExpectError(http.PostMsgpack("/v1/encode/test/embed", std::string("\x81\xa5items\x91\x81\xa4text\xdb\x40\0\0\0abc", 22)),
              400, "INVALID_INPUT", "items[0].text: string length runs past the end of the body");
  ExpectError(http.PostJson("/v1/embeddings", R"({"model":"test/embed","input":[1,2]})"), 400,
              "INVALID_INPUT", "token-id");
  ExpectError(http.Request("POST", "/v1/encode/test/embed", "x", {{"Content-Type", "text/plain"}}), 400,
              "INVALID_INPUT", "Content-Type");
  ExpectError(http.PostJson("/v1/encode/test/embed", R"({"items":[{"text":"a"}]})",
                            {{"X-Shoal-Timeout-Ms", "soon"}}),
              400, "INVALID_INPUT", "X-Shoal-Timeout-Ms");
}

TEST_F(BadInputTest, OverLongInputsAre400UnlessTruncated) {
  HttpClient http(gateway_->port());
  std::string words;
  for (int i = 0; i < 100; ++i) words += "w" + std::to_string(i) + " ";
  ExpectError(http.PostJson("/v1/encode/test/embed",
                            R"({"items":[{"text":"fine"},{"text":")" + words + R"("}]})"),
              400, "INVALID_INPUT", "items[1]: input has 100 tokens, over the model's limit of 64");
  auto ok = http.PostJson("/v1/encode/test/embed",
                          R"({"items":[{"text":")" + words + R"("}],"truncate":true})");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(nlohmann::json::parse(ok->body)["usage"]["tokens"], 64);
}

TEST_F(BadInputTest, OversizeBodyAndItemAre413) {
  HttpClient http(gateway_->port());
  const std::string big(100 * 1024, 'a');
  ExpectError(http.PostJson("/v1/encode/test/embed", R"({"items":[{"text":")" + big + R"("}]})"),
              413, "PAYLOAD_TOO_LARGE", "body over the limit");
  HttpClient http2(gateway_->port());
  const std::string item(10 * 1024, 'b');
  ExpectError(http2.PostJson("/v1/encode/test/embed", R"({"items":[{"text":")" + item + R"("}]})"),
              413, "PAYLOAD_TOO_LARGE", "items[0]");
}

TEST_F(BadInputTest, NoWorkerForTheModelIs503AfterABoundedWaitAndQueuesNothing) {
  HttpClient http(gateway_->port());
  const auto t0 = std::chrono::steady_clock::now();
  auto res = http.PostJson("/v1/encode/test/orphan", R"({"items":[{"text":"anyone?"}]})");
  const auto waited = std::chrono::steady_clock::now() - t0;
  ExpectError(res, 503, "NO_CAPACITY", "test/orphan");
  EXPECT_EQ(res->Header("retry-after"), "1");
  EXPECT_GE(waited, std::chrono::milliseconds(250)) << "it waited for a worker to appear";
  EXPECT_EQ(cluster_.StreamMessages("nowhere"), 0u) << "nothing nobody can run was queued";
}

TEST_F(BadInputTest, PassedDeadlineIs504) {
  HttpClient http(gateway_->port());
  ExpectError(http.PostJson("/v1/encode/test/slow", R"({"items":[{"text":"slow"}]})",
                            {{"X-Shoal-Timeout-Ms", "100"}}),
              504, "DEADLINE_EXCEEDED", "no result within");
}

TEST_F(BadInputTest, UnknownRouteIs404) {
  HttpClient http(gateway_->port());
  ExpectError(http.Get("/v2/whatever"), 404, "NOT_FOUND", "/v2/whatever");
  ExpectError(http.Get("/v1/encode/test/embed"), 404, "NOT_FOUND", "GET");
}

TEST_F(BadInputTest, GarbageHttpIsAnsweredAndTheGatewayLivesOn) {
  HttpClient::SendAndHangUp(gateway_->port(), "NOT HTTP AT ALL\r\n\r\n");
  HttpClient::SendAndHangUp(gateway_->port(), "POST /v1/encode/test/embed HTTP/1.1\r\nContent-Length: 99\r\n\r\n{");
  HttpClient http(gateway_->port());
  auto res = http.PostJson("/v1/encode/test/embed", R"({"items":[{"text":"still here"}]})");
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 200);
}

}  // namespace
}  // namespace shoal::testing
