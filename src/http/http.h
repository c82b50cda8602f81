// Plain HTTP request/response values passed between the Beast server and the
// route handlers, so that only http_server.cc includes Beast (a Beast
// translation unit takes ~10 s to compile here).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/trace_context.h"

namespace shoal::http {

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string, percent-decoded
  std::string query;   // after the '?', as sent (ParseQuery decodes it)
  std::string content_type;
  std::string accept;
  std::string timeout_ms;  // X-Shoal-Timeout-Ms
  std::string priority;        // X-Shoal-Priority
  std::string traceparent;     // W3C trace context, as sent
  // The gateway's span for this request when it is traced (invalid: not
  // traced): the parent of every span the request's work records.
  TraceContext trace;
  std::string authorization;  // the Authorization header, as sent
  bool from_loopback = false; // the client connected over a loopback address
  std::string body;
  SteadyClock::time_point received = SteadyClock::now();
  // Set by the server. What the handler stores here runs, on the lane's loop
  // and at most once, if the client hangs up before its response is ready
  // (a streamed response: before its last part is written).
  std::shared_ptr<std::function<void()>> on_hangup;
};

struct Response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // A streamed response: more parts follow. See Responder.
  bool more = false;
  // Set by ErrorResponse: the error code's name, for the metrics (not sent).
  std::string_view error_code;
};

// Hands the response back to the connection, from any thread.
//
// A plain response: call once. A streamed one: the first call has `more`
// set and carries the head (status, content type, headers) and maybe a first
// part in `body`; each later call carries one more part in `body` (status
// and headers ignored), and the one with `more` false ends the response.
// Parts go out in call order, as they come, without blocking the loop: HTTP/1.1
// chunked transfer encoding (the connection stays open for the next request),
// or for an HTTP/1.0 client no length and a close at the end. While a
// response streams, Request::on_hangup stays armed. Calls after the end
// are ignored.
using Responder = std::function<void(Response)>;

Response JsonResponse(int status, std::string body);

// A query string's parameters ("a=1&b=x%20y"), percent- and '+'-decoded; a
// name given twice is INVALID_INPUT.
Result<std::map<std::string, std::string>> ParseQuery(std::string_view query);
// The error contract: status from the code, JSON error body, Retry-After
// (`retry_after_s` seconds) where the code asks for it, X-Shoal-Request-Id.
// An empty `request_id` (an answer given before the router named the
// request) gets a fresh "edge-..." id.
Response ErrorResponse(const Status& status, std::string_view request_id, int64_t retry_after_s = 1);

// Server-Sent Events. The head of an event stream (text/event-stream,
// Cache-Control: no-cache, more = true) with `events` as its first part.
Response SseHead(std::string events);
// One event with `data` (a line: JSON as JsonWriter writes it holds no
// newline) appended to `out`: "data: <data>\n\n".
void AppendSseData(std::string_view data, std::string* out);

}  // namespace shoal::http
