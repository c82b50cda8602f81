#include "baselines/inprocess_dispatcher.h"

#include "gateway/responses.h"
#include "runtime/registry/registry.h"
#include "wire/item.h"

namespace shoal::baselines {

using gateway::PendingRequest;

Result<Model*> InProcessDispatcher::ModelFor(const ModelSpec& spec) {
  auto it = models_.find(spec.id);
  if (it != models_.end()) return it->second.get();
  Runtime* runtime = FindRuntime(spec.runtime);
  if (!runtime) return Status(Code::kModelLoadFailed, "no runtime '" + spec.runtime + "'");
  auto config = ModelConfig::FromSpec(spec);
  if (!config.ok()) return Status(Code::kModelLoadFailed, config.status().message());
  auto model = runtime->Load(*config, LoadContext{});
  if (!model.ok()) return Status(Code::kModelLoadFailed, model.status().message());
  Model* raw = model->get();
  models_.emplace(spec.id, std::move(model).value());
  return raw;
}

void InProcessDispatcher::Submit(const std::shared_ptr<PendingRequest>& p) {
  if (p->generation) {
    // Generation streams from pulling workers (continuous batching, KV
    // cache); this baseline exists to measure encoding.
    table_->Finish(*p, http::ErrorResponse(InvalidInput("generation runs on pulling workers only, not "
                                                  "in an in-process gateway"),
                                     p->id));
    return;
  }
  auto model = ModelFor(*p->model);
  if (!model.ok()) {
    table_->Finish(*p, http::ErrorResponse(model.status(), p->id));
    return;
  }
  if (p->request.task != Task::kEncode) {
    // A benchmark baseline for the serving plane; it only ever encodes.
    table_->Finish(*p, http::ErrorResponse(InvalidInput("the in-process dispatcher only encodes"), p->id));
    return;
  }
  if (!p->request.lora.empty()) {
    // Nor does it follow the catalog's adapters (the workers do).
    table_->Finish(*p, http::ErrorResponse(InvalidInput("the in-process dispatcher runs base models only, no LoRA"),
                                     p->id));
    return;
  }
  const auto& items = p->request.items;
  std::vector<EncodeInput> inputs(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (Status s = wire::DecodeTextItem(items[i].payload, &inputs[i].text); !s.ok()) {
      table_->Finish(*p, gateway::ItemErrorResponse(*p, i, s));
      return;
    }
    inputs[i].truncate = p->request.options.truncate;
    inputs[i].normalize = p->request.options.normalize;
  }
  std::vector<EncodeOutput> outputs(inputs.size());
  const auto t0 = SteadyClock::now();
  Status s = (*model)->Encode(inputs, outputs);
  const int64_t inference_us = MicrosSince(t0);
  if (!s.ok()) {
    table_->Finish(*p, http::ErrorResponse(Status(Code::kInferenceError, s.message()), p->id));
    return;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].status.ok()) {
      table_->Finish(*p, gateway::ItemErrorResponse(*p, i, outputs[i].status));
      return;
    }
    gateway::ItemResult& r = p->results[i];
    r.filled = true;
    wire::AppendDenseResult(outputs[i].dense.data(), outputs[i].dense.size(), &r.owned);
    r.payload = r.owned;
    r.tokens = outputs[i].tokens;
    r.inference_us = inference_us;
  }
  table_->Finish(*p, gateway::ComposeResponse(*p));
}

}  // namespace shoal::baselines
