#include "runtime/native/lora/lora_registry.h"

#include "common/log.h"

namespace shoal::native {

LoraRegistry::LoraRegistry(LoraTargets targets, size_t budget_bytes)
    : targets_(std::move(targets)), budget_(budget_bytes) {}

void LoraRegistry::Update(std::span<const LoraConfig> loras) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, Entry, std::less<>> next;
  for (const LoraConfig& spec : loras) {
    auto it = entries_.find(spec.name);
    Entry e;
    if (it != entries_.end() && it->second.spec.path == spec.path) e = std::move(it->second);
    e.spec = spec;
    e.failed = Status::Ok();  // listed anew: a failed load may be tried again
    next.emplace(spec.name, std::move(e));
  }
  resident_ = 0;
  for (const auto& [name, e] : next) resident_ += e.adapter ? e.adapter->memory_bytes() : 0;
  entries_ = std::move(next);
  loaded_.notify_all();  // a waiter whose adapter went away must not wait for it
}

LoraRegistry::~LoraRegistry() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_loader_.notify_all();
  if (loader_.joinable()) loader_.join();
}

bool LoraRegistry::Ready(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(name);
  if (it == entries_.end() || it->second.adapter || !it->second.failed.ok()) return true;
  if (!it->second.loading) {
    it->second.loading = true;
    to_load_.emplace_back(std::string(name), it->second.spec);
    if (!loader_.joinable()) loader_ = std::thread([this] { LoaderLoop(); });
    wake_loader_.notify_one();
  }
  return false;
}

void LoraRegistry::LoaderLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_loader_.wait(lock, [&] { return stopping_ || !to_load_.empty(); });
    if (stopping_) return;
    auto [name, spec] = std::move(to_load_.front());
    to_load_.pop_front();
    lock.unlock();
    (void)LoadMarked(std::move(name), std::move(spec));
    lock.lock();
  }
}

Result<std::shared_ptr<const LoraAdapter>> LoraRegistry::Get(std::string_view name) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      return Status(Code::kModelNotFound, "no LoRA adapter '" + std::string(name) + "' on this model");
    }
    Entry& e = it->second;
    if (e.adapter) {
      e.last_use = ++clock_;
      return e.adapter;
    }
    if (!e.failed.ok()) return e.failed;
    if (!e.loading) break;
    loaded_.wait(lock);  // someone else is loading it; the entry may be gone after
  }
  Entry& e = entries_.find(name)->second;
  e.loading = true;
  const LoraConfig spec = e.spec;
  lock.unlock();
  return LoadMarked(std::string(name), spec);
}

Result<std::shared_ptr<const LoraAdapter>> LoraRegistry::LoadMarked(std::string name, LoraConfig spec) {
  auto loaded = LoraAdapter::Load(spec.path, targets_);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(name);
  const bool still_listed = it != entries_.end() && it->second.spec.path == spec.path;
  if (still_listed) it->second.loading = false;
  loaded_.notify_all();
  if (!loaded.ok()) {
    spdlog::warn("native: LoRA {} ({}) did not load: {}", spec.name, spec.path, loaded.status().ToString());
    if (still_listed) it->second.failed = loaded.status();
    return loaded.status();
  }
  std::shared_ptr<const LoraAdapter> adapter = std::move(loaded).value();
  if (still_listed) {
    it->second.adapter = adapter;
    it->second.last_use = ++clock_;
    resident_ += adapter->memory_bytes();
    EvictFor(name);
  }
  spdlog::info("native: LoRA {} loaded from {}, {:.1f} MB", spec.name, spec.path, adapter->memory_bytes() / 1e6);
  return adapter;
}

void LoraRegistry::EvictFor(std::string_view keep) {
  while (resident_ > budget_) {
    Entry* oldest = nullptr;
    for (auto& [name, e] : entries_) {
      if (e.adapter && name != keep && (!oldest || e.last_use < oldest->last_use)) oldest = &e;
    }
    if (oldest == nullptr) return;  // only `keep` is left: it stays, over the budget
    resident_ -= oldest->adapter->memory_bytes();
    spdlog::info("native: LoRA {} evicted (adapters over their {:.0f} MB budget)", oldest->spec.name, budget_ / 1e6);
    oldest->adapter.reset();
  }
}

size_t LoraRegistry::resident_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resident_;
}

}  // namespace shoal::native
