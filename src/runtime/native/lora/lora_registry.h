// LoraRegistry: the adapters one loaded model may run under (its spec's
// `loras`, handed over by Model::UpdateLoras), each loaded from its directory
// the first time a request names it and kept in host memory within a budget,
// the least recently used going first when a new one needs the room.
//
// Loading happens outside the lock, on a thread of the registry's own when
// Ready() starts it (the worker asks before it runs an item, so a batch never
// waits for a load), or else on the thread that first calls Get: other
// adapters (and the base) keep being served meanwhile, and callers asking
// for the adapter being loaded wait for that one load instead of starting
// another. A load that failed is remembered (Get reports it) until Update
// lists the adapter anew. An adapter in use by a batch stays alive
// (shared_ptr) even if it is evicted or unregistered meanwhile.
//
// Threading: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "runtime/model_config.h"
#include "common/status.h"
#include "runtime/native/lora/lora_adapter.h"

namespace shoal::native {

class LoraRegistry {
 public:
  LoraRegistry(LoraTargets targets, size_t budget_bytes);
  ~LoraRegistry();  // waits for the background load in progress, if any

  // The known adapters from now on; an adapter no longer listed, or listed
  // at another path, is forgotten (and reloaded from the new path if asked).
  void Update(std::span<const LoraConfig> loras);

  // `name`'s adapter, loaded if need be. MODEL_NOT_FOUND when it is not
  // known; the loader's error (INVALID_INPUT) when its files do not load.
  Result<std::shared_ptr<const LoraAdapter>> Get(std::string_view name);

  // True when Get(name) would not load (resident, unknown, or failed);
  // otherwise starts a background load, if none runs, and returns false.
  bool Ready(std::string_view name);

  size_t resident_bytes() const;
  size_t budget_bytes() const { return budget_; }

 private:
  struct Entry {
    LoraConfig spec;
    std::shared_ptr<const LoraAdapter> adapter;  // null until loaded
    Status failed;                               // the last load's error
    bool loading = false;
    uint64_t last_use = 0;
  };
  // Loads `name` (marked loading by the caller) and records the outcome.
  Result<std::shared_ptr<const LoraAdapter>> LoadMarked(std::string name, LoraConfig spec);
  void EvictFor(std::string_view keep);  // with mu_ held

  const LoraTargets targets_;
  const size_t budget_;
  mutable std::mutex mu_;
  std::condition_variable loaded_;
  std::map<std::string, Entry, std::less<>> entries_;  // guarded by mu_
  uint64_t clock_ = 0;                                 // guarded by mu_
  size_t resident_ = 0;                                // guarded by mu_
  // Background loads (Ready): names waiting, and the one loader thread,
  // started on the first.
  std::deque<std::pair<std::string, LoraConfig>> to_load_;  // guarded by mu_
  std::condition_variable wake_loader_;
  bool stopping_ = false;                                // guarded by mu_
  std::thread loader_;                                   // started under mu_
  void LoaderLoop();
};

}  // namespace shoal::native
