#include "queue/kv_watch.h"

#include "common/log.h"

namespace shoal::queue {

Result<std::unique_ptr<KvWatch>> KvWatch::Start(kvStore* kv, OnEntry on_entry, OnReady on_ready) {
  kvWatcher* w = nullptr;
  if (auto s = kvStore_WatchAll(&w, kv, nullptr); s != NATS_OK) return FromNats(s, "kv watch");
  return std::unique_ptr<KvWatch>(new KvWatch(w, std::move(on_entry), std::move(on_ready)));
}

KvWatch::KvWatch(kvWatcher* w, OnEntry on_entry, OnReady on_ready)
    : watcher_(w), on_entry_(std::move(on_entry)), on_ready_(std::move(on_ready)) {
  thread_ = std::thread([this] { Run(); });
}

KvWatch::~KvWatch() {
  stop_ = true;
  kvWatcher_Stop(watcher_);
  if (thread_.joinable()) thread_.join();
  kvWatcher_Destroy(watcher_);
}

void KvWatch::Run() {
  bool ready = false;
  while (!stop_) {
    kvEntry* e = nullptr;
    natsStatus s = kvWatcher_Next(&e, watcher_, 500);
    if (s == NATS_TIMEOUT) continue;
    if (s != NATS_OK) {
      if (!stop_) spdlog::warn("kv watch ended: {}", natsStatus_GetText(s));
      ended_ = true;
      return;
    }
    if (e == nullptr) {  // the end of the initial values
      if (!ready && on_ready_) on_ready_();
      ready = true;
      continue;
    }
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
