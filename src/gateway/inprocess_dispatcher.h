// InProcessDispatcher: runs a request's items on the runtime inside the
// gateway process, on the calling I/O thread — no queue, no worker. It is the
// baseline the serving-plane benchmark measures the queue path against
// (`shoal gateway --in-process`), not a way to serve production traffic.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "gateway/dispatcher.h"
#include "runtime/runtime.h"

namespace shoal::gateway {

class InProcessDispatcher final : public Dispatcher {
 public:
  explicit InProcessDispatcher(PendingTable* table) : table_(table) {}

  void Submit(const std::shared_ptr<PendingRequest>& p) override;
  bool HasCapacity(std::string_view model_id) const override { return true; }

 private:
  Result<Model*> ModelFor(const ModelSpec& spec);

  PendingTable* table_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Model>> models_;  // guarded by mu_; loaded on first use
};

}  // namespace shoal::gateway
