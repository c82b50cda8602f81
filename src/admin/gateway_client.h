// GatewayClient: the command line's calls to a gateway's admin API over
// HTTP or HTTPS (libcurl), for work that runs where the gateway is —
// evaluations through its router, promotions, variants, uploads to the
// model store by a machine that reaches the gateway and nothing else.
//
// An answer that is not 2xx comes back as the Status the gateway's error
// body names ({"error": {"code", "message"}}), so a caller tells a
// refusal (INVALID_INPUT) from a missing piece (NOT_FOUND). Transport
// failures are NO_CAPACITY (not reached) or DEADLINE_EXCEEDED.
//
// Threading: one caller at a time; the connection is kept between calls.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "common/status.h"

typedef void CURL;

namespace shoal::admin {

struct GatewayTarget {
  std::string url = "http://127.0.0.1:8080";  // http:// or https://, no path
  std::string token;                          // the admin token or an admin key; empty: none
};

class GatewayClient {
 public:
  explicit GatewayClient(GatewayTarget target);
  ~GatewayClient();
  GatewayClient(const GatewayClient&) = delete;
  GatewayClient& operator=(const GatewayClient&) = delete;

  // `method` to `path` (from "/v1/...") with `body`; the answer's body.
  // Work that loads models or joins large files takes a while: `timeout`.
  Result<std::string> Call(std::string_view method, const std::string& path, std::string_view body = {},
                           std::string_view content_type = "application/json",
                           std::chrono::seconds timeout = std::chrono::minutes(30));

  const GatewayTarget& target() const { return target_; }

 private:
  const GatewayTarget target_;
  CURL* curl_;
};

}  // namespace shoal::admin
