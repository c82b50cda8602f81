// The worker's reading of a work message (worker/work_item.h): the header's
// fields, the LoRA adapter among them, and the body.
#include "worker/work_item.h"

#include <gtest/gtest.h>

#include "queue/message.h"
#include "wire/work_message.h"

namespace shoal::worker {
namespace {

// Messages need the NATS library open (a connection would open it).
class WorkItemHeaders : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { nats_Open(-1); }
};

constexpr std::string_view kBody = "\x81\xa4text\xa1" "a";  // {"text": "a"}

queue::Message Message(const wire::WorkHeader& h, const char* ack = nullptr) {
  std::string payload;
  wire::AppendWork(h, kBody, &payload);
  natsMsg* raw = nullptr;
  EXPECT_EQ(natsMsg_Create(&raw, "shoal.work.default.m", ack, payload.data(), static_cast<int>(payload.size())),
            NATS_OK);
  return queue::Message(queue::MsgPtr(raw));
}

TEST_F(WorkItemHeaders, ReadsTheAdapterAndTheOtherFields) {
  wire::WorkHeader h;
  h.request_id = "r-1";
  h.item = 3;
  h.cost = 12;
  h.reply = "_INBOX.g.1";
  h.task = Task::kScore;
  h.truncate = true;
  h.lora = "support-v2";
  WorkItem item;
  ASSERT_TRUE(ParsePushedItem(Message(h), nullptr, &item).ok());
  EXPECT_EQ(item.work.lora, "support-v2");
  EXPECT_EQ(item.work.request_id, "r-1");
  EXPECT_EQ(item.work.item, 3u);
  EXPECT_EQ(item.work.cost, 12u);
  EXPECT_EQ(item.work.task, Task::kScore);
  EXPECT_TRUE(item.work.truncate);
  EXPECT_EQ(item.payload, kBody);
}

TEST_F(WorkItemHeaders, WithoutAnAdapterItRunsOnTheBase) {
  wire::WorkHeader h;
  h.request_id = "r-2";
  h.reply = "_INBOX.g.2";
  WorkItem item;
  ASSERT_TRUE(ParsePushedItem(Message(h), nullptr, &item).ok());
  EXPECT_TRUE(item.work.lora.empty());
  EXPECT_EQ(item.work.task, Task::kEncode);
  EXPECT_TRUE(item.work.normalize);
}

TEST_F(WorkItemHeaders, APulledMessageReadsTheSameWay) {
  wire::WorkHeader h;
  h.request_id = "r-3";
  h.reply = "_INBOX.g.3";
  h.lora = "a.b_c-1";
  WorkItem item;
  queue::PullSubscriber::Delivery d{};
  d.delivered = 2;
  // An ack subject is what JetStream gives a delivered message; a made-up one
  // stands in.
  ASSERT_TRUE(ParseWorkItem(Message(h, "$JS.ACK.x"), nullptr, d, &item).ok());
  EXPECT_EQ(item.work.lora, "a.b_c-1");
  EXPECT_EQ(item.delivered, 2u);
  EXPECT_EQ(item.ack, "$JS.ACK.x");
  EXPECT_TRUE(item.HasAck());
}

TEST_F(WorkItemHeaders, AMessageWithNobodyToAnswerIsRefused) {
  wire::WorkHeader h;
  h.request_id = "r-4";  // no reply subject
  WorkItem item;
  EXPECT_EQ(ParsePushedItem(Message(h), nullptr, &item).code(), Code::kInvalidInput);
  natsMsg* raw = nullptr;
  ASSERT_EQ(natsMsg_Create(&raw, "shoal.work.default.m", nullptr, "garbage", 7), NATS_OK);
  EXPECT_EQ(ParsePushedItem(queue::Message(queue::MsgPtr(raw)), nullptr, &item).code(), Code::kInvalidInput);
}

}  // namespace
}  // namespace shoal::worker
