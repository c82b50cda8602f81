// A worker's side of hedging (gateway/queue_dispatcher.h): copies of stored
// items that a gateway sends over core NATS while their work stream elects
// a leader. The worker runs a copy for a model it has loaded and answers it
// like a pulled item; a copy it cannot run is dropped without a word, since
// the stream holds the item and will deliver it. A copy for idle hands runs
// only where the stream delivers none of its model's work. Against a real
// nats-server and an in-process worker. The gateway's side: an item its
// stream stored but nobody was delivered (here: the model's consumer is
// deleted on the server) is answered through a copy for idle hands. (Its
// stalled-stream side runs in the chaos scenario nats_cluster_kill: an
// election needs a JetStream cluster.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "queue/message.h"
#include "queue/subjects.h"
#include "runtime/identity/identity_runtime.h"
#include "support/http_client.h"
#include "support/metrics_text.h"
#include "support/test_cluster.h"
#include "wire/work_message.h"

namespace shoal::testing {
namespace {

class HedgingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
    cluster_.Register(IdentityProfile("test/elsewhere", "identity: {dim: 8}\n"));
    cluster_.Register(IdentityProfile("test/other", "identity: {dim: 8}\n"));
    queue::ConnectOptions co;
    co.url = cluster_.nats_url();
    co.name = "hedging-test";
    auto nc = queue::Connect(co);
    ASSERT_TRUE(nc.ok()) << nc.status().ToString();
    nc_ = std::move(nc).value();
    natsSubscription* sub = nullptr;
    ASSERT_EQ(natsConnection_SubscribeSync(&sub, nc_.get(), "_INBOX.hedge"), NATS_OK);
    inbox_.reset(sub);
  }

  // A worker of test/embed and test/other that counts as starved of a
  // model the stream has delivered none of for `starved_after`.
  void StartWorker(std::chrono::milliseconds starved_after = queue::PullTiming{}.starved_after) {
    worker::WorkerOptions options;
    options.models = {"test/embed", "test/other"};
    options.pull.starved_after = starved_after;
    worker_ = cluster_.StartWorkerWith(std::move(options));
    cluster_.WaitForWorkers("test/embed", 1);
  }

  // Item `item` of a request for `model`, its reply to _INBOX.hedge: a
  // hedged copy (for idle hands only, or not), or the stream's own.
  void Hedge(const std::string& model, uint32_t item, bool if_idle = false) {
    ASSERT_TRUE(queue::Publish(nc_.get(), queue::HedgeSubject(worker_->id(), model, if_idle), Work(item)).ok());
  }
  void Enqueue(const std::string& model, uint32_t item) {
    ASSERT_TRUE(queue::Publish(nc_.get(), queue::WorkSubject("default", model), Work(item)).ok());
  }
  static std::string Work(uint32_t item) {
    wire::WorkHeader work;
    work.request_id = "r1";
    work.item = item;
    work.reply = "_INBOX.hedge";
    std::string message;
    wire::AppendWork(work, "\x81\xa4text\xa1" "a", &message);  // {"text": "a"}
    return message;
  }

  // The next reply's header (its item and error).
  wire::ReplyHeader NextReply() {
    natsMsg* raw = nullptr;
    EXPECT_EQ(natsSubscription_NextMsg(&raw, inbox_.get(), 10000), NATS_OK) << "no reply";
    if (raw == nullptr) return {};
    replies_.emplace_back(queue::MsgPtr(raw));
    wire::ReplyHeader h;
    std::string_view body;
    EXPECT_TRUE(wire::ReadReply(replies_.back().payload(), &h, &body).ok());
    return h;
  }

  TestCluster cluster_;
  std::unique_ptr<worker::Worker> worker_;
  queue::ConnectionPtr nc_;
  queue::SubscriptionPtr inbox_;
  std::vector<queue::Message> replies_;  // own the headers' bytes
};

TEST_F(HedgingTest, ACopyForALoadedModelIsAnsweredAndOneForAnotherIsLeftToTheStream) {
  StartWorker();
  // In this order, one connection to one subscriber: had the worker answered
  // the first copy, its answer would come before the second's result.
  Hedge("test/elsewhere", 0);
  Hedge("test/embed", 1);
  wire::ReplyHeader h = NextReply();
  EXPECT_EQ(h.item, 1u);
  EXPECT_EQ(h.error, Code::kOk);
  EXPECT_EQ(h.worker, worker_->id());
  EXPECT_EQ(h.attempt, 1u);
  Hedge("test/embed", 2);
  h = NextReply();
  EXPECT_EQ(h.item, 2u) << "a copy the worker cannot run was answered";
  EXPECT_EQ(h.error, Code::kOk);
  // Nothing went through the stream, and nothing was acked there.
  EXPECT_EQ(cluster_.StreamMessages(), 0u);
}

TEST_F(HedgingTest, ACopyForIdleHandsRunsOnlyWhereTheStreamDeliversNoneOfItsModel) {
  // test/other is fed by the stream (one delivery, "fresh" for a minute);
  // test/embed never was.
  StartWorker(std::chrono::minutes(1));
  Enqueue("test/other", 0);
  wire::ReplyHeader h = NextReply();
  EXPECT_EQ(h.item, 0u);
  EXPECT_EQ(h.attempt, 1u);  // the stream's delivery
  // In this order on one connection: had the worker taken the first copy,
  // its answer would come first.
  Hedge("test/other", 1, /*if_idle=*/true);
  Hedge("test/embed", 2, /*if_idle=*/true);
  h = NextReply();
  EXPECT_EQ(h.item, 2u) << "a copy for idle hands ran where the stream delivers its model's work";
  EXPECT_EQ(h.error, Code::kOk);
  EXPECT_EQ(h.worker, worker_->id());
}

TEST_F(HedgingTest, AStoredItemItsConsumerNeverDeliversIsAnsweredThroughAnIdleWorker) {
  StartWorker();
  auto gw = cluster_.StartGateway();
  ASSERT_TRUE(gw);
  HttpClient http(gw->port());
  const auto embed = [&](const std::string& text) {
    return http.PostJson("/v1/embeddings", nlohmann::json{{"model", "test/embed"}, {"input", text}}.dump());
  };
  auto warm = embed("before");
  ASSERT_TRUE(warm.ok()) << warm.status().ToString();
  ASSERT_EQ(warm->status, 200) << warm->body;
  // The stream still stores the model's work; nothing delivers it any more.
  jsCtx* js = nullptr;
  ASSERT_EQ(natsConnection_JetStream(&js, nc_.get(), nullptr), NATS_OK);
  queue::JsCtxPtr js_owner(js);
  ASSERT_EQ(js_DeleteConsumer(js, queue::WorkStreamName("default").c_str(), queue::ConsumerName("test/embed").c_str(),
                              nullptr, nullptr),
            NATS_OK);
  const uint64_t stored_before = cluster_.StreamMessages();

  auto res = embed("after the consumer is gone");
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(res->status, 200) << res->body;
  const auto got = nlohmann::json::parse(res->body)["data"][0]["embedding"].get<std::vector<float>>();
  const auto want = IdentityVector(IdentityTokens("after the consumer is gone"), 8, true);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_FLOAT_EQ(got[k], want[k]);
  EXPECT_EQ(cluster_.StreamMessages(), stored_before + 1) << "the item was stored, and stays for nobody";
  auto page = http.Get("/metrics");
  ASSERT_TRUE(page.ok());
  EXPECT_GE(MetricValue(page->body, "shoal_gateway_hedged_items_total").value_or(0), 1);
}

}  // namespace
}  // namespace shoal::testing
