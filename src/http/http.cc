#include "http/http.h"

#include <atomic>
#include <cstdio>
#include <random>
#include <string>

#include "http/errors.h"

namespace shoal::http {
namespace {

// An id for an answer given before a request has one (the router names
// requests; admission, authentication and HTTP-level refusals come first),
// so that every error body names its request as the API promises:
// "edge-<random per process>-<count>".
std::string EdgeRequestId() {
  static const std::string prefix = [] {
    char hex[16];
    std::snprintf(hex, sizeof(hex), "%08x", static_cast<unsigned>(std::random_device{}()));
    return "edge-" + std::string(hex) + "-";
  }();
  static std::atomic<uint64_t> count{0};
  return prefix + std::to_string(count.fetch_add(1, std::memory_order_relaxed));
}

}  // namespace

Response JsonResponse(int status, std::string body) {
  Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

Response ErrorResponse(const Status& status, std::string_view request_id, int64_t retry_after_s) {
  const std::string id = request_id.empty() ? EdgeRequestId() : std::string(request_id);
  Response r = JsonResponse(HttpStatus(status.code()), ErrorBody(status, id));
  r.headers.emplace_back("X-Shoal-Request-Id", id);
  r.error_code = CodeName(status.code());
  if (WantsRetryAfter(status.code())) r.headers.emplace_back("Retry-After", std::to_string(retry_after_s));
  return r;
}

Response SseHead(std::string events) {
  Response r;
  r.content_type = "text/event-stream";
  r.body = std::move(events);
  // Proxies must neither cache nor hold back the events (X-Accel-Buffering
  // is nginx's switch for the latter).
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("X-Accel-Buffering", "no");
  r.more = true;
  return r;
}

void AppendSseData(std::string_view data, std::string* out) {
  out->append("data: ");
  out->append(data);
  out->append("\n\n");
}

}  // namespace shoal::http
