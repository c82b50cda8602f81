// ServedModels: the models a worker has installed — loaded, or failed to
// load — by id and by pull slot (one per priority class). The residency part writes it (install,
// unload); the intake reads it on every delivery and plan.
//
// Threading: thread-safe; `mu_` guards the maps and is never held while
// calling out. The residency part may call it under its own lock (that
// lock first, then this one; never the other way round).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "worker/served_model.h"

namespace shoal::worker {

class ServedModels {
 public:
  void Install(const std::shared_ptr<ServedModel>& m) {
    std::lock_guard lock(mu_);
    by_id_[m->spec->id] = m;
    for (int slot : {m->slot, m->batch_slot}) {
      if (by_slot_.size() <= static_cast<size_t>(slot)) by_slot_.resize(slot + 1);
      by_slot_[slot] = m;
    }
  }

  // The model removed, or null when it was not installed.
  std::shared_ptr<ServedModel> Remove(std::string_view id) {
    std::lock_guard lock(mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return nullptr;
    std::shared_ptr<ServedModel> m = std::move(it->second);
    by_id_.erase(it);
    by_slot_[m->slot] = nullptr;
    by_slot_[m->batch_slot] = nullptr;
    return m;
  }

  std::shared_ptr<ServedModel> Find(std::string_view id) const {
    std::lock_guard lock(mu_);
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : it->second;
  }

  std::shared_ptr<ServedModel> BySlot(int slot) const {
    std::lock_guard lock(mu_);
    return slot >= 0 && static_cast<size_t>(slot) < by_slot_.size() ? by_slot_[slot] : nullptr;
  }

  bool Contains(std::string_view id) const { return Find(id) != nullptr; }

  // Every installed model, in id order.
  std::vector<std::shared_ptr<ServedModel>> All() const {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<ServedModel>> out;
    out.reserve(by_id_.size());
    for (const auto& [id, m] : by_id_) out.push_back(m);
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<ServedModel>, std::less<>> by_id_;  // guarded by mu_
  std::vector<std::shared_ptr<ServedModel>> by_slot_;                       // guarded by mu_
};

}  // namespace shoal::worker
