// The push baseline (gateway/push_dispatcher.h) end to end: HTTP → gateway →
// core NATS push to one chosen worker → its local queue → result → gateway,
// against a real nats-server, with two in-process workers. Which worker ran
// what is read from the workers' own count of pushed items.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "baselines/baseline_gateways.h"
#include "baselines/push_intake.h"
#include "runtime/identity/identity_runtime.h"
#include "support/http_client.h"
#include "support/test_cluster.h"
#include "queue/subjects.h"
#include "queue/message.h"
#include "wire/work_message.h"

namespace shoal::testing {
namespace {

constexpr int kDim = 24;
using baselines::DispatchMode;

std::string EncodeBody(const std::vector<std::string>& texts) {
  nlohmann::json j;
  j["items"] = nlohmann::json::array();
  for (const auto& t : texts) j["items"].push_back({{"text", t}});
  return j.dump();
}

class PushDispatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 2 ms of simulated device time per token: a long request keeps a worker
    // busy long enough to be seen as loaded.
    cluster_.Register(IdentityProfile("test/embed", "identity: {dim: 24, us_per_token: 2000}\n"));
    cluster_.Register(IdentityProfile("test/unserved", "identity: {dim: 24}\n"));
    a_ = cluster_.StartWorker({"test/embed"});
    b_ = cluster_.StartWorker({"test/embed"});
    a_push_ = std::move(baselines::PushIntake::Attach(a_.get())).value();
    b_push_ = std::move(baselines::PushIntake::Attach(b_.get())).value();
    cluster_.WaitForWorkers("test/embed", 2);
  }

  std::unique_ptr<gateway::Gateway> StartGateway(DispatchMode mode) {
    gateway::GatewayOptions options;
    baselines::UseDispatch(mode, &options);
    options.http.io_threads = 1;  // one lane: one view, one outstanding count
    auto gw = cluster_.StartGateway(options);
    // The lane's view of the workers is refreshed every second, as a router
    // polls; the registry may not have had both heartbeats at the first.
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    return gw;
  }

  TestCluster cluster_;
  std::unique_ptr<worker::Worker> a_, b_;
  std::unique_ptr<baselines::PushIntake> a_push_, b_push_;
};

TEST_F(PushDispatchTest, RoundRobinAnswersRightAndSpreadsOverBothWorkers) {
  auto gw = StartGateway(DispatchMode::kPushRoundRobin);
  ASSERT_TRUE(gw);
  HttpClient http(gw->port());
  for (int i = 0; i < 10; ++i) {
    const std::string text = "hello number " + std::to_string(i);
    auto res = http.PostJson("/v1/encode/test/embed", EncodeBody({text, "second item"}));
    ASSERT_TRUE(res.ok()) << res.status().ToString();
    ASSERT_EQ(res->status, 200) << res->body;
    auto j = nlohmann::json::parse(res->body);
    ASSERT_EQ(j["items"].size(), 2u);
    const auto got = j["items"][0]["dense"].get<std::vector<float>>();
    const auto want = IdentityVector(IdentityTokens(text), kDim, true);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) EXPECT_FLOAT_EQ(got[k], want[k]);
  }
  // Round-robin over two workers: five requests (ten items) each.
  EXPECT_EQ(a_push_->items(), 10u);
  EXPECT_EQ(b_push_->items(), 10u);
  // Nothing went through the work queue.
  EXPECT_EQ(cluster_.StreamMessages(), 0u);
}

