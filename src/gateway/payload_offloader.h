// PayloadOffloader: the gateway's side of the payload store
// (queue/payload_store.h). An item whose MessagePack is over the inline
// limit (what fits a NATS message with its headers, or less if configured)
// is put in the store before its request is queued; its work message then
// names the key. The keys are deleted when the request ends, however it
// ends, and a sweep deletes what a gateway that died mid-request left
// behind (payloads older than the longest a request may live).
//
//   Offload(p) ──▶ pool thread: Put each large item ──▶ p's lane loop:
//                  mark the items offloaded, done(status) — or, if p finished
//                  meanwhile (deadline, hang-up), delete them at once
//   Release(p) ──▶ pool thread: Delete its offloaded items' keys
//
// Threading: Offload and Release are called on a lane's loop thread; the
// store's blocking I/O runs on the offloader's own threads, never on a loop.
// A request's items are only read there (they are immutable after parsing,
// and the shared_ptr keeps them alive); `offloaded` is set on the loop.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/event_loop.h"
#include "gateway/pending.h"
#include "queue/payload_store.h"

namespace shoal::gateway {

class PayloadOffloader {
 public:
  // Items over `inline_limit` bytes go to `store`; payloads older than
  // `orphan_age` are swept every `sweep_period`.
  PayloadOffloader(std::unique_ptr<queue::PayloadStore> store, size_t inline_limit,
                   std::chrono::seconds orphan_age, std::chrono::seconds sweep_period = std::chrono::seconds(60));
  ~PayloadOffloader();  // finishes queued jobs, then joins

  size_t inline_limit() const { return inline_limit_; }
  // Lowers the inline limit to what fits a message (the connection's max
  // payload is known once connected). Before the first Offload only.
  void CapInlineLimit(size_t max) { inline_limit_ = std::min(inline_limit_, max); }
  const queue::PayloadStore& store() const { return *store_; }

  // Whether some item of `p` is over the inline limit and not offloaded.
  bool Needs(const PendingRequest& p) const;

  // Puts `p`'s large items in the store, then on `loop` marks them and calls
  // `done` — unless `p` finished meanwhile (then the payloads are deleted and
  // `done` is not called). A failed put deletes what was put and passes the
  // error.
  void Offload(std::shared_ptr<PendingRequest> p, EventLoop* loop, std::function<void(Status)> done);

  // Deletes the payloads of `p`'s offloaded items (the request ended).
  void Release(const PendingRequest& p);

  // Payloads put and deleted so far (tests, metrics).
  uint64_t puts() const { return puts_.load(); }
  uint64_t deletes() const { return deletes_.load(); }

 private:
  void Run(bool sweeper);
  // Indexes of `p`'s items over the inline limit and not offloaded yet.
  std::vector<size_t> LargeItems(const PendingRequest& p) const;
  void Enqueue(std::function<void()> job);
  void DeleteKeys(const std::vector<std::string>& keys);

  const std::unique_ptr<queue::PayloadStore> store_;
  size_t inline_limit_;
  const std::chrono::seconds orphan_age_, sweep_period_;
  std::atomic<uint64_t> puts_{0}, deletes_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace shoal::gateway
