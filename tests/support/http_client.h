// A small blocking HTTP/1.1 client for tests: one keep-alive connection,
// Content-Length bodies only (what the gateway sends).
#pragma once

#include <map>
#include <string>

#include "common/status.h"

namespace shoal::testing {

struct HttpResult {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;

  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

class HttpClient {
 public:
  explicit HttpClient(int port, int timeout_ms = 30000) : port_(port), timeout_ms_(timeout_ms) {}
  ~HttpClient();

  Result<HttpResult> Request(const std::string& method, const std::string& path,
                             const std::string& body = "",
                             const std::map<std::string, std::string>& headers = {});
  Result<HttpResult> Get(const std::string& path) { return Request("GET", path); }
  Result<HttpResult> PostJson(const std::string& path, const std::string& body,
                              std::map<std::string, std::string> headers = {}) {
    headers.emplace("Content-Type", "application/json");
    return Request("POST", path, body, headers);
  }
  Result<HttpResult> PostMsgpack(const std::string& path, const std::string& body,
                                 std::map<std::string, std::string> headers = {}) {
    headers.emplace("Content-Type", "application/msgpack");
    return Request("POST", path, body, headers);
  }

  // Sends raw bytes on a fresh connection and closes it without reading.
  static void SendAndHangUp(int port, const std::string& raw);

 private:
  Status Connect();
  void Close();

  int port_;
  int timeout_ms_;
  int fd_ = -1;
};

}  // namespace shoal::testing
