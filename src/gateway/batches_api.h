// BatchesApi: OpenAI's Batch API over the BatchStore (queue/batch_store.h);
// the jobs run in the gateways' BatchRunners (batch_runner.h).
//
//   POST /v1/batches              {"input_file_id", "endpoint",
//                                  "completion_window", "metadata"?}
//                                  → 200 the batch object, "validating"
//   GET  /v1/batches              ?limit= (1..100, 20) &after=<id>, newest
//                                  first → {"object": "list", "data",
//                                  "first_id", "last_id", "has_more"}
//   GET  /v1/batches/{id}         the batch object (404 NOT_FOUND)
//   POST /v1/batches/{id}/cancel  → "cancelling" (then "cancelled" once
//                                  the requests in flight finish)
//
// Creating one reads its input file (a "batch" file of the caller's) and
// checks it whole: every line is a request or is reported on its own in
// the error file; a file of no request, or of more than 50,000, is 400
// INVALID_INPUT. "completion_window" is "24h" as OpenAI has it, or shorter
// ("30m", "90s"). "metadata": at most 16 string pairs (keys up to 64 bytes,
// values up to 512). Any other field is 400 INVALID_INPUT.
//
// With API keys a job belongs to the key that created it, as files do
// (Caller::Owner): other keys neither list nor see it (404), admin keys and
// the admin token see every job.
//
// Threading: Handle from any thread; requests are served one at a time on
// the API's own thread (the stores block on JetStream).
#pragma once

#include <string_view>

#include "common/event_loop.h"
#include "gateway/auth.h"
#include "http/http.h"
#include "queue/batch_store.h"
#include "queue/file_store.h"

namespace shoal::gateway {

class BatchesApi {
 public:
  // Neither owned; both outlive this.
  BatchesApi(queue::BatchStore* batches, queue::FileStore* files);
  ~BatchesApi();

  static bool Handles(std::string_view path);
  // For an authenticated caller; `respond` is called from the API's thread.
  void Handle(http::Request&& req, http::Responder respond, Caller caller);

 private:
  http::Response Serve(const http::Request& req, const Caller& caller);
  Result<queue::BatchRecord> Create(const http::Request& req, const Caller& caller);
  Result<std::string> List(const http::Request& req, const Caller& caller);
  Result<queue::BatchRecord> Cancel(std::string_view id, const Caller& caller);
  // The job `id` if `caller` may see it, else NOT_FOUND.
  Result<queue::VersionedBatch> Find(std::string_view id, const Caller& caller);

  queue::BatchStore* const batches_;
  queue::FileStore* const files_;
  EventLoop loop_;
};

}  // namespace shoal::gateway
