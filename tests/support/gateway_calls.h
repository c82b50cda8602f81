// One call to a gateway as an API client makes it, for tests that make many
// (auth, error codes): the answer, with a failed connection a test failure.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "support/http_client.h"

namespace shoal::testing {

using Headers = std::map<std::string, std::string>;

inline HttpResult Call(int port, const std::string& method, const std::string& path, const std::string& body = "",
                       Headers headers = {}) {
  HttpClient http(port);
  if (!body.empty()) headers.emplace("Content-Type", "application/json");
  auto res = http.Request(method, path, body, headers);
  EXPECT_TRUE(res.ok()) << method << " " << path << ": " << res.status().ToString();
  return res.ok() ? *res : HttpResult{};
}

inline Headers Bearer(const std::string& secret) { return {{"Authorization", "Bearer " + secret}}; }

// An /v1/embeddings body.
inline std::string Embed(const std::string& model, const std::string& text = "hello") {
  return nlohmann::json{{"model", model}, {"input", text}}.dump();
}

// Polls `probe` until it answers `status`, for up to `within`.
inline bool Eventually(const std::function<int()>& probe, int status, std::chrono::milliseconds within) {
  const auto until = std::chrono::steady_clock::now() + within;
  for (;;) {
    if (probe() == status) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace shoal::testing