TEST_F(PushDispatchTest, LeastOutstandingAvoidsTheBusyWorker) {
  auto gw = StartGateway(DispatchMode::kPushLeastOutstanding);
  ASSERT_TRUE(gw);
  // A long request: 20 items of 40 tokens, ~1.6 s on whichever worker gets it.
  std::vector<std::string> slow_items(20);
  for (auto& t : slow_items) {
    for (int w = 0; w < 40; ++w) t += "w ";
  }
  std::thread slow([&] {
    HttpClient http(gw->port());
    auto res = http.PostJson("/v1/encode/test/embed", EncodeBody(slow_items));
    ASSERT_TRUE(res.ok());
    EXPECT_EQ(res->status, 200) << res->body;
  });
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (a_push_->items() + b_push_->items() < 20 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(a_push_->items() + b_push_->items(), 20u);
  baselines::PushIntake* busy = a_push_->items() == 20 ? a_push_.get() : b_push_.get();
  baselines::PushIntake* idle = busy == a_push_.get() ? b_push_.get() : a_push_.get();

  // Short requests meanwhile, one at a time: each finds the busy worker with
  // 20 outstanding items and the other with none.
  HttpClient http(gw->port());
  for (int i = 0; i < 6; ++i) {
    auto res = http.PostJson("/v1/encode/test/embed", EncodeBody({"x"}));
    ASSERT_TRUE(res.ok());
    ASSERT_EQ(res->status, 200) << res->body;
  }
  EXPECT_EQ(busy->items(), 20u);
  EXPECT_EQ(idle->items(), 6u);
  slow.join();
}

TEST_F(PushDispatchTest, ABatchClassRequestIsRefusedNotQueuedAsInteractive) {
  gateway::GatewayOptions options;
  baselines::UseDispatch(DispatchMode::kPushRoundRobin, &options);
  auto gw = cluster_.StartGateway(options);
  ASSERT_TRUE(gw);
  HttpClient http(gw->port());
  auto res = http.PostJson("/v1/encode/test/embed", EncodeBody({"a"}), {{"X-Shoal-Priority", "batch"}});
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_NE(res->body.find("X-Shoal-Priority"), std::string::npos) << res->body;
  res = http.PostJson("/v1/encode/test/embed", EncodeBody({"a"}), {{"X-Shoal-Priority", "interactive"}});
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 200) << res->body;
}

TEST_F(PushDispatchTest, UnservedModelIsNoCapacityAfterTheBoundedWait) {
  gateway::GatewayOptions options;
  baselines::UseDispatch(DispatchMode::kPushRoundRobin, &options);
  options.no_capacity_wait = std::chrono::milliseconds(1500);
  auto gw = cluster_.StartGateway(options);
  ASSERT_TRUE(gw);
  HttpClient http(gw->port());
  const auto t0 = std::chrono::steady_clock::now();
  auto res = http.PostJson("/v1/encode/test/unserved", EncodeBody({"a"}));
  const auto waited = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 503) << res->body;
  EXPECT_EQ(nlohmann::json::parse(res->body)["error"]["code"], "NO_CAPACITY");
  EXPECT_GE(waited, std::chrono::milliseconds(1400));
  EXPECT_LT(waited, std::chrono::milliseconds(4000));
}

TEST_F(PushDispatchTest, WorkerAnswersAPushForAModelItDoesNotServeAtOnce) {
  queue::ConnectOptions co;
  co.url = cluster_.nats_url();
  co.name = "test";
  auto nc = queue::Connect(co);
  ASSERT_TRUE(nc.ok()) << nc.status().ToString();
  natsSubscription* raw_sub = nullptr;
  ASSERT_EQ(natsConnection_SubscribeSync(&raw_sub, nc->get(), "_INBOX.test.1"), NATS_OK);
  queue::SubscriptionPtr sub(raw_sub);
  wire::WorkHeader work;
  work.request_id = "r1";
  work.reply = "_INBOX.test.1";
  std::string message;
  wire::AppendWork(work, "\x81\xa4text\xa1" "a", &message);  // {"text": "a"}
  ASSERT_TRUE(queue::Publish(nc->get(), queue::PushSubject(a_->id(), "test/unserved"), message).ok());
  natsMsg* reply = nullptr;
  ASSERT_EQ(natsSubscription_NextMsg(&reply, sub.get(), 3000), NATS_OK);
  const queue::Message r{queue::MsgPtr(reply)};
  wire::ReplyHeader h;
  std::string_view body;
  ASSERT_TRUE(wire::ReadReply(r.payload(), &h, &body).ok());
  EXPECT_EQ(h.error, Code::kNoCapacity);
  EXPECT_EQ(h.worker, a_->id());
  EXPECT_EQ(a_push_->items(), 0u);
}

}  // namespace
}  // namespace shoal::testing
