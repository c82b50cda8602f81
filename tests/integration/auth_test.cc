// API keys, rate limits and admission control (issue 7), over real HTTP
// against a real nats-server: a gateway run with --auth keys lets in only
// the keys of the shoal_keys bucket, each to its models and within its
// limits; it fails closed when it cannot read its keys; and it holds up
// under overload — a bound on requests in flight, and on each model's
// backlog in its work stream.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <cstdio>
#include <set>
#include <thread>

#include "queue/keys.h"
#include "queue/subjects.h"
#include "queue/topology.h"
#include "support/run_command.h"
#include "support/gateway_calls.h"
#include "support/http_client.h"
#include "support/metrics_text.h"
#include "support/test_cluster.h"

namespace shoal::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr char kAdminToken[] = "the-admin-token";

std::string ErrorCode(const HttpResult& r) {
  json j = json::parse(r.body, nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"]["code"].get<std::string>() : "";
}

std::set<std::string> ListedModels(const HttpResult& r) {
  std::set<std::string> ids;
  const json list = json::parse(r.body);
  for (const auto& m : list["data"]) ids.insert(m["id"].get<std::string>());
  return ids;
}

// `shoal <args>` as an operator types it: exit status, stdout, and (2>&1
// when `merge`) stderr.
std::pair<int, std::string> Shoal(const std::string& args, bool merge = false, int timeout_s = 60) {
  const std::string cmd = "timeout " + std::to_string(timeout_s) + " " + std::string(SHOAL_BINARY) + " " + args +
                          (merge ? " 2>&1" : " 2>/dev/null");
  return RunCommand(cmd);
}

class Auth : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new TestCluster();
    cluster_->Register(IdentityProfile("a/one", "identity: {dim: 4}\n"));
    cluster_->Register(IdentityProfile("b/two", "identity: {dim: 4}\n"));
    worker_ = cluster_->StartWorker().release();
    cluster_->WaitForWorkers("b/two", 1);
    auto bucket = queue::OpenKeysBucket(cluster_->control_plane().js.get());
    ASSERT_TRUE(bucket.ok()) << bucket.status().ToString();
    keys_ = std::move(bucket).value().release();
    gateway::GatewayOptions options;
    options.auth = gateway::AuthMode::kKeys;
    options.admin_token = kAdminToken;
    gateway_ = cluster_->StartGateway(options).release();
    ASSERT_TRUE(gateway_);
  }
  static void TearDownTestSuite() {
    delete gateway_;
    delete worker_;
    kvStore_Destroy(keys_);
    delete cluster_;
  }

  static int port() { return gateway_->port(); }

  // Makes a key in the bucket and waits until the gateway knows it.
  static std::string Issue(const std::string& name, std::vector<std::string> models, bool admin = false,
                           uint32_t rps = 0, uint32_t tokens_per_min = 0) {
    queue::ApiKey key;
    key.name = name;
    key.models = std::move(models);
    key.admin = admin;
    key.rps = rps;
    key.tokens_per_min = tokens_per_min;
    auto issued = queue::IssueKey(keys_, key);
    EXPECT_TRUE(issued.ok()) << issued.status().ToString();
    if (!issued.ok()) return "";
    const std::string secret = issued->secret;
    EXPECT_TRUE(Eventually([&] { return Call(port(), "GET", "/v1/models", "", Bearer(secret)).status; }, 200,
                           std::chrono::seconds(2)))
        << "the gateway never saw key " << name;
    return secret;
  }

  static inline TestCluster* cluster_ = nullptr;
  static inline worker::Worker* worker_ = nullptr;
  static inline gateway::Gateway* gateway_ = nullptr;
  static inline kvStore* keys_ = nullptr;
};

