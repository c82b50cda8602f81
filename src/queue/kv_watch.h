// KvWatch: follows a KV bucket on a thread of its own and hands each change
// to a callback — the watch *is* the config delta stream (docs/architecture.md).
//
// A watch can break silently: cnats' watcher is an ordered consumer, and
// when the server it lived on is cut off (a partition), cnats may fail to
// make it again while the cluster has no metadata leader, and then waits
// forever. For a bucket written steadily (heartbeats), `max_silence` says
// how long a silence means that: the watch is started again, its replay of
// the current values going through `on_entry` once more. Restarts that find
// nothing new back off (doubling, up to a minute), so a bucket that is
// quiet for a reason costs a consumer a minute; one that fails (no
// JetStream leader to make the consumer) is tried again after another
// `max_silence`, and until one succeeds the watch is blind().
//
// Threading: `on_entry` and `on_ready` run on the watch thread, one at a time.
// `on_ready` runs once, after the values that existed when the watch began.
// ended() may be read from any thread. The destructor stops the watcher and
// joins the thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "queue/nats.h"

namespace shoal::queue {

struct KvChange {
  std::string key;
  std::string value;  // empty when deleted
  bool deleted = false;
  uint64_t revision = 0;  // the entry's (for a compare-and-set write after it)
};

class KvWatch {
 public:
  using OnEntry = std::function<void(const KvChange&)>;
  using OnReady = std::function<void()>;

  // `max_silence` 0: a quiet bucket is never taken for a broken watch.
  static Result<std::unique_ptr<KvWatch>> Start(kvStore* kv, OnEntry on_entry, OnReady on_ready,
                                                std::chrono::milliseconds max_silence = {});
  ~KvWatch();

  // Whether the watch gave up (the watcher failed): no more changes come.
  bool ended() const { return ended_.load(); }
  // Times the watch was started again after a silence.
  uint64_t restarts() const { return restarts_.load(); }
  // Whether the last try to start it again failed: what it says may be
  // stale, and no news is no evidence.
  bool blind() const { return blind_.load(); }

  KvWatch(const KvWatch&) = delete;
  KvWatch& operator=(const KvWatch&) = delete;

 private:
  KvWatch(kvStore* kv, kvWatcher* w, OnEntry on_entry, OnReady on_ready, std::chrono::milliseconds max_silence);
  void Run();
  // A new watcher in place of the current one; false when it could not be
  // made (or the watch is stopping).
  bool Restart();

  kvStore* const kv_;
  const OnEntry on_entry_;
  const OnReady on_ready_;
  const std::chrono::milliseconds max_silence_;
  std::mutex mu_;        // guards watcher_ against Stop from the destructor
  kvWatcher* watcher_;   // replaced by the watch thread alone
  std::atomic<bool> stop_{false};
  std::atomic<bool> ended_{false};
  std::atomic<uint64_t> restarts_{0};
  std::atomic<bool> blind_{false};
  std::thread thread_;
};

}  // namespace shoal::queue
