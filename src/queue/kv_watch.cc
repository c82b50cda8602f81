#include "queue/kv_watch.h"

#include <algorithm>

#include "common/clock.h"
#include "common/log.h"

namespace shoal::queue {

Result<std::unique_ptr<KvWatch>> KvWatch::Start(kvStore* kv, OnEntry on_entry, OnReady on_ready,
                                                std::chrono::milliseconds max_silence) {
  kvWatcher* w = nullptr;
  if (auto s = kvStore_WatchAll(&w, kv, nullptr); s != NATS_OK) return FromNats(s, "kv watch");
  return std::unique_ptr<KvWatch>(new KvWatch(kv, w, std::move(on_entry), std::move(on_ready), max_silence));
}

KvWatch::KvWatch(kvStore* kv, kvWatcher* w, OnEntry on_entry, OnReady on_ready, std::chrono::milliseconds max_silence)
    : kv_(kv), on_entry_(std::move(on_entry)), on_ready_(std::move(on_ready)), max_silence_(max_silence), watcher_(w) {
  thread_ = std::thread([this] { Run(); });
}

KvWatch::~KvWatch() {
  stop_ = true;
  {
    std::lock_guard lock(mu_);
    kvWatcher_Stop(watcher_);
  }
  if (thread_.joinable()) thread_.join();
  kvWatcher_Destroy(watcher_);
}

bool KvWatch::Restart() {
  kvWatcher* fresh = nullptr;
  if (natsStatus s = kvStore_WatchAll(&fresh, kv_, nullptr); s != NATS_OK) {
    spdlog::warn("kv watch of '{}': could not start it again: {}", kvStore_Bucket(kv_), natsStatus_GetText(s));
    return false;
  }
  kvWatcher* old = nullptr;
  {
    std::lock_guard lock(mu_);
    if (stop_) {
      kvWatcher_Destroy(fresh);
      return false;
    }
    old = watcher_;
    watcher_ = fresh;
  }
  kvWatcher_Destroy(old);
  restarts_.fetch_add(1);
  return true;
}

void KvWatch::Run() {
  constexpr auto kMaxBackoff = std::chrono::minutes(1);
  bool ready = false;      // on_ready has run
  bool replaying = true;   // the current watcher's initial values still come
  auto heard = SteadyClock::now();  // the last entry, or (re)start
  auto allowed = max_silence_;      // the silence that restarts it now
  while (!stop_) {
    kvEntry* e = nullptr;
    natsStatus s = kvWatcher_Next(&e, watcher_, 500);
    if (s == NATS_TIMEOUT) {
      if (max_silence_.count() > 0 && SteadyClock::now() - heard >= allowed) {
        spdlog::warn("kv watch of '{}': nothing for {} ms; starting it again", kvStore_Bucket(kv_), allowed.count());
        const bool restarted = Restart();
        blind_ = !restarted;
        heard = SteadyClock::now();
        if (restarted) {
          replaying = true;
          allowed = std::min<std::chrono::milliseconds>(2 * allowed, kMaxBackoff);
        }
      }
      continue;
    }
    if (s != NATS_OK) {
      if (!stop_) spdlog::warn("kv watch ended: {}", natsStatus_GetText(s));
      ended_ = true;
      return;
    }
    if (e == nullptr) {  // the end of the initial values
      if (!ready && on_ready_) on_ready_();
      ready = true;
      replaying = false;
      continue;
    }
    heard = SteadyClock::now();
    blind_ = false;
    if (!replaying) allowed = max_silence_;  // news: the watch works
    KvChange change;
    change.key = kvEntry_Key(e);
    change.revision = kvEntry_Revision(e);
    const kvOperation op = kvEntry_Operation(e);
    change.deleted = op == kvOp_Delete || op == kvOp_Purge;
    if (!change.deleted) {
      change.value.assign(static_cast<const char*>(kvEntry_Value(e)), kvEntry_ValueLen(e));
    }
    kvEntry_Destroy(e);
    on_entry_(change);
  }
}

}  // namespace shoal::queue