TEST_F(Auth, WithoutAValidKeyEveryRouteButTheProbesIs401) {
  const std::string secret = Issue("valid", {"*"});
  for (const Headers& h : {Headers{}, Bearer("sk-shoal-000000000000000000000000000000000000000000000000"),
                           Bearer(secret + "0"), Bearer(secret.substr(0, secret.size() - 1)),
                           Headers{{"Authorization", "Basic " + secret}}, Headers{{"Authorization", secret}},
                           Bearer("")}) {
    const std::string shown = h.empty() ? "(none)" : h.begin()->second;
    HttpResult r = Call(port(), "POST", "/v1/embeddings", Embed("a/one"), h);
    EXPECT_EQ(r.status, 401) << shown << ": " << r.body;
    EXPECT_EQ(ErrorCode(r), "UNAUTHENTICATED") << r.body;
    EXPECT_EQ(r.body.find("sk-shoal"), std::string::npos) << "no secret in an answer: " << r.body;
    EXPECT_EQ(Call(port(), "GET", "/v1/models", "", h).status, 401) << shown;
    EXPECT_EQ(Call(port(), "POST", "/v1/encode/a/one", R"({"items":[{"text":"x"}]})", h).status, 401) << shown;
    EXPECT_EQ(Call(port(), "GET", "/v1/admin/models", "", h).status, 401) << shown;
    EXPECT_EQ(Call(port(), "GET", "/no/such/route", "", h).status, 401) << shown;
  }
  // The probes stay open to load balancers and orchestrators.
  EXPECT_EQ(Call(port(), "GET", "/healthz").status, 200);
  EXPECT_EQ(Call(port(), "GET", "/readyz").status, 200);
  // The same requests with the key succeed.
  HttpResult ok = Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(secret));
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("a/one"), {{"Authorization", "bearer " + secret}}).status,
            200)
      << "the scheme is case-insensitive";
}

TEST_F(Auth, AKeyMayUseOnlyTheModelsInItsScope) {
  const std::string one = Issue("scoped-a", {"a/one"});
  const std::string all = Issue("every-model", {"*"});

  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(one)).status, 200);
  HttpResult other = Call(port(), "POST", "/v1/embeddings", Embed("b/two"), Bearer(one));
  EXPECT_EQ(other.status, 403) << other.body;
  EXPECT_EQ(ErrorCode(other), "FORBIDDEN");
  EXPECT_NE(other.body.find("scoped-a"), std::string::npos) << "names the key, not its secret: " << other.body;
  EXPECT_EQ(Call(port(), "POST", "/v1/encode/b/two", R"({"items":[{"text":"x"}]})", Bearer(one)).status, 403);
  EXPECT_EQ(Call(port(), "POST", "/v1/encode/a/one", R"({"items":[{"text":"x"}]})", Bearer(one)).status, 200);
  // A model outside the scope is refused whether or not it exists: the key
  // learns nothing about the catalog beyond its scope.
  EXPECT_EQ(Call(port(), "POST", "/v1/encode/c/secret-project", R"({"items":[{"text":"x"}]})", Bearer(one)).status,
            403);
  EXPECT_EQ(Call(port(), "POST", "/v1/encode/c/secret-project", R"({"items":[{"text":"x"}]})", Bearer(all)).status,
            404);
  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("b/two"), Bearer(all)).status, 200);

  // /v1/models lists what the key may use.
  EXPECT_EQ(ListedModels(Call(port(), "GET", "/v1/models", "", Bearer(one))), std::set<std::string>{"a/one"});
  EXPECT_EQ(ListedModels(Call(port(), "GET", "/v1/models", "", Bearer(all))),
            (std::set<std::string>{"a/one", "b/two"}));
  EXPECT_EQ(ListedModels(Call(port(), "GET", "/v1/models", "", Bearer(kAdminToken))),
            (std::set<std::string>{"a/one", "b/two"}));
}

TEST_F(Auth, AdminRoutesNeedTheAdminScope) {
  const std::string user = Issue("plain-user", {"*"});
  const std::string admin = Issue("an-admin", {}, /*admin=*/true);
  for (const std::string path : {"/v1/admin/models", "/v1/cluster", "/v1/admin/keys"}) {
    HttpResult refused = Call(port(), "GET", path, "", Bearer(user));
    EXPECT_EQ(refused.status, 403) << path << ": " << refused.body;
    EXPECT_EQ(ErrorCode(refused), "FORBIDDEN");
    EXPECT_EQ(Call(port(), "GET", path, "", Bearer(admin)).status, 200) << path;
    EXPECT_EQ(Call(port(), "GET", path, "", Bearer(kAdminToken)).status, 200) << path;
    EXPECT_EQ(Call(port(), "GET", path, "").status, 401) << path << ": no loopback exemption with keys";
  }
  // An admin-only key (no models) may not run models.
  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(admin)).status, 403);
  EXPECT_TRUE(ListedModels(Call(port(), "GET", "/v1/models", "", Bearer(admin))).empty());
}

