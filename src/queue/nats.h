// Owning handles for cnats objects, and connecting.
//
// Every cnats object Shoal holds is in a unique_ptr with the matching destroy
// function, so ownership is visible in the types. Connections reconnect
// forever and log their events, and use SendAsap: a publish leaves at once
// instead of ~1 ms later with cnats' flusher thread. Hot paths use
// connections driven by an EventLoop instead (loop_connection.h).
#pragma once

#include <nats/nats.h>

#include <memory>
#include <mutex>
#include <vector>
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
// The same for a JetStream call, with its error code when it gave one.
Status FromJetStream(natsStatus s, jsErrCode code, std::string_view what);

// js_AddStream, asked again (up to `attempts` times in all) when it times
// out: a JetStream cluster busy placing replicated streams can leave a
// creation unanswered — seen when two workers started at once and both
// created the same stream — and asking again finds it made.
natsStatus AddStream(jsStreamInfo** si, jsCtx* js, jsStreamConfig* cfg, jsErrCode* code, int attempts = 3);

// How a process proves who it is to NATS and protects its connections;
// every connection it makes carries the same. Empty fields are unused. A
// CA file, a client certificate or a tls:// URL makes TLS mandatory: the
// connection fails rather than fall back to plaintext, and a file that
// cannot be loaded is an error at connect, never ignored.
struct NatsSecurity {
  std::string ca_file{};     // PEM CAs to trust for the server's certificate
  std::string cert_file{};   // client certificate chain (mutual TLS), with key_file
  std::string key_file{};
  std::string user{};        // user/password auth
  std::string password{};
  std::string creds_file{};  // NATS 2.x decentralized auth: a .creds file (JWT + nkey seed)

  bool tls() const { return !ca_file.empty() || !cert_file.empty(); }
};

struct ConnectOptions {
  std::string url = "nats://127.0.0.1:4222";  // or several servers, comma-separated
  NatsSecurity security{};
  std::string name{};             // shown by the server's monitoring
  int connect_timeout_ms = 2000;
  bool retry_initial_connect = false;

  // cnats' external event loop hooks (see loop_connection.h); unset, cnats
  // runs its own reader and flusher threads.
  struct EventLoopHooks {
    void* loop = nullptr;
    natsEvLoop_Attach attach = nullptr;
    natsEvLoop_ReadAddRemove read = nullptr;
    natsEvLoop_WriteAddRemove write = nullptr;
    natsEvLoop_Detach detach = nullptr;
  };
  EventLoopHooks event_loop{};
};

Result<ConnectionPtr> Connect(const ConnectOptions& options);

// Frees messages in batches. cnats hands every destroyed message to a
// garbage-collector thread and wakes it if it sleeps — at a few messages per
// request that was the busiest thread of a gateway. Owners put messages
// here and Reap() every few milliseconds: one wake per batch.
// Threading: thread-safe.
class MsgReaper {
 public:
  ~MsgReaper() { Reap(); }
  void Add(MsgPtr msg) {
    if (!msg) return;
    std::lock_guard lock(mu_);
    dead_.push_back(std::move(msg));
  }
  void Reap() {
    std::vector<MsgPtr> dead;
    {
      std::lock_guard lock(mu_);
      dead.swap(dead_);
    }
  }

 private:
  std::mutex mu_;
  std::vector<MsgPtr> dead_;  // guarded by mu_
};

}  // namespace shoal::queue
