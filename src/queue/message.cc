#include "queue/message.h"

namespace shoal::queue {

std::string_view Message::server_header(const char* key) const {
  const char* v = nullptr;
  if (natsMsgHeader_Get(msg_.get(), key, &v) != NATS_OK || v == nullptr) return {};
  return v;
}

Status Publish(natsConnection* nc, const std::string& subject, std::string_view payload, const char* reply) {
  const int n = static_cast<int>(payload.size());
  const natsStatus s = reply ? natsConnection_PublishRequest(nc, subject.c_str(), reply, payload.data(), n)
                             : natsConnection_Publish(nc, subject.c_str(), payload.data(), n);
  return FromNats(s, "publishing to " + subject);
}

}  // namespace shoal::queue