TEST_F(Auth, AKeysDefaultPriorityAppliesUnlessTheRequestSaysOtherwise) {
  HttpResult made =
      Call(port(), "POST", "/v1/admin/keys",
           json{{"name", "batch-jobs"}, {"models", {"a/one"}}, {"priority", "batch"}}.dump(), Bearer(kAdminToken));
  ASSERT_EQ(made.status, 201) << made.body;
  EXPECT_EQ(json::parse(made.body)["priority"], "batch");
  const std::string secret = json::parse(made.body)["secret"];
  auto deliveries = [](queue::Priority p) { return cluster_->ConsumerDeliveries("a/one", "default", p); };
  const uint64_t batch_before = deliveries(queue::Priority::kBatch);
  const uint64_t interactive_before = deliveries(queue::Priority::kInteractive);
  ASSERT_TRUE(Eventually([&] { return Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(secret)).status; },
                         200, std::chrono::seconds(2)));
  EXPECT_GT(deliveries(queue::Priority::kBatch), batch_before);
  EXPECT_EQ(deliveries(queue::Priority::kInteractive), interactive_before);
  // The header overrides the key's default.
  Headers headers = Bearer(secret);
  headers["X-Shoal-Priority"] = "interactive";
  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("a/one"), headers).status, 200);
  EXPECT_EQ(deliveries(queue::Priority::kInteractive), interactive_before + 1);
  EXPECT_EQ(Call(port(), "POST", "/v1/admin/keys", json{{"name", "y"}, {"priority", "urgent"}}.dump(),
                 Bearer(kAdminToken))
                .status,
            400);
}

TEST_F(Auth, KeysMadeOverTheAdminApiWorkAndAreListedWithoutSecrets) {
  HttpResult made = Call(port(), "POST", "/v1/admin/keys",
                         json{{"name", "over-http"}, {"models", {"b/two"}}, {"rps", 100}}.dump(), Bearer(kAdminToken));
  ASSERT_EQ(made.status, 201) << made.body;
  const json key = json::parse(made.body);
  const std::string secret = key["secret"];
  EXPECT_TRUE(secret.starts_with("sk-shoal-")) << made.body;
  EXPECT_EQ(key["models"], json::array({"b/two"}));
  EXPECT_EQ(key["rps"], 100);
  EXPECT_FALSE(key.contains("sha256"));

  EXPECT_TRUE(Eventually([&] { return Call(port(), "POST", "/v1/embeddings", Embed("b/two"), Bearer(secret)).status; },
                         200, std::chrono::seconds(1)));
  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(secret)).status, 403);

  HttpResult listed = Call(port(), "GET", "/v1/admin/keys", "", Bearer(kAdminToken));
  ASSERT_EQ(listed.status, 200);
  EXPECT_EQ(listed.body.find("sk-shoal"), std::string::npos) << listed.body;
  EXPECT_EQ(listed.body.find("sha256"), std::string::npos) << listed.body;
  EXPECT_NE(listed.body.find("over-http"), std::string::npos) << listed.body;

  // A taken name, a bad body, an unknown field: refused, nothing replaced.
  EXPECT_EQ(Call(port(), "POST", "/v1/admin/keys", json{{"name", "over-http"}}.dump(), Bearer(kAdminToken)).status,
            400);
  EXPECT_EQ(Call(port(), "POST", "/v1/admin/keys", json{{"name", "x"}, {"rps", -1}}.dump(), Bearer(kAdminToken)).status,
            400);
  EXPECT_EQ(Call(port(), "POST", "/v1/admin/keys", json{{"name", "x"}, {"scope", "*"}}.dump(), Bearer(kAdminToken))
                .status,
            400);
  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("b/two"), Bearer(secret)).status, 200);

  EXPECT_EQ(Call(port(), "DELETE", "/v1/admin/keys/over-http", "", Bearer(kAdminToken)).status, 200);
  EXPECT_TRUE(Eventually([&] { return Call(port(), "POST", "/v1/embeddings", Embed("b/two"), Bearer(secret)).status; },
                         401, std::chrono::seconds(1)));
  EXPECT_EQ(Call(port(), "DELETE", "/v1/admin/keys/over-http", "", Bearer(kAdminToken)).status, 404);
}

