// KvWatch: follows a KV bucket on a thread of its own and hands each change
// to a callback — the watch *is* the config delta stream (docs/architecture.md).
//
// Threading: `on_entry` and `on_ready` run on the watch thread, one at a time.
// `on_ready` runs once, after the values that existed when the watch began.
// ended() may be read from any thread. The destructor stops the watcher and
// joins the thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
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

  static Result<std::unique_ptr<KvWatch>> Start(kvStore* kv, OnEntry on_entry, OnReady on_ready);
  ~KvWatch();

  // Whether the watch gave up (the watcher failed): no more changes come.
  bool ended() const { return ended_.load(); }

  KvWatch(const KvWatch&) = delete;
  KvWatch& operator=(const KvWatch&) = delete;

 private:
  KvWatch(kvWatcher* w, OnEntry on_entry, OnReady on_ready);
  void Run();

  kvWatcher* watcher_;
  OnEntry on_entry_;
  OnReady on_ready_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> ended_{false};
  std::thread thread_;
};

}  // namespace shoal::queue
