#include "queue/catalog_watch.h"

#include <algorithm>

#include "common/log.h"

namespace shoal::queue {

std::string CatalogKey(std::string_view name) {
  std::string key(name);
  std::replace(key.begin(), key.end(), '@', '=');
  return key;
}

std::string NameOfCatalogKey(std::string_view key) {
  std::string name(key);
  std::replace(name.begin(), name.end(), '=', '@');
  return name;
}

Status PutModel(kvStore* models, const ModelSpec& spec) {
  const std::string json = spec.ToJson();
  uint64_t rev = 0;
  return FromNats(
      kvStore_Put(&rev, models, CatalogKey(spec.id).c_str(), json.data(), static_cast<int>(json.size())),
      "catalog put " + spec.id);
}

Status DeleteModel(kvStore* models, std::string_view id) {
  return FromNats(kvStore_Delete(models, CatalogKey(id).c_str()), "catalog delete");
}

Result<std::unique_ptr<CatalogWatch>> CatalogWatch::Open(kvStore* models, OnChange on_change, int timeout_ms) {
  std::unique_ptr<CatalogWatch> c(new CatalogWatch());
  c->on_change_ = std::move(on_change);
  c->snapshot_ = std::make_shared<CatalogSnapshot>();
  CatalogWatch* self = c.get();
  auto watch = KvWatch::Start(
      models, [self](const KvChange& ch) { self->Apply(ch); },
      [self] {
        std::lock_guard lock(self->mu_);
        self->ready_ = true;
        self->ready_cv_.notify_all();
      });
  if (!watch.ok()) return watch.status();
  c->watch_ = std::move(watch).value();
  std::unique_lock lock(c->mu_);
  if (!c->ready_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return c->ready_; })) {
    return Status(Code::kNoCapacity, "catalog: no answer from the shoal_models bucket");
  }
  return c;
}

void CatalogWatch::Apply(const KvChange& change) {
  std::shared_ptr<const ModelSpec> spec;
  if (!change.deleted) {
    auto parsed = ModelSpec::Parse(change.value);
    if (!parsed.ok()) {
      spdlog::error("catalog: ignoring entry '{}': {}", change.key, parsed.status().ToString());
      return;
    }
    spec = std::make_shared<const ModelSpec>(std::move(parsed).value());
  }
  std::shared_ptr<const CatalogSnapshot> next;
  {
    std::lock_guard lock(mu_);
    auto copy = std::make_shared<CatalogSnapshot>(*snapshot_);
    const std::string name = NameOfCatalogKey(change.key);
    if (spec) (*copy)[name] = spec; else copy->erase(name);
    snapshot_ = copy;
    next = copy;
  }
  spdlog::info("catalog: {} {}", change.deleted ? "removed" : "updated", change.key);
  if (on_change_) on_change_(next);
}

std::shared_ptr<const CatalogSnapshot> CatalogWatch::Snapshot() const {
  std::lock_guard lock(mu_);
  return snapshot_;
}

}  // namespace shoal::queue