TEST_F(Auth, ARemovedKeyIsRefusedWithinASecond) {
  const std::string secret = Issue("short-lived", {"*"});
  ASSERT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(secret)).status, 200);
  ASSERT_TRUE(queue::RevokeKey(keys_, "short-lived").ok());
  const auto removed = Clock::now();
  EXPECT_TRUE(Eventually([&] { return Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(secret)).status; },
                         401, std::chrono::seconds(1)));
  EXPECT_LT(Clock::now() - removed, std::chrono::seconds(1));
  EXPECT_EQ(Call(port(), "GET", "/v1/models", "", Bearer(secret)).status, 401);
}

TEST_F(Auth, AMalformedEntryGrantsNothing) {
  const std::string secret = Issue("to-be-broken", {"*"});
  // Rewritten by hand with a field this version does not know, and then
  // with its scope missing: either way the key stops working — a broken
  // entry is never read halfway, and never keeps its earlier version alive.
  kvEntry* stored = nullptr;
  ASSERT_EQ(kvStore_Get(&stored, keys_, "to-be-broken"), NATS_OK);
  json entry = json::parse(std::string(kvEntry_ValueString(stored), kvEntry_ValueLen(stored)));
  kvEntry_Destroy(stored);
  entry["expires_unix_ms"] = 1;
  const std::string broken = entry.dump();
  uint64_t rev = 0;
  ASSERT_EQ(kvStore_PutString(&rev, keys_, "to-be-broken", broken.c_str()), NATS_OK);
  EXPECT_TRUE(Eventually([&] { return Call(port(), "GET", "/v1/models", "", Bearer(secret)).status; }, 401,
                         std::chrono::seconds(1)));

  entry.erase("expires_unix_ms");
  ASSERT_EQ(kvStore_PutString(&rev, keys_, "to-be-broken", entry.dump().c_str()), NATS_OK);
  EXPECT_TRUE(Eventually([&] { return Call(port(), "GET", "/v1/models", "", Bearer(secret)).status; }, 200,
                         std::chrono::seconds(1)))
      << "a valid entry again";
  entry.erase("models");
  ASSERT_EQ(kvStore_PutString(&rev, keys_, "to-be-broken", entry.dump().c_str()), NATS_OK);
  EXPECT_TRUE(Eventually([&] { return Call(port(), "GET", "/v1/models", "", Bearer(secret)).status; }, 401,
                         std::chrono::seconds(1)));
  ASSERT_EQ(kvStore_PutString(&rev, keys_, "garbage", "{not json"), NATS_OK);
  EXPECT_EQ(Call(port(), "GET", "/readyz").status, 200) << "the gateway carries on";
  // `ls` skips what it cannot read.
  auto listed = queue::ListKeys(keys_);
  ASSERT_TRUE(listed.ok());
  for (const auto& k : *listed) EXPECT_NE(k.name, "garbage");
  EXPECT_EQ(kvStore_Purge(keys_, "garbage", nullptr), NATS_OK);
  EXPECT_EQ(kvStore_Purge(keys_, "to-be-broken", nullptr), NATS_OK);
}

TEST_F(Auth, OverItsRequestRateAKeyGets429WithRetryAfterAndLaterSucceeds) {
  const std::string secret = Issue("two-a-second", {"*"}, false, /*rps=*/2);
  // Issue's probe (GET /v1/models) is not charged: only model requests are.
  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(secret)).status, 200);
  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(secret)).status, 200);
  HttpResult limited = Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(secret));
  ASSERT_EQ(limited.status, 429) << limited.body;
  EXPECT_EQ(ErrorCode(limited), "RATE_LIMITED");
  EXPECT_NE(limited.body.find("2 requests/s"), std::string::npos) << limited.body;
  const std::string retry_after = limited.Header("retry-after");
  ASSERT_EQ(retry_after, "1") << "a token comes back within half a second: rounded up to 1";

  std::this_thread::sleep_for(std::chrono::seconds(std::stoi(retry_after)));
  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(secret)).status, 200);

  // Other keys are not held back by this one; keys without limits never are.
  const std::string free = Issue("unlimited", {"*"});
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(free)).status, 200) << i;
  }
}

