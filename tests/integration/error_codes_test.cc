// Every error code of the API (docs/api.md, "Errors"), each produced by
// a real request through a real gateway, nats-server and worker — the one
// place that shows all of them. Each answer is checked for its HTTP status,
// the body {"error":{"code","message","request_id"}} (code exact, message
// not empty, request_id there and the same as X-Shoal-Request-Id), and
// Retry-After on 429 and 503. The other tests produce these codes where
// their features live, with the details (auth_test, bad_input_test,
// residency_test, faults_test).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "queue/keys.h"
#include "support/gateway_calls.h"
#include "support/http_client.h"
#include "support/test_cluster.h"

namespace shoal::testing {
namespace {

using nlohmann::json;
// The error contract, for one answer; returns the code it carried.
std::string ExpectError(const HttpResult& r, int status, const std::string& code) {
  SCOPED_TRACE(code);
  EXPECT_EQ(r.status, status) << r.body;
  const json j = json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) {
    ADD_FAILURE() << "not an error body: " << r.body;
    return "";
  }
  const json& e = j["error"];
  EXPECT_EQ(e.size(), 3u) << "exactly code, message and request_id: " << r.body;
  EXPECT_TRUE(e.contains("code") && e["code"].is_string()) << r.body;
  EXPECT_TRUE(e.contains("message") && e["message"].is_string() && !e["message"].get<std::string>().empty())
      << r.body;
  EXPECT_TRUE(e.contains("request_id") && e["request_id"].is_string()) << r.body;
  if (e.contains("request_id") && e["request_id"].is_string()) {
    const std::string id = e["request_id"].get<std::string>();
    EXPECT_FALSE(id.empty()) << r.body;
    EXPECT_EQ(r.Header("x-shoal-request-id"), id) << "the header names the same request";
  }
  const std::string got = e.value("code", "");
  EXPECT_EQ(got, code) << r.body;
  if (status == 429 || status == 503) {
    EXPECT_FALSE(r.Header("retry-after").empty()) << "Retry-After on " << status;
    EXPECT_GE(std::atoi(r.Header("retry-after").c_str()), 1) << r.Header("retry-after");
  } else {
    EXPECT_TRUE(r.Header("retry-after").empty()) << "no Retry-After on " << status;
  }
  return got;
}

TEST(ErrorCodes, EveryDocumentedCodeFromARealRequest) {
  TestCluster cluster;
  // An identity model that fails on purpose for inputs containing "boom"
  // (the test runtime's fault knob), one that takes a second a batch, one in
  // a pool no worker serves, and a native model whose directory does not
  // load (memory_bytes given, so registering it does not load it first — as
  // when the files were readable where it was registered and not here).
  cluster.Register(IdentityProfile("t/embed", "identity: {dim: 8, fail_on: boom}\n"));
  cluster.Register(IdentityProfile("t/slow", "identity: {dim: 8, us_per_batch: 1000000}\n"
                                             "batching: {max_batch_requests: 1}\n"));
  cluster.Register(IdentityProfile("t/orphan", "pool: nowhere\n"));
  const std::filesystem::path broken = std::filesystem::path(cluster.dir()) / "broken-model";
  std::filesystem::create_directories(broken);
  std::ofstream(broken / "config.json") << "{ this is not a model";
  cluster.Register("id: t/broken\nruntime: native\npath: " + broken.string() + "\nmemory_bytes: 1048576\n");
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("t/embed", 1);
  cluster.WaitForWorkers("t/slow", 1);

  // Three gateways: an open one with small limits, one that needs API keys,
  // and one that admits a single request at a time.
  gateway::GatewayOptions open_options;
  open_options.http.max_body_bytes = 64 * 1024;
  open_options.no_capacity_wait = std::chrono::milliseconds(300);
  auto open = cluster.StartGateway(open_options);
  gateway::GatewayOptions keys_options;
  keys_options.auth = gateway::AuthMode::kKeys;
  auto keyed = cluster.StartGateway(keys_options);
  gateway::GatewayOptions tight_options;
  tight_options.max_in_flight = 1;
  auto tight = cluster.StartGateway(tight_options);
  ASSERT_TRUE(open && keyed && tight);
  const int port = open->port();

  std::set<std::string> seen;
  auto expect = [&](const HttpResult& r, int status, const std::string& code) {
    seen.insert(ExpectError(r, status, code));
  };
  ASSERT_EQ(Call(port, "POST", "/v1/embeddings", Embed("t/embed")).status, 200) << "the cluster serves";

  // 400: the body is not JSON.
  expect(Call(port, "POST", "/v1/encode/t/embed", R"({"items":[{"text":"a")"), 400, "INVALID_INPUT");

  // 401 and 403: no key; a key whose scope is another model. 429: a key
  // over its request rate (one a second: the second request at once).
  auto bucket = queue::OpenKeysBucket(cluster.control_plane().js.get());
  ASSERT_TRUE(bucket.ok()) << bucket.status().ToString();
  queue::ApiKey scoped;
  scoped.name = "only-slow";
  scoped.models = {"t/slow"};
  queue::ApiKey slow_rate;
  slow_rate.name = "one-a-second";
  slow_rate.models = {"*"};
  slow_rate.rps = 1;
  auto scoped_key = queue::IssueKey(bucket->get(), scoped);
  auto rate_key = queue::IssueKey(bucket->get(), slow_rate);
  ASSERT_TRUE(scoped_key.ok() && rate_key.ok());
  for (const auto* key : {&*scoped_key, &*rate_key}) {
    ASSERT_TRUE(Eventually([&] { return Call(keyed->port(), "GET", "/v1/models", "", Bearer(key->secret)).status; },
                           200, std::chrono::seconds(5)))
        << "the gateway never saw the key";
  }
  expect(Call(keyed->port(), "POST", "/v1/embeddings", Embed("t/embed")), 401, "UNAUTHENTICATED");
  expect(Call(keyed->port(), "POST", "/v1/embeddings", Embed("t/embed"), Bearer(scoped_key->secret)), 403,
         "FORBIDDEN");
  // (A few tries: on a slow machine a token may come back between two.)
  HttpResult limited;
  for (int i = 0; i < 10 && limited.status != 429; ++i) {
    limited = Call(keyed->port(), "POST", "/v1/embeddings", Embed("t/embed"), Bearer(rate_key->secret));
    EXPECT_TRUE(limited.status == 200 || limited.status == 429) << limited.body;
  }
  expect(limited, 429, "RATE_LIMITED");

  // 404: no such model.
  expect(Call(port, "POST", "/v1/encode/no/such-model", R"({"items":[{"text":"x"}]})"), 404, "MODEL_NOT_FOUND");

  // 413: a body over the gateway's --max-body-bytes.
  const std::string big(100 * 1024, 'a');
  expect(Call(port, "POST", "/v1/encode/t/embed", R"({"items":[{"text":")" + big + R"("}]})"), 413,
         "PAYLOAD_TOO_LARGE");

  // 500: the model fails on this input.
  expect(Call(port, "POST", "/v1/encode/t/embed", R"({"items":[{"text":"it goes boom"}]})"), 500,
         "INFERENCE_ERROR");

  // 502: the worker cannot load the model.
  expect(Call(port, "POST", "/v1/encode/t/broken", R"({"items":[{"text":"x"}]})", {{"X-Shoal-Timeout-Ms", "20000"}}),
         502, "MODEL_LOAD_FAILED");

  // 503 NO_CAPACITY: no worker serves the model's pool.
  expect(Call(port, "POST", "/v1/encode/t/orphan", R"({"items":[{"text":"x"}]})"), 503, "NO_CAPACITY");

  // 504: no result within the request's deadline.
  expect(Call(port, "POST", "/v1/encode/t/slow", R"({"items":[{"text":"x"}]})", {{"X-Shoal-Timeout-Ms", "100"}}),
         504, "DEADLINE_EXCEEDED");

  // 503 OVERLOADED: the tight gateway has its one request in flight (a
  // second-long batch). Should the probe have been admitted before it, the
  // holder is the one refused: then again.
  HttpResult refused, held;
  for (int attempt = 0; attempt < 5 && !(refused.status == 503 && held.status == 200); ++attempt) {
    StreamConnection holder(tight->port(), 20000);
    ASSERT_TRUE(holder
                    .Send("POST", "/v1/encode/t/slow", R"({"items":[{"text":"held"}]})",
                          {{"Content-Type", "application/json"}, {"X-Shoal-Timeout-Ms", "20000"}})
                    .ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    refused = Call(tight->port(), "POST", "/v1/encode/t/embed", R"({"items":[{"text":"x"}]})");
    auto head = holder.ReadHead();
    ASSERT_TRUE(head.ok()) << head.status().ToString();
    held = *head;
  }
  EXPECT_EQ(held.status, 200) << held.body;
  expect(refused, 503, "OVERLOADED");

  EXPECT_EQ(seen, (std::set<std::string>{"INVALID_INPUT", "UNAUTHENTICATED", "FORBIDDEN", "MODEL_NOT_FOUND",
                                         "PAYLOAD_TOO_LARGE", "RATE_LIMITED", "INFERENCE_ERROR", "MODEL_LOAD_FAILED",
                                         "OVERLOADED", "NO_CAPACITY", "DEADLINE_EXCEEDED"}))
      << "every code of docs/api.md's list";
}

}  // namespace
}  // namespace shoal::testing
