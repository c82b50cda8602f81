#include "gateway/dead_letters.h"

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "queue/topology.h"
#include "queue/subjects.h"
#include "wire/work_message.h"

namespace shoal::gateway {

namespace {
// <stream>.<consumer>; only SHOAL_WORK_* streams are ours (checked below).
constexpr char kAdvisories[] = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.*.*";
constexpr char kQueueGroup[] = "shoal-dead-letters";
}  // namespace

DeadLetters::~DeadLetters() {
  if (sub_) natsSubscription_Unsubscribe(sub_.get());
}

Status DeadLetters::Start() {
  SHOAL_RETURN_IF_ERROR(queue::EnsureDeadLetterStream(js_, replicas_));
  natsSubscription* sub = nullptr;
  SHOAL_RETURN_IF_ERROR(queue::FromNats(
      natsConnection_QueueSubscribe(&sub, nc_, kAdvisories, kQueueGroup, &OnAdvisory, this),
      "max-delivery advisories"));
  sub_.reset(sub);
  return Status::Ok();
}

void DeadLetters::OnAdvisory(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  queue::MsgPtr owned(msg);
  static_cast<DeadLetters*>(closure)->Handle(queue::Payload(msg));
}

void DeadLetters::Handle(std::string_view advisory_json) {
  std::string stream, consumer;
  uint64_t seq = 0, deliveries = 0;
  try {
    auto a = nlohmann::json::parse(advisory_json);
    stream = a.at("stream").get<std::string>();
    consumer = a.value("consumer", "");
    seq = a.at("stream_seq").get<uint64_t>();
    deliveries = a.value("deliveries", uint64_t{0});
  } catch (const nlohmann::json::exception& e) {
    spdlog::warn("dead letters: unreadable advisory: {}", e.what());
    return;
  }
  if (!stream.starts_with("SHOAL_WORK_")) return;
  natsMsg* raw = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  if (js_GetMsg(&raw, js_, stream.c_str(), seq, nullptr, &code) != NATS_OK) {
    return;  // another gateway took it, or it was acked after all
  }
  queue::MsgPtr original(raw);
  const std::string_view request_id = queue::Header(raw, wire::kHeaderRequestId);
  const std::string_view reply = queue::Header(raw, wire::kHeaderReply);
  const std::string_view item = queue::Header(raw, wire::kHeaderItem);
  const std::string message = "the item failed on " + std::to_string(deliveries) +
                              " delivery attempts and was moved to " +
                              std::string(queue::kDeadLetterStream);

  // 1. Keep it for inspection: same payload and headers, under shoal.dlq.
  std::string subject(natsMsg_GetSubject(raw));
  subject.replace(0, std::string_view("shoal.work.").size(), "shoal.dlq.");
  natsMsg* copy = nullptr;
  natsMsg_Create(&copy, subject.c_str(), nullptr, natsMsg_GetData(raw), natsMsg_GetDataLength(raw));
  queue::MsgPtr dead(copy);
  const char** keys = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(raw, &keys, &count) == NATS_OK) {
    for (int i = 0; i < count; ++i) {
      const char* value = nullptr;
      if (natsMsgHeader_Get(raw, keys[i], &value) == NATS_OK) natsMsgHeader_Set(copy, keys[i], value);
    }
    free(keys);
  }
  natsMsgHeader_Set(copy, wire::kHeaderError, std::string(CodeName(Code::kInferenceError)).c_str());
  jsPubAck* ack = nullptr;
  if (js_PublishMsg(&ack, js_, copy, nullptr, &code) != NATS_OK) {
    spdlog::error("dead letters: rid={} could not be stored in {}", request_id, queue::kDeadLetterStream);
    return;  // leave it in the work stream rather than lose it
  }
  jsPubAck_Destroy(ack);

  // 2. Tell the client.
  if (!reply.empty()) {
    natsMsg* answer = nullptr;
    const std::string reply_subject(reply);
    natsMsg_Create(&answer, reply_subject.c_str(), nullptr, message.data(), static_cast<int>(message.size()));
    queue::MsgPtr owned_answer(answer);
    natsMsgHeader_Set(answer, wire::kHeaderItem, std::string(item).c_str());
    natsMsgHeader_Set(answer, wire::kHeaderError, std::string(CodeName(Code::kInferenceError)).c_str());
    natsConnection_PublishMsg(nc_, answer);
  }

  // 3. Out of the work queue.
  js_DeleteMsg(js_, stream.c_str(), seq, nullptr, &code);
  auto model = queue::ModelIdFromToken(consumer);
  spdlog::warn("dead letters: rid={} item={} of {} moved to {} after {} deliveries", request_id, item,
               model.ok() ? *model : consumer, queue::kDeadLetterStream, deliveries);
}

}  // namespace shoal::gateway