TEST_F(Auth, OverItsTokenQuotaAKeyWaitsAsLongAsItsBucketSays) {
  const std::string secret = Issue("small-quota", {"*"}, false, 0, /*tokens_per_min=*/600);
  // 2,000 bytes: an estimate of 501 tokens (about four bytes a token).
  const std::string text(2000, 'x');
  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("a/one", text), Bearer(secret)).status, 200);
  HttpResult limited = Call(port(), "POST", "/v1/embeddings", Embed("a/one", text), Bearer(secret));
  ASSERT_EQ(limited.status, 429) << limited.body;
  EXPECT_NE(limited.body.find("600 tokens/min"), std::string::npos) << limited.body;
  // 99 tokens left, 501 needed, 10 a second: 40.2 s, rounded up.
  const int retry_after = std::stoi(limited.Header("retry-after"));
  EXPECT_GE(retry_after, 40);
  EXPECT_LE(retry_after, 41);
  // A small request still fits what is left.
  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("a/one", "small"), Bearer(secret)).status, 200);
}

TEST_F(Auth, TheCliCreatesListsAndRemovesKeys) {
  const std::string nats = "keys --nats " + cluster_->nats_url() + " ";
  auto [rc, secret] = Shoal(nats + "create --name cli-key --models a/one --rps 50 --tokens-per-min 100000");
  ASSERT_EQ(rc, 0) << secret;
  while (!secret.empty() && secret.back() == '\n') secret.pop_back();
  ASSERT_TRUE(secret.starts_with("sk-shoal-")) << "stdout is the secret alone: " << secret;
  ASSERT_EQ(secret.find('\n'), std::string::npos) << secret;

  EXPECT_TRUE(Eventually([&] { return Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(secret)).status; },
                         200, std::chrono::seconds(1)));
  EXPECT_EQ(Call(port(), "POST", "/v1/embeddings", Embed("b/two"), Bearer(secret)).status, 403);

  auto [ls_rc, listing] = Shoal(nats + "ls");
  ASSERT_EQ(ls_rc, 0) << listing;
  const size_t row = listing.find("cli-key");
  ASSERT_NE(row, std::string::npos) << listing;
  EXPECT_NE(listing.find("a/one", row), std::string::npos) << listing;
  EXPECT_NE(listing.find("100000", row), std::string::npos) << listing;
  EXPECT_EQ(listing.find("sk-shoal"), std::string::npos) << "never a secret: " << listing;
  EXPECT_EQ(listing.find(secret.substr(9, 12)), std::string::npos) << listing;

  auto [dup_rc, dup] = Shoal(nats + "create --name cli-key", /*merge=*/true);
  EXPECT_EQ(dup_rc, 1) << dup;
  EXPECT_NE(dup.find("exists"), std::string::npos) << dup;
  auto [bad_rc, bad] = Shoal(nats + "create --name bad-scope --models 'a/one,*'", true);
  EXPECT_EQ(bad_rc, 1) << bad;

  auto [rm_rc, removed] = Shoal(nats + "rm cli-key", true);
  EXPECT_EQ(rm_rc, 0) << removed;
  EXPECT_TRUE(Eventually([&] { return Call(port(), "POST", "/v1/embeddings", Embed("a/one"), Bearer(secret)).status; },
                         401, std::chrono::seconds(1)));
  auto [again_rc, again] = Shoal(nats + "rm cli-key", true);
  EXPECT_EQ(again_rc, 1) << again;
  EXPECT_NE(again.find("no key named 'cli-key'"), std::string::npos) << again;
}

