// Owning handles for cnats objects, and connecting.
//
// Every cnats object Shoal holds is in a unique_ptr with the matching destroy
// function, so ownership is visible in the types. Connections are made with
// SendAsap (a publish leaves at once instead of waiting ~1 ms for cnats'
// flusher), unlimited reconnects, and logging of connection events.
#pragma once

#include <nats/nats.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::queue {

struct ConnectionDeleter {
  void operator()(natsConnection* c) const { natsConnection_Destroy(c); }
};
struct MsgDeleter {
  void operator()(natsMsg* m) const { natsMsg_Destroy(m); }
};
struct SubscriptionDeleter {
  void operator()(natsSubscription* s) const { natsSubscription_Destroy(s); }
};
struct JsCtxDeleter {
  void operator()(jsCtx* js) const { jsCtx_Destroy(js); }
};
struct KvStoreDeleter {
  void operator()(kvStore* kv) const { kvStore_Destroy(kv); }
};

using ConnectionPtr = std::unique_ptr<natsConnection, ConnectionDeleter>;
using MsgPtr = std::unique_ptr<natsMsg, MsgDeleter>;
using SubscriptionPtr = std::unique_ptr<natsSubscription, SubscriptionDeleter>;
using JsCtxPtr = std::unique_ptr<jsCtx, JsCtxDeleter>;
using KvStorePtr = std::unique_ptr<kvStore, KvStoreDeleter>;

// A cnats status as a Shoal Status (kNoCapacity for connection trouble,
// kInternal otherwise), with cnats' last error text.
Status FromNats(natsStatus s, std::string_view what);

struct ConnectOptions {
  std::string url = "nats://127.0.0.1:4222";
  std::string name;               // shown by the server's monitoring
  int connect_timeout_ms = 2000;
  bool retry_initial_connect = false;
};

Result<ConnectionPtr> Connect(const ConnectOptions& options);

// A header value, or empty when absent.
std::string_view Header(natsMsg* msg, const char* key);

// A message's payload as a view (valid while the message lives).
inline std::string_view Payload(natsMsg* msg) {
  return {natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg))};
}

}  // namespace shoal::queue
