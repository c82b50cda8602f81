// WorkerMetrics: what a worker counts, served at GET /metrics on the port
// given by `shoal worker --metrics-port` (Prometheus text, common/metrics.h).
//
//   shoal_worker_batches_total{model}              batches run
//   shoal_worker_batch_items{model}                items per batch (histogram)
//   shoal_worker_batch_cost{model}                 cost units (tokens, or bytes
//                                                  for byte-costed inputs) per batch
//   shoal_worker_batch_fill{model}                 batch cost / max_batch_tokens
//   shoal_worker_stage_seconds{model,stage}        where time went (histogram):
//       queue      per item, from JetStream storing it to its batch starting
//       payload    per offloaded item, fetching it from the payload store
//       tokenize   per batch, the runtime's tokenizing (runtime/call_stages.h)
//       inference  per batch, the model call less its tokenizing
//   shoal_worker_items_total{model,outcome}        items settled, by outcome
//                                                  (ack_policy.h: succeeded,
//                                                  bad_input, expired, …)
//   shoal_worker_local_queue_items{model}          items waiting in this worker
//   shoal_worker_stream_backlog{model,priority}    items waiting in the model's
//                                                  consumer of that class, as
//                                                  last seen here
//   shoal_worker_generation_sequences{model,state} a generator's sequences:
//                                                  running, waiting (its engine)
//   shoal_worker_kv_blocks{model,state}            its KV cache blocks: free
//                                                  (cached ones included), total
//   shoal_worker_models{state}                     resident, loading, failed
//   shoal_worker_model_loads_total{model,result}   loads (ok, failed)
//   shoal_worker_model_load_seconds{model}         load time (histogram)
//   shoal_worker_evictions_total{model}            models evicted for room
//   shoal_worker_memory_bytes{device,kind}         used and budget per device
//   shoal_worker_generation_ttft_seconds{model}    time to first token
//   shoal_worker_generation_itl_seconds{model}     mean time between tokens,
//                                                  per sequence
//   shoal_worker_generated_tokens_total{model}     tokens generated
//   shoal_worker_draft_tokens_total{model,outcome} speculative decoding: tokens
//                                                  drafted, by outcome (accepted,
//                                                  rejected); accepted / all is
//                                                  the acceptance rate
//   shoal_worker_lora_items_total{model,lora}      items run under a LoRA
//                                                  adapter (succeeded; base
//                                                  items are not counted here)
//   shoal_worker_lora_tokens_total{model,lora}     their tokens (a generation:
//                                                  prompt + completion)
//
// `model` takes catalog ids, a set the operator controls; each family still
// folds past 1,000 series into "other" (common/metrics.h). Adapters are
// self-service and may be many per model, so `lora` is bounded per model:
// the first 32 adapters a model runs get their own label, later ones are
// counted under lora="other" (LoraSeries). Gauges are set
// when the page is rendered, from the worker's own state.
//
// Threading: counters and histograms are updated from executor, engine and
// loader threads; ModelSeries are looked up once per model (at install) so
// the hot paths never take the families' locks.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/metrics.h"
#include "worker/ack_policy.h"

namespace shoal::worker {

// One model's per-adapter counters, with the label bound above.
class LoraSeries {
 public:
  static constexpr size_t kMaxLabels = 32;  // adapters with their own label, per model

  LoraSeries(Family<Counter>* items, Family<Counter>* tokens, std::string model)
      : items_(items), tokens_(tokens), model_(std::move(model)) {}

  // One item run under `lora` (not empty), with its tokens.
  void Record(std::string_view lora, uint64_t tokens);

 private:
  struct Series {
    Counter* items;
    Counter* tokens;
  };
  Family<Counter>* const items_;
  Family<Counter>* const tokens_;
  const std::string model_;
  std::mutex mu_;
  std::map<std::string, Series, std::less<>> named_;  // guarded by mu_; at most kMaxLabels
  Series other_{nullptr, nullptr};                    // guarded by mu_; made when first needed
};

// The series of one model, looked up once: ServedModel keeps a pointer.
struct ModelSeries {
  Counter* batches;
  Histogram* batch_items;
  Histogram* batch_cost;
  Histogram* batch_fill;
  Histogram* queue_seconds;
  Histogram* payload_seconds;
  Histogram* tokenize_seconds;
  Histogram* inference_seconds;
  Histogram* ttft_seconds;
  Histogram* itl_seconds;
  Counter* generated_tokens;
  Counter* drafts_accepted;
  Counter* drafts_rejected;
  Family<Counter>* items;  // by outcome: few values, looked up per settle
  std::unique_ptr<LoraSeries> loras;
  std::string model;

  void Settled(Outcome outcome) const;
};

// What the page's gauges show, read from the worker when it is rendered.
struct WorkerGaugeView {
  struct ModelView {
    std::string id;
    int64_t local_queue = 0;
    int64_t stream_backlog = 0;        // interactive
    int64_t batch_stream_backlog = 0;  // batch-class
    bool generates = false;            // a generation engine's: the fields below are set
    int64_t running = 0, waiting = 0, kv_blocks_free = 0, kv_blocks_total = 0;
  };
  std::vector<ModelView> models;
  size_t resident = 0, loading = 0, failed = 0;
  uint64_t memory_used = 0, memory_budget = 0;  // the worker's one CPU device
};

class WorkerMetrics {
 public:
  WorkerMetrics();

  // The series of `model` (stable for the registry's life).
  const ModelSeries& For(const std::string& model);

  void Loaded(const std::string& model, bool ok, double seconds);
  void Evicted(const std::string& model);

  // The body of GET /metrics.
  std::string Render(const WorkerGaugeView& view);
  // For parts that register families of their own (runtime processes).
  MetricsRegistry& registry() { return registry_; }

 private:
  MetricsRegistry registry_;
  Family<Counter>& batches_;
  Family<Histogram>& batch_items_;
  Family<Histogram>& batch_cost_;
  Family<Histogram>& batch_fill_;
  Family<Histogram>& stage_seconds_;
  Family<Counter>& items_;
  Family<Gauge>& local_queue_;
  Family<Gauge>& backlog_;
  Family<Gauge>& sequences_;
  Family<Gauge>& kv_blocks_;
  Family<Gauge>& models_;
  Family<Counter>& loads_;
  Family<Histogram>& load_seconds_;
  Family<Counter>& evictions_;
  Family<Gauge>& memory_;
  Family<Histogram>& ttft_;
  Family<Histogram>& itl_;
  Family<Counter>& generated_;
  Family<Counter>& drafts_;
  Family<Counter>& lora_items_;
  Family<Counter>& lora_tokens_;

  std::mutex mu_;
  std::map<std::string, std::unique_ptr<ModelSeries>> series_;  // guarded by mu_
  std::vector<std::string> gauge_models_;  // models given a gauge so far; guarded by mu_
  std::vector<std::string> engine_models_;  // generators given engine gauges so far; guarded by mu_
};

}  // namespace shoal::worker
