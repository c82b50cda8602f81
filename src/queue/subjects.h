// Names on the NATS side: streams, subjects, consumers, buckets, inboxes.
//
// Model ids such as `org/name-v1.5` contain characters that subjects ('.')
// and consumer names ('.', '/') cannot, so a model id travels as one token:
// [A-Za-z0-9-] kept, every other byte written as '_' and two hex digits
// (`org_2Fname-v1_2E5`). The mapping is reversible and deterministic, so
// every gateway and worker derives the same names with no coordination.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "queue/priority.h"

namespace shoal::queue {

inline constexpr std::string_view kModelsBucket = "shoal_models";
inline constexpr std::string_view kVersionsBucket = "shoal_model_versions";  // catalog/model_version.h
inline constexpr std::string_view kWorkersBucket = "shoal_workers";
inline constexpr std::string_view kKeysBucket = "shoal_keys";  // API keys (queue/keys.h)
inline constexpr std::string_view kDeadLetterStream = "SHOAL_DLQ";

std::string ModelToken(std::string_view model_id);
Result<std::string> ModelIdFromToken(std::string_view token);

std::string WorkStreamName(std::string_view pool);            // SHOAL_WORK_<pool>
std::string WorkSubjectFilter(std::string_view pool);         // shoal.work.<pool>.>
// A model's work subject and durable consumer for a priority class
// (queue/priority.h has the names).
std::string WorkSubject(std::string_view pool, std::string_view model_id,
                        Priority priority = Priority::kInteractive);
std::string ConsumerName(std::string_view model_id, Priority priority = Priority::kInteractive);
// The model id a work consumer serves (either class).
Result<std::string> ModelIdFromConsumer(std::string_view consumer);
// The model id of what follows shoal.work.<pool>. in a work subject.
Result<std::string> ModelIdFromWorkSubjectTail(std::string_view tail);

// Where a gateway lane collects results: _INBOX.<lane-id>.<request-seq>, and
// the wildcard it subscribes to. (A lane is <gateway-id>-<n>.)
std::string ReplySubject(std::string_view lane_id, uint64_t request_seq);
std::string ReplyWildcard(std::string_view lane_id);

// The push baseline (gateway/push_dispatcher.h): a gateway that assigns a
// request to one worker publishes its items, over core NATS, to
// shoal.push.<worker-token>.<model-token>; the worker subscribes to
// shoal.push.<worker-token>.>. The worker id is token-encoded like a model id
// (host names contain '.').
std::string PushSubject(std::string_view worker_id, std::string_view model_id);
std::string PushWildcard(std::string_view worker_id);

// Hedging (gateway/queue_dispatcher.h): a gateway also sends a waiting item,
// over core NATS, to a worker that has its model loaded, while the stream
// keeps the durable copy:
//   shoal.hedge.<worker-token>.<model-token>       its pool's stream stores
//       nothing (between leaders): the worker runs it;
//   shoal.hedge.<worker-token>.<model-token>.idle  stored, but not delivered
//       for a while (a consumer between leaders): run only by an idle worker.
std::string HedgeSubject(std::string_view worker_id, std::string_view model_id, bool if_idle = false);
std::string HedgeWildcard(std::string_view worker_id);
struct HedgedCopy {
  std::string model_id;
  bool if_idle = false;
};
Result<HedgedCopy> ParseHedgeSubject(std::string_view subject);

// Cancellation: a gateway whose client hung up publishes the request id and
// its deadline ("<request-id> <deadline-unix-ms>") to shoal.cancel.<pool>,
// over core NATS; every worker of the pool drops that request's items that
// have not started (worker/cancelled_requests.h). Best effort: a worker that
// misses it runs the items, and their deadline still bounds the waste.
std::string CancelSubject(std::string_view pool);

}  // namespace shoal::queue
