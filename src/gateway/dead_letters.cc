#include "gateway/dead_letters.h"

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "queue/message.h"
#include "queue/subjects.h"
#include "queue/topology.h"
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
  const queue::Message advisory{queue::MsgPtr(msg)};
  static_cast<DeadLetters*>(closure)->Handle(advisory.payload());
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
  auto original = queue::GetStreamMessage(js_, stream, seq);
  if (!original.ok()) return;  // another gateway took it, or it was acked after all
  wire::WorkHeader work;
  std::string_view body;
  const Status readable = wire::ReadWork(original->payload(), &work, &body);
  const std::string message = "the item failed on " + std::to_string(deliveries) +
                              " delivery attempts and was moved to " + std::string(queue::kDeadLetterStream);

  // 1. Keep it for inspection: the work message as it was, under shoal.dlq.
  std::string subject(original->subject());
  subject.replace(0, std::string_view("shoal.work.").size(), "shoal.dlq.");
  if (Status s = queue::StoreInStream(js_, subject, original->payload()); !s.ok()) {
    spdlog::error("dead letters: rid={} could not be stored in {}: {}", work.request_id, queue::kDeadLetterStream,
                  s.message());
    return;  // leave it in the work stream rather than lose it
  }

  // 2. Tell the client (a message too garbled to name its reply cannot be).
  if (readable.ok()) {
    std::string answer;
    wire::AppendErrorReply(work.item, "dead-letters", static_cast<uint32_t>(deliveries),
                           Status(Code::kInferenceError, message), &answer);
    (void)queue::Publish(nc_, std::string(work.reply), answer);
  }

  // 3. Out of the work queue.
  (void)queue::DeleteStreamMessage(js_, stream, seq);
  auto model = queue::ModelIdFromConsumer(consumer);
  spdlog::warn("dead letters: rid={} item={} of {} moved to {} after {} deliveries", work.request_id, work.item,
               model.ok() ? *model : consumer, queue::kDeadLetterStream, deliveries);
}

}  // namespace shoal::gateway