TEST(AuthFailsClosed, WhileItsKeysCannotBeReadTheGatewayRefusesEveryKey) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("a/one", "identity: {dim: 4}\n"));
  auto bucket = queue::OpenKeysBucket(cluster.control_plane().js.get());
  ASSERT_TRUE(bucket.ok());
  auto issued = queue::IssueKey(bucket->get(), queue::ApiKey{.name = "k", .models = {"*"}});
  ASSERT_TRUE(issued.ok());
  const std::string secret = issued->secret;
  bucket->reset();
  gateway::GatewayOptions options;
  options.auth = gateway::AuthMode::kKeys;
  auto gw = cluster.StartGateway(options);
  ASSERT_TRUE(gw);
  const int port = gw->port();
  auto models = [&] { return Call(port, "GET", "/v1/models", "", Bearer(secret)).status; };
  ASSERT_EQ(models(), 200);

  // NATS gone: the gateway cannot know whether the key was removed, so it
  // refuses it (503 NO_CAPACITY + Retry-After), at once, rather than let it in.
  cluster.StopNats();
  ASSERT_TRUE(Eventually(models, 503, std::chrono::seconds(3)));
  HttpResult refused = Call(port, "GET", "/v1/models", "", Bearer(secret));
  EXPECT_EQ(ErrorCode(refused), "NO_CAPACITY") << refused.body;
  EXPECT_FALSE(refused.Header("retry-after").empty());
  EXPECT_EQ(Call(port, "GET", "/v1/models").status, 401) << "still no way in without a key";
  EXPECT_EQ(Call(port, "GET", "/healthz").status, 200);

  // Back: the watch resumes, and follows changes again.
  cluster.StartNats();
  EXPECT_TRUE(Eventually(models, 200, std::chrono::seconds(10)));
  auto again = queue::OpenKeysBucket(cluster.control_plane().js.get());
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(queue::RevokeKey(again->get(), "k").ok());
  EXPECT_TRUE(Eventually(models, 401, std::chrono::seconds(1)));
}

TEST(AuthFailsClosed, AnUnknownAuthModeIsAStartupError) {
  TestCluster cluster;
  // (`timeout`: were the mode accepted, the gateway would run until stopped.)
  auto [rc, out] = Shoal("gateway --port 0 --nats " + cluster.nats_url() + " --auth open", /*merge=*/true,
                         /*timeout_s=*/20);
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("--auth"), std::string::npos) << out;
}

