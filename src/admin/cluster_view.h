// The cluster as one JSON document: every live worker (memory, resident,
// loading, failed and thrashing models, counters) and every catalog model
// (messages waiting in its pool's stream, which workers hold it). What
// GET /v1/cluster answers and `shoal status` prints; built from the same
// sources the workers place models by (heartbeats, the catalog, the work
// streams' per-model counts).
//
//   {"workers": [{"id", "host", "pid", "pool", "executors",
//                 "memory": {"budget", "used", "pinned"}, "resident": [...],
//                 "pinned": [...], "loading": [...], "failed": [...],
//                 "thrashing": [...], "loads", "evictions", "queued",
//                 "in_flight", "batches", "batch_items", "heartbeat_age_ms"}],
//    "models": [{"id", "pool", "runtime", "task", "pinned", "memory_bytes",
//                "waiting", "resident_on": [...], "loading_on": [...],
//                "failed_on": [...]}],
//    "batch_jobs": [{"id", "status", "endpoint", "owner", "total",
//                    "completed", "failed", "created_at", "expires_at",
//                    "runner"}]}   (the Batch API's jobs not finished)
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "queue/batch_store.h"
#include "queue/catalog_watch.h"
#include "queue/nats.h"
#include "queue/worker_registry.h"

namespace shoal::admin {

// `js` gives the per-model counts; a pool whose stream cannot be read shows
// "waiting": null for its models. `jobs`: the batch jobs to show (those
// finished are left out).
nlohmann::json ClusterView(const queue::CatalogSnapshot& catalog, const std::vector<queue::WorkerInfo>& workers,
                           jsCtx* js, const std::vector<queue::BatchRecord>& jobs = {});

}  // namespace shoal::admin
