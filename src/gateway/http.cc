#include "gateway/http.h"

#include "wire/errors.h"

namespace shoal::gateway {

HttpResponse JsonResponse(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse ErrorResponse(const Status& status, std::string_view request_id) {
  HttpResponse r = JsonResponse(wire::HttpStatus(status.code()), wire::ErrorBody(status, request_id));
  if (!request_id.empty()) r.headers.emplace_back("X-Shoal-Request-Id", std::string(request_id));
  if (wire::WantsRetryAfter(status.code())) r.headers.emplace_back("Retry-After", "1");
  return r;
}

}  // namespace shoal::gateway