// SHOAL_AUTH turns keys on like --auth does.
TEST(AuthFailsClosed, ShoalAuthFromTheEnvironment) {
  TestCluster cluster;
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  auto bogus = Subprocess::Spawn({SHOAL_BINARY, "gateway", "--nats", cluster.nats_url(), "--port", "0"},
                                 cluster.dir() + "/bogus.log", {"SHOAL_AUTH=open"});
  ASSERT_TRUE(bogus.ok());
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (bogus->Running() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(bogus->Running()) << "an unknown SHOAL_AUTH must stop the gateway";

  auto gw = Subprocess::Spawn({SHOAL_BINARY, "gateway", "--nats", cluster.nats_url(), "--port", std::to_string(*port)},
                              cluster.dir() + "/gateway.log", {"SHOAL_AUTH=keys"});
  ASSERT_TRUE(gw.ok());
  ASSERT_TRUE(Eventually(
      [&] {
        HttpClient http(*port, 1000);
        auto r = http.Get("/healthz");
        return r.ok() ? r->status : 0;
      },
      200, std::chrono::seconds(20)));
  EXPECT_EQ(Call(*port, "GET", "/v1/models").status, 401);
  gw->Stop(SIGTERM, std::chrono::seconds(10));
}

TEST(Overload, PastMaxInFlightTheGatewayAnswers503AtOnce) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("slow/one", "identity: {dim: 4, us_per_batch: 2000000}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("slow/one", 1);
  gateway::GatewayOptions options;
  options.max_in_flight = 2;
  auto gw = cluster.StartGateway(options);
  ASSERT_TRUE(gw);
  const int port = gw->port();

  std::vector<std::thread> slow;
  std::vector<int> statuses(2);
  for (int i = 0; i < 2; ++i) {
    slow.emplace_back([&, i] { statuses[i] = Call(port, "POST", "/v1/embeddings", Embed("slow/one")).status; });
  }
  // Both admitted and waiting for their results (the gauge /metrics shows,
  // which admission never refuses).
  auto in_flight = [&] {
    return MetricValue(Call(port, "GET", "/metrics").body, "shoal_gateway_in_flight").value_or(-1);
  };
  ASSERT_TRUE(Eventually([&] { return static_cast<int>(in_flight()); }, 2, std::chrono::seconds(20)));

  HttpResult refused = Call(port, "POST", "/v1/embeddings", Embed("slow/one"));
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(ErrorCode(refused), "OVERLOADED") << refused.body;
  EXPECT_EQ(refused.Header("retry-after"), "1");
  EXPECT_EQ(in_flight(), 2) << "refused at once, while both were still in flight, not after a wait";
  EXPECT_EQ(Call(port, "GET", "/healthz").status, 200) << "probes are never refused";
  EXPECT_EQ(Call(port, "GET", "/v1/models").status, 503) << "every other route counts";

  for (auto& t : slow) t.join();
  EXPECT_EQ(statuses, (std::vector<int>{200, 200}));
  // Their places were given back when they were answered.
  EXPECT_EQ(Call(port, "GET", "/v1/models").status, 200);
  EXPECT_EQ(Call(port, "POST", "/v1/embeddings", Embed("slow/one")).status, 200);
}

TEST(Overload, AModelsBacklogIsBoundedInItsWorkStream) {
  TestCluster cluster;
  // Batches of one item, a second each: what is published stays in the
  // stream (WorkQueue retention keeps a message until it is acked).
  cluster.Register(IdentityProfile("slow/backlog", "pool: bounded\nidentity: {dim: 4, us_per_batch: 1000000}\n"
                                                   "batching: {max_batch_requests: 1}\n"));
  cluster.Register(IdentityProfile("fast/neighbour", "pool: bounded\nidentity: {dim: 4}\n"));
  worker::WorkerOptions wo;
  wo.pool = "bounded";
  wo.executors = 2;
  auto worker = cluster.StartWorkerWith(wo);
  cluster.WaitForWorkers("slow/backlog", 1);
  cluster.WaitForWorkers("fast/neighbour", 1);
  // As a stream made before per-model bounds had it: none.
  queue::StreamLimits unbounded;
  unbounded.max_msgs_per_subject = -1;
  ASSERT_TRUE(queue::EnsureWorkStream(cluster.control_plane().js.get(), "bounded", unbounded).ok());
  gateway::GatewayOptions options;
  options.stream_limits.max_msgs_per_subject = 3;
  auto gw = cluster.StartGateway(options);
  ASSERT_TRUE(gw);
  const int port = gw->port();

  // The gateway set the bound on the pool's stream (nats-server 2.9 has it),
  // and a model registered later (as `shoal models add` does) leaves it.
  cluster.Register(IdentityProfile("late/comer", "pool: bounded\nidentity: {dim: 4}\n"));
  jsStreamInfo* si = nullptr;
  ASSERT_EQ(js_GetStreamInfo(&si, cluster.control_plane().js.get(), queue::WorkStreamName("bounded").c_str(), nullptr,
                             nullptr),
            NATS_OK);
  EXPECT_EQ(si->Config->MaxMsgsPerSubject, 3);
  EXPECT_TRUE(si->Config->DiscardNewPerSubject);
  jsStreamInfo_Destroy(si);

  // Five items for one model: the fourth is refused by the stream, and the
  // client hears 503 OVERLOADED with Retry-After, at once.
  json five;
  for (int i = 0; i < 5; ++i) five["items"].push_back({{"text", "item " + std::to_string(i)}});
  const auto t0 = Clock::now();
  HttpResult refused = Call(port, "POST", "/v1/encode/slow/backlog", five.dump(), {{"X-Shoal-Timeout-Ms", "5000"}});
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(ErrorCode(refused), "OVERLOADED") << refused.body;
  EXPECT_FALSE(refused.Header("retry-after").empty());
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1));
  auto waiting = queue::WorkMessagesByModel(cluster.control_plane().js.get(), "bounded");
  ASSERT_TRUE(waiting.ok());
  EXPECT_LE((*waiting)["slow/backlog"].total(), 3u) << "never past the bound";

  // The other model of the pool is not held back by this one's backlog.
  HttpResult neighbour =
      Call(port, "POST", "/v1/encode/fast/neighbour", R"({"items":[{"text":"x"}]})", {{"X-Shoal-Timeout-Ms", "10000"}});
  EXPECT_EQ(neighbour.status, 200) << neighbour.body;
}

}  // namespace
}  // namespace shoal::testing
