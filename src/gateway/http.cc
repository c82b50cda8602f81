#include "gateway/http.h"

#include "wire/errors.h"

namespace shoal::gateway {

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse ErrorResponse(const Status& status, std::string_view request_id, int64_t retry_after_s) {
  HttpResponse r = JsonResponse(wire::HttpStatus(status.code()), wire::ErrorBody(status, request_id));
  if (!request_id.empty()) r.headers.emplace_back("X-Shoal-Request-Id", std::string(request_id));
  if (wire::WantsRetryAfter(status.code())) r.headers.emplace_back("Retry-After", std::to_string(retry_after_s));
  return r;
}

HttpResponse SseHead(std::string events) {
  HttpResponse r;
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

}  // namespace shoal::gateway
