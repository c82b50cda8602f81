// A worker's side of hedging (gateway/queue_dispatcher.h): copies of stored
// items that a gateway sends over core NATS while their work stream elects
// a leader. The worker runs a copy for a model it has loaded and answers it
// like a pulled item; a copy it cannot run is dropped without a word, since
// the stream holds the item and will deliver it. Against a real nats-server
// and an in-process worker. (The gateway's side runs in the chaos scenario
// nats_cluster_kill: an election needs a JetStream cluster.)
#include <gtest/gtest.h>

#include "queue/message.h"
#include "queue/subjects.h"
#include "runtime/identity/identity_runtime.h"
#include "support/test_cluster.h"
#include "wire/work_message.h"

namespace shoal::testing {
namespace {

class HedgingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
    cluster_.Register(IdentityProfile("test/elsewhere", "identity: {dim: 8}\n"));
    worker_ = cluster_.StartWorker({"test/embed"});
    cluster_.WaitForWorkers("test/embed", 1);
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

  // A hedged copy of item `item` for `model`, its reply to _INBOX.hedge.
  void Hedge(const std::string& model, uint32_t item) {
    wire::WorkHeader work;
    work.request_id = "r1";
    work.item = item;
    work.reply = "_INBOX.hedge";
    std::string message;
    wire::AppendWork(work, "\x81\xa4text\xa1" "a", &message);  // {"text": "a"}
    ASSERT_TRUE(queue::Publish(nc_.get(), queue::HedgeSubject(worker_->id(), model), message).ok());
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

}  // namespace
}  // namespace shoal::testing
