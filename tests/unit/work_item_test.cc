// The worker's reading of a work message's headers (worker/work_item.h), the
// LoRA adapter (Shoal-Lora) among them.
#include "worker/work_item.h"

#include <gtest/gtest.h>

#include "wire/work_message.h"

namespace shoal::worker {
namespace {

// Messages need the NATS library open (a connection would open it).
class WorkItemHeaders : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { nats_Open(-1); }
};

queue::MsgPtr Message(const std::vector<std::pair<const char*, const char*>>& headers) {
  natsMsg* raw = nullptr;
  const std::string payload = "\x81\xa4text\xa1" "a";  // {"text": "a"}
  EXPECT_EQ(natsMsg_Create(&raw, "shoal.work.default.m", nullptr, payload.data(), static_cast<int>(payload.size())),
            NATS_OK);
  for (const auto& [k, v] : headers) natsMsgHeader_Set(raw, k, v);
  return queue::MsgPtr(raw);
}

TEST_F(WorkItemHeaders, ReadsTheAdapterAndTheOtherHeaders) {
  WorkItem item;
  ASSERT_TRUE(ParsePushedItem(Message({{wire::kHeaderRequestId, "r-1"},
                                       {wire::kHeaderItem, "3"},
                                       {wire::kHeaderCost, "12"},
                                       {wire::kHeaderReply, "_INBOX.g.1"},
                                       {wire::kHeaderTask, "score"},
                                       {wire::kHeaderTruncate, "1"},
                                       {wire::kHeaderLora, "support-v2"}}),
                              nullptr, &item)
                  .ok());
  EXPECT_EQ(item.lora, "support-v2");
  EXPECT_EQ(item.request_id, "r-1");
  EXPECT_EQ(item.index, 3u);
  EXPECT_EQ(item.cost, 12u);
  EXPECT_EQ(item.task, "score");
  EXPECT_TRUE(item.truncate);
  EXPECT_EQ(item.payload.size(), 8u);
}

TEST_F(WorkItemHeaders, WithoutTheHeaderItRunsOnTheBase) {
  WorkItem item;
  ASSERT_TRUE(ParsePushedItem(Message({{wire::kHeaderRequestId, "r-2"}, {wire::kHeaderReply, "_INBOX.g.2"}}),
                              nullptr, &item)
                  .ok());
  EXPECT_TRUE(item.lora.empty());
  EXPECT_TRUE(item.task.empty());
  EXPECT_TRUE(item.normalize);
}

TEST_F(WorkItemHeaders, APulledMessageReadsTheSameWay) {
  WorkItem item;
  queue::PullSubscriber::Delivery d{};
  d.delivered = 2;
  // An ack subject is what JetStream gives a delivered message; a made-up one
  // stands in.
  natsMsg* raw = nullptr;
  ASSERT_EQ(natsMsg_Create(&raw, "shoal.work.default.m", "$JS.ACK.x", "", 0), NATS_OK);
  queue::MsgPtr with_ack(raw);
  natsMsgHeader_Set(raw, wire::kHeaderRequestId, "r-3");
  natsMsgHeader_Set(raw, wire::kHeaderReply, "_INBOX.g.3");
  natsMsgHeader_Set(raw, wire::kHeaderLora, "a.b_c-1");
  ASSERT_TRUE(ParseWorkItem(std::move(with_ack), nullptr, d, &item).ok());
  EXPECT_EQ(item.lora, "a.b_c-1");
  EXPECT_EQ(item.delivered, 2u);
  EXPECT_TRUE(item.HasAck());
}

}  // namespace
}  // namespace shoal::worker
