#include "admin/gateway_client.h"

#include <curl/curl.h>

#include <nlohmann/json.hpp>

namespace shoal::admin {
namespace {

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// The Status a gateway's error body names; its text when it is not one.
Status ErrorFromAnswer(const std::string& what, long status, const std::string& body) {
  const auto o = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (o.is_object() && o.contains("error") && o["error"].is_object()) {
    const auto& e = o["error"];
    return Status(CodeFromName(e.value("code", "INTERNAL")),
                  what + ": " + std::to_string(status) + " " + e.value("message", body));
  }
  return Status(status == 404 ? Code::kNotFound : Code::kInternal,
                what + ": " + std::to_string(status) + " " + body.substr(0, 300));
}

}  // namespace

GatewayClient::GatewayClient(GatewayTarget target) : target_(std::move(target)) {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)init;
  curl_ = curl_easy_init();
}

GatewayClient::~GatewayClient() {
  if (curl_) curl_easy_cleanup(curl_);
}

Result<std::string> GatewayClient::Call(std::string_view method, const std::string& path, std::string_view body,
                                        std::string_view content_type, std::chrono::seconds timeout) {
  if (!curl_) return Internal("curl_easy_init failed");
  std::string base = target_.url;
  if (!base.starts_with("http://") && !base.starts_with("https://")) {
    return InvalidInput("--gateway: expected http://HOST:PORT or https://HOST:PORT, got '" + base + "'");
  }
  while (base.ends_with('/')) base.pop_back();
  const std::string what = std::string(method) + " " + path;
  curl_easy_reset(curl_);  // keeps the open connection
  const std::string url = base + path;
  curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count() * 1000));
  curl_slist* headers = curl_slist_append(nullptr, "Expect:");  // the body goes at once, not after a 100
  if (!target_.token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + target_.token).c_str());
  if (method == "GET") {
    curl_easy_setopt(curl_, CURLOPT_HTTPGET, 1L);
  } else {
    headers = curl_slist_append(headers, ("Content-Type: " + std::string(content_type)).c_str());
    curl_easy_setopt(curl_, CURLOPT_CUSTOMREQUEST, std::string(method).c_str());
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    // Not copied: `body` outlives the call (never null: that would read stdin).
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, body.empty() ? "" : body.data());
  }
  curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers);
  std::string answer;
  curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &answer);
  const CURLcode sent = curl_easy_perform(curl_);
  curl_slist_free_all(headers);
  if (sent != CURLE_OK) {
    const Code code = sent == CURLE_OPERATION_TIMEDOUT ? Code::kDeadlineExceeded : Code::kNoCapacity;
    return Status(code, what + " to " + base + ": " + curl_easy_strerror(sent));
  }
  long status = 0;
  curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status > 299) return ErrorFromAnswer(what, status, answer);
  return answer;
}

}  // namespace shoal::admin
