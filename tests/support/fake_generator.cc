#include "support/fake_generator.h"

#include <gtest/gtest.h>

#include <chrono>

#include "common/clock.h"
#include "queue/topology.h"
#include "queue/worker_registry.h"
#include "queue/subjects.h"
#include "queue/message.h"
#include "wire/work_message.h"

namespace shoal::testing {

FakeGenerator::FakeGenerator(TestCluster& cluster, const ModelSpec& spec)
    : cluster_(cluster), spec_(spec) {
  queue::ConnectOptions options;
  options.url = cluster.nats_url();
  options.name = "fake generator";
  auto nc = queue::Connect(options);
  EXPECT_TRUE(nc.ok()) << nc.status().ToString();
  if (!nc.ok()) return;
  nc_ = std::move(nc).value();
  auto js = queue::NewJetStream(nc_.get());
  EXPECT_TRUE(js.ok());
  if (!js.ok()) return;
  js_ = std::move(js).value();
  // What a real worker does for a model it serves: the durable consumer.
  EXPECT_TRUE(queue::EnsureConsumer(js_.get(), spec_).ok());
  const std::string stream = queue::WorkStreamName(spec_.pool);
  const std::string consumer = queue::ConsumerName(spec_.id);
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Consumer = consumer.c_str();
  so.ManualAck = true;
  natsSubscription* work = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  EXPECT_EQ(js_PullSubscribe(&work, js_.get(), queue::WorkSubject(spec_.pool, spec_.id).c_str(),
                             consumer.c_str(), nullptr, &so, &jerr),
            NATS_OK)
      << nats_GetLastError(nullptr);
  work_.reset(work);
  natsSubscription* cancel = nullptr;
  EXPECT_EQ(
      natsConnection_SubscribeSync(&cancel, nc_.get(), queue::CancelSubject(spec_.pool).c_str()),
      NATS_OK);
  cancel_.reset(cancel);
  natsConnection_Flush(nc_.get());
  heartbeat_ = std::thread([this] {
    while (!stop_) {
      queue::WorkerInfo info;
      info.id = "fake-generator";
      info.host = "test";
      info.pool = spec_.pool;
      info.models = {spec_.id};
      info.resident = {spec_.id};
      info.executors = 1;
      info.ts_ms = UnixMillis();
      const Status s = queue::PutHeartbeat(cluster_.control_plane().workers.get(), info);
      EXPECT_TRUE(s.ok()) << s.ToString();
      for (int i = 0; i < 10 && !stop_; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
}

FakeGenerator::~FakeGenerator() {
  stop_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
}

FakeGenerator::Work FakeGenerator::Take(bool ack) {
  Work w;
  natsMsgList list{};
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s = natsSubscription_Fetch(&list, work_.get(), 1, 5000, &jerr);
  EXPECT_EQ(s, NATS_OK) << "no work message";
  if (s != NATS_OK || list.Count < 1) return w;
  natsMsg* msg = list.Msgs[0];
  wire::WorkHeader h;
  std::string_view body;
  const Status read = wire::ReadWork({natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg))}, &h,
                                     &body);
  EXPECT_TRUE(read.ok()) << read.ToString();
  w.request_id = h.request_id;
  w.reply = h.reply;
  w.lora = h.lora;
  w.task = h.task;
  w.item = h.item;
  w.cost = h.cost;
  w.deadline_unix_ms = h.deadline_unix_ms;
  const Status decoded = wire::DecodeGenerateWork(body, &w.request);
  EXPECT_TRUE(decoded.ok()) << decoded.ToString();
  jsMsgMetaData* meta = nullptr;
  if (natsMsg_GetMetaData(&meta, msg) == NATS_OK) {
    w.delivered = meta->NumDelivered;
    jsMsgMetaData_Destroy(meta);
  }
  if (ack) natsMsg_Ack(msg, nullptr);
  natsMsgList_Destroy(&list);
  return w;
}

void FakeGenerator::Publish(const Work& w, const std::string& reply) {
  ASSERT_TRUE(queue::Publish(nc_.get(), w.reply, reply).ok());
  natsConnection_Flush(nc_.get());
}

void FakeGenerator::Send(const Work& w, uint64_t seq, const wire::GenerationChunk& c, bool final,
                         int attempt) {
  wire::ReplyHeader h;
  h.item = w.item;
  h.worker = "fake-generator";
  h.attempt = static_cast<uint32_t>(attempt);
  h.seq = seq;
  h.final = final;
  std::string reply;
  wire::AppendReplyHeader(h, &reply);
  wire::AppendChunk(c, &reply);
  Publish(w, reply);
}

void FakeGenerator::SendError(const Work& w, const char* code, const std::string& message) {
  std::string reply;
  wire::AppendErrorReply(w.item, "fake-generator", 1, Status(CodeFromName(code), message), &reply);
  Publish(w, reply);
}

std::string FakeGenerator::NextCancel() {
  natsMsg* m = nullptr;
  if (natsSubscription_NextMsg(&m, cancel_.get(), 5000) != NATS_OK) return "";
  return std::string(queue::Message(queue::MsgPtr(m)).payload());
}

}  // namespace shoal::testing
