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

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Percent- and '+'-decoding (application/x-www-form-urlencoded).
std::string FormDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

Result<std::map<std::string, std::string>> ParseQuery(std::string_view query) {
  std::map<std::string, std::string> params;
  while (!query.empty()) {
    const size_t amp = std::min(query.find('&'), query.size());
    const std::string_view pair = query.substr(0, amp);
    query.remove_prefix(std::min(amp + 1, query.size()));
    if (pair.empty()) continue;
    const size_t eq = std::min(pair.find('='), pair.size());
    std::string name = FormDecode(pair.substr(0, eq));
    std::string value = eq < pair.size() ? FormDecode(pair.substr(eq + 1)) : "";
    if (!params.emplace(name, std::move(value)).second) {
      return InvalidInput("query parameter '" + name + "' given twice");
    }
  }
  return params;
}

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
