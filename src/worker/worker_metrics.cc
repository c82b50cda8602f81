#include "worker/worker_metrics.h"

#include <algorithm>

#include "queue/priority.h"

namespace shoal::worker {
namespace {

// 100 µs to ~30 min in ×2 steps: stage times from a tokenizer call to a
// queue wait behind a cold load.
std::vector<double> SecondsBuckets() { return ExponentialBuckets(0.0001, 2, 24); }

}  // namespace

void LoraSeries::Record(std::string_view lora, uint64_t tokens) {
  Series* series;
  {
    std::lock_guard lock(mu_);
    auto it = named_.find(lora);
    if (it != named_.end()) {
      series = &it->second;
    } else if (named_.size() < kMaxLabels) {
      const std::string name(lora);
      series = &named_.emplace(name, Series{&items_->With({model_, name}), &tokens_->With({model_, name})})
                    .first->second;
    } else {
      if (!other_.items) other_ = {&items_->With({model_, "other"}), &tokens_->With({model_, "other"})};
      series = &other_;
    }
  }
  // The counters live as long as the registry; the map never erases.
  series->items->Inc();
  series->tokens->Inc(static_cast<double>(tokens));
}

void ModelSeries::Settled(Outcome outcome) const { items->With({model, std::string(OutcomeName(outcome))}).Inc(); }

WorkerMetrics::WorkerMetrics()
    : batches_(registry_.AddCounter("shoal_worker_batches_total", "Batches run.", {"model"})),
      batch_items_(registry_.AddHistogram("shoal_worker_batch_items", "Items per batch.",
                                          ExponentialBuckets(1, 2, 11), {"model"})),
      batch_cost_(registry_.AddHistogram("shoal_worker_batch_cost",
                                         "Cost units (tokens, or bytes for byte-costed inputs) per batch.",
                                         ExponentialBuckets(16, 2, 14), {"model"})),
      batch_fill_(registry_.AddHistogram("shoal_worker_batch_fill", "Batch cost over the model's max_batch_tokens.",
                                         {0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 1}, {"model"})),
      stage_seconds_(registry_.AddHistogram(
          "shoal_worker_stage_seconds",
          "Where time went: queue (per item), payload (per offloaded item), tokenize and inference (per batch).",
          SecondsBuckets(), {"model", "stage"})),
      items_(registry_.AddCounter("shoal_worker_items_total", "Items settled, by outcome.", {"model", "outcome"})),
      local_queue_(registry_.AddGauge("shoal_worker_local_queue_items", "Items waiting in this worker.", {"model"})),
      backlog_(registry_.AddGauge(
          "shoal_worker_stream_backlog",
          "Items waiting in the model's consumer of a priority class, as last seen by this worker.",
          {"model", "priority"})),
      sequences_(registry_.AddGauge("shoal_worker_generation_sequences",
                                    "A generator's sequences in this worker's engine: running, waiting.",
                                    {"model", "state"})),
      kv_blocks_(registry_.AddGauge("shoal_worker_kv_blocks",
                                    "A generator's KV cache blocks: free (cached ones included), total.",
                                    {"model", "state"})),
      models_(registry_.AddGauge("shoal_worker_models", "Models by state: resident, loading, failed.", {"state"})),
      loads_(registry_.AddCounter("shoal_worker_model_loads_total", "Model loads, by result.", {"model", "result"})),
      load_seconds_(registry_.AddHistogram("shoal_worker_model_load_seconds", "Time to load a model.",
                                           ExponentialBuckets(0.01, 2, 16), {"model"})),
      evictions_(registry_.AddCounter("shoal_worker_evictions_total", "Models evicted to make room.", {"model"})),
      memory_(registry_.AddGauge("shoal_worker_memory_bytes", "Model memory per device: used and budget.",
                                 {"device", "kind"})),
      ttft_(registry_.AddHistogram("shoal_worker_generation_ttft_seconds", "Time to first token.", SecondsBuckets(),
                                   {"model"})),
      itl_(registry_.AddHistogram("shoal_worker_generation_itl_seconds",
                                  "Mean time between tokens, per sequence.", SecondsBuckets(), {"model"})),
      generated_(registry_.AddCounter("shoal_worker_generated_tokens_total", "Tokens generated.", {"model"})),
      drafts_(registry_.AddCounter("shoal_worker_draft_tokens_total",
                                   "Speculative decoding: tokens drafted, by whether the model accepted them.",
                                   {"model", "outcome"})),
      lora_items_(registry_.AddCounter("shoal_worker_lora_items_total",
                                       "Items run under a LoRA adapter (the first 32 adapters of a model by "
                                       "name, later ones as \"other\").",
                                       {"model", "lora"})),
      lora_tokens_(registry_.AddCounter("shoal_worker_lora_tokens_total",
                                        "Tokens of the items run under a LoRA adapter.", {"model", "lora"})) {}

const ModelSeries& WorkerMetrics::For(const std::string& model) {
  std::lock_guard lock(mu_);
  auto& slot = series_[model];
  if (!slot) {
    slot = std::make_unique<ModelSeries>(ModelSeries{
        .batches = &batches_.With({model}),
        .batch_items = &batch_items_.With({model}),
        .batch_cost = &batch_cost_.With({model}),
        .batch_fill = &batch_fill_.With({model}),
        .queue_seconds = &stage_seconds_.With({model, "queue"}),
        .payload_seconds = &stage_seconds_.With({model, "payload"}),
        .tokenize_seconds = &stage_seconds_.With({model, "tokenize"}),
        .inference_seconds = &stage_seconds_.With({model, "inference"}),
        .ttft_seconds = &ttft_.With({model}),
        .itl_seconds = &itl_.With({model}),
        .generated_tokens = &generated_.With({model}),
        .drafts_accepted = &drafts_.With({model, "accepted"}),
        .drafts_rejected = &drafts_.With({model, "rejected"}),
        .items = &items_,
        .loras = std::make_unique<LoraSeries>(&lora_items_, &lora_tokens_, model),
        .model = model,
    });
  }
  return *slot;
}

void WorkerMetrics::Loaded(const std::string& model, bool ok, double seconds) {
  loads_.With({model, ok ? "ok" : "failed"}).Inc();
  if (ok) load_seconds_.With({model}).Observe(seconds);
}

void WorkerMetrics::Evicted(const std::string& model) { evictions_.With({model}).Inc(); }

std::string WorkerMetrics::Render(const WorkerGaugeView& view) {
  {
    std::lock_guard lock(mu_);
    // A model that left keeps its series; its gauges go to 0 rather than
    // freeze at their last value.
    for (const std::string& id : gauge_models_) {
      local_queue_.With({id}).Set(0);
      for (auto p : {queue::Priority::kInteractive, queue::Priority::kBatch}) {
        backlog_.With({id, std::string(queue::PriorityName(p))}).Set(0);
      }
    }
    for (const std::string& id : engine_models_) {
      for (const char* state : {"running", "waiting"}) sequences_.With({id, state}).Set(0);
      for (const char* state : {"free", "total"}) kv_blocks_.With({id, state}).Set(0);
    }
    for (const auto& m : view.models) {
      local_queue_.With({m.id}).Set(static_cast<double>(m.local_queue));
      backlog_.With({m.id, std::string(queue::PriorityName(queue::Priority::kInteractive))})
          .Set(static_cast<double>(m.stream_backlog));
      backlog_.With({m.id, std::string(queue::PriorityName(queue::Priority::kBatch))})
          .Set(static_cast<double>(m.batch_stream_backlog));
      if (std::find(gauge_models_.begin(), gauge_models_.end(), m.id) == gauge_models_.end()) {
        gauge_models_.push_back(m.id);
      }
      if (!m.generates) continue;
      sequences_.With({m.id, "running"}).Set(static_cast<double>(m.running));
      sequences_.With({m.id, "waiting"}).Set(static_cast<double>(m.waiting));
      kv_blocks_.With({m.id, "free"}).Set(static_cast<double>(m.kv_blocks_free));
      kv_blocks_.With({m.id, "total"}).Set(static_cast<double>(m.kv_blocks_total));
      if (std::find(engine_models_.begin(), engine_models_.end(), m.id) == engine_models_.end()) {
        engine_models_.push_back(m.id);
      }
    }
  }
  models_.With({"resident"}).Set(static_cast<double>(view.resident));
  models_.With({"loading"}).Set(static_cast<double>(view.loading));
  models_.With({"failed"}).Set(static_cast<double>(view.failed));
  memory_.With({"cpu", "used"}).Set(static_cast<double>(view.memory_used));
  memory_.With({"cpu", "budget"}).Set(static_cast<double>(view.memory_budget));
  return registry_.Render();
}

}  // namespace shoal::worker
