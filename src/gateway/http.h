// Plain HTTP request/response values passed between the Beast server and the
// route handlers, so that only http_server.cc includes Beast (a Beast
// translation unit takes ~10 s to compile here).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace shoal::gateway {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string, percent-decoded
  std::string content_type;
  std::string accept;
  std::string timeout_ms;  // X-Shoal-Timeout-Ms
  std::string authorization;  // the Authorization header, as sent
  bool from_loopback = false; // the client connected over a loopback address
  std::string body;
  SteadyClock::time_point received = SteadyClock::now();
  // Set by the server. What the handler stores here runs, on the lane's loop
  // and at most once, if the client hangs up before its response is ready.
  std::shared_ptr<std::function<void()>> on_hangup;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

// Hands the response back to the connection. Call exactly once, from any thread.
using Responder = std::function<void(HttpResponse)>;

HttpResponse JsonResponse(int status, std::string body);
// The error contract: status from the code, JSON error body, Retry-After
// where the code asks for it.
HttpResponse ErrorResponse(const Status& status, std::string_view request_id);

}  // namespace shoal::gateway
