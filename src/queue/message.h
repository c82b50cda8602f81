// A NATS message as the rest of Shoal handles it: an incoming one owned,
// with its subject, reply and payload as views; an outgoing one as bytes.
//
// Shoal's own messages carry their metadata at the front of the payload
// (wire/work_message.h), not in NATS headers, so nothing outside src/queue
// reads or sets a NATS header: the ones read here are the server's own
// (the Status of a pull request's end).
//
// An incoming message is freed by whoever owns it last; on a hot path, hand
// it to a MsgReaper (nats.h) instead of letting it go one at a time.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "queue/nats.h"

namespace shoal::queue {

class Message {
 public:
  Message() = default;
  explicit Message(MsgPtr msg) : msg_(std::move(msg)) {}

  explicit operator bool() const { return msg_ != nullptr; }
  std::string_view subject() const { return natsMsg_GetSubject(msg_.get()); }
  // Empty when the message has none.
  std::string_view reply() const {
    const char* r = natsMsg_GetReply(msg_.get());
    return r ? std::string_view(r) : std::string_view();
  }
  std::string_view payload() const {
    return {natsMsg_GetData(msg_.get()), static_cast<size_t>(natsMsg_GetDataLength(msg_.get()))};
  }
  // A header the server set (empty when absent).
  std::string_view server_header(const char* key) const;

  // Gives up ownership (to a MsgReaper).
  MsgPtr release() { return std::move(msg_); }
  natsMsg* get() const { return msg_.get(); }

 private:
  MsgPtr msg_;
};

// Publishes `payload` to `subject`, asking for replies on `reply` (null:
// none). One copy, into the connection's write buffer; no message object.
Status Publish(natsConnection* nc, const std::string& subject, std::string_view payload,
               const char* reply = nullptr);

}  // namespace shoal::queue
