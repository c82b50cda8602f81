#include "runtime/upstream/upstream_http.h"

#include <curl/curl.h>

namespace shoal::upstream {
namespace {

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// At most this much of an upstream's error body goes into a message.
constexpr size_t kQuotedBytes = 300;

}  // namespace

void PrepareRequest(CURL* curl, const Endpoint& endpoint, std::string_view path, const std::string& body,
                    curl_slist** headers) {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)init;
  const std::string url = endpoint.options.base_url + std::string(path);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(endpoint.options.connect_timeout_ms));
  *headers = curl_slist_append(nullptr, "Accept: application/json, text/event-stream");
  if (!endpoint.api_key.empty()) {
    *headers = curl_slist_append(*headers, ("Authorization: Bearer " + endpoint.api_key).c_str());
  }
  if (!body.empty()) {
    *headers = curl_slist_append(*headers, "Content-Type: application/json");
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(curl, CURLOPT_COPYPOSTFIELDS, body.c_str());
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, *headers);
}

Status ErrorFromReply(const Endpoint& endpoint, long status, std::string_view body) {
  std::string quoted(body.substr(0, kQuotedBytes));
  if (body.size() > kQuotedBytes) quoted += "...";
  const std::string message =
      "upstream " + endpoint.options.base_url + " answered " + std::to_string(status) + ": " + quoted;
  if (status == 400 || status == 413 || status == 422) return InvalidInput(message);
  return Status(Code::kInferenceError, message);
}

UpstreamHttp::UpstreamHttp(Endpoint endpoint) : endpoint_(std::move(endpoint)) {}

UpstreamHttp::~UpstreamHttp() {
  for (CURL* c : idle_) curl_easy_cleanup(c);
}

CURL* UpstreamHttp::Acquire() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      CURL* c = idle_.back();
      idle_.pop_back();
      curl_easy_reset(c);  // keeps its open connection
      return c;
    }
  }
  return curl_easy_init();
}

void UpstreamHttp::Release(CURL* curl) {
  std::lock_guard lock(mu_);
  idle_.push_back(curl);
}

Result<HttpReply> UpstreamHttp::Call(std::string_view path, const std::string& body) {
  CURL* curl = Acquire();
  if (!curl) return Internal("upstream: curl_easy_init failed");
  curl_slist* headers = nullptr;
  HttpReply reply;
  PrepareRequest(curl, endpoint_, path, body, &headers);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(endpoint_.options.timeout_ms));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply.body);
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  curl_slist_free_all(headers);
  Release(curl);
  const std::string where = "upstream " + endpoint_.options.base_url + std::string(path);
  if (rc == CURLE_OPERATION_TIMEDOUT) {
    return Status(Code::kInferenceError,
                  where + ": no answer within " + std::to_string(endpoint_.options.timeout_ms) + " ms");
  }
  if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) {
    return Status(Code::kNoCapacity, where + ": " + curl_easy_strerror(rc));
  }
  if (rc != CURLE_OK) return Status(Code::kInferenceError, where + ": " + curl_easy_strerror(rc));
  return reply;
}

}  // namespace shoal::upstream
