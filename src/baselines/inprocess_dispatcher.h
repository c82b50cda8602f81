// InProcessDispatcher: runs a request's items on the runtime inside the
// gateway process, on the calling I/O thread — no queue, no worker. It is the
// baseline the serving-plane benchmark measures the queue path against
// (`shoal gateway --in-process`), not a way to serve production traffic: it
// encodes only, with base models only.
//
// Threading: one per lane, used on that lane's loop thread only.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "gateway/dispatcher.h"
#include "runtime/runtime.h"

namespace shoal::baselines {

class InProcessDispatcher final : public gateway::Dispatcher {
 public:
  explicit InProcessDispatcher(gateway::PendingTable* table) : table_(table) {}

  void Submit(const std::shared_ptr<gateway::PendingRequest>& p) override;
  bool HasCapacity(std::string_view model_id) const override { return true; }

 private:
  Result<Model*> ModelFor(const ModelSpec& spec);

  gateway::PendingTable* table_;
  std::map<std::string, std::unique_ptr<Model>> models_;  // loaded on first use
};

}  // namespace shoal::baselines
