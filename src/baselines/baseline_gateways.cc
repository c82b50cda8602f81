#include "baselines/baseline_gateways.h"

#include "baselines/inprocess_dispatcher.h"

namespace shoal::baselines {

std::optional<DispatchMode> ParseDispatchMode(std::string_view name) {
  if (name == "pull") return DispatchMode::kPull;
  if (name == "push-rr") return DispatchMode::kPushRoundRobin;
  if (name == "push-lo") return DispatchMode::kPushLeastOutstanding;
  return std::nullopt;
}

void UseDispatch(DispatchMode mode, gateway::GatewayOptions* options) {
  if (mode == DispatchMode::kPull) return;
  PushDispatcherOptions push;
  push.policy = mode == DispatchMode::kPushLeastOutstanding ? PushPolicy::kLeastOutstanding : PushPolicy::kRoundRobin;
  options->dispatch_name = mode == DispatchMode::kPushLeastOutstanding ? "push baseline: least outstanding"
                                                                       : "push baseline: round-robin";
  options->dispatchers = [push](const gateway::LaneSetup& lane) -> Result<std::unique_ptr<gateway::Dispatcher>> {
    auto d = std::make_unique<PushDispatcher>(lane, push);
    SHOAL_RETURN_IF_ERROR(d->Start(lane.nats));
    return std::unique_ptr<gateway::Dispatcher>(std::move(d));
  };
}

Status UseInProcess(const std::string& models_dir, gateway::GatewayOptions* options) {
  auto specs = LoadModelProfiles(models_dir);
  if (!specs.ok()) return specs.status();
  auto catalog = std::make_shared<queue::CatalogSnapshot>();
  for (ModelSpec& s : *specs) {
    const std::string id = s.id;
    (*catalog)[id] = std::make_shared<const ModelSpec>(std::move(s));
  }
  options->catalog = std::move(catalog);
  options->dispatch_name = "in-process runtime, no queue";
  options->dispatchers = [](const gateway::LaneSetup& lane) -> Result<std::unique_ptr<gateway::Dispatcher>> {
    return std::unique_ptr<gateway::Dispatcher>(std::make_unique<InProcessDispatcher>(lane.table));
  };
  return Status::Ok();
}

}  // namespace shoal::baselines
