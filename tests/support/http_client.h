// A small blocking HTTP/1.1 client for tests: one keep-alive connection,
// Content-Length bodies only (what the gateway sends for a plain response).
// StreamConnection reads a streamed one (Server-Sent Events) as it arrives.
#pragma once

#include <map>
#include <string>
#include <vector>

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

// One connection whose responses are read incrementally: the head, then a
// streamed body event by event — chunked (HTTP/1.1), or until the server
// closes (HTTP/1.0) — so a test can interleave what it reads with what it
// makes the server send. Blocking, with the timeout per read.
class StreamConnection {
 public:
  explicit StreamConnection(int port, int timeout_ms = 10000);
  ~StreamConnection();

  // Sends a request (Content-Length body; HTTP/1.0 when `http10`).
  Status Send(const std::string& method, const std::string& path, const std::string& body = "",
              const std::map<std::string, std::string>& headers = {}, bool http10 = false);
  Status PostJson(const std::string& path, const std::string& body, bool http10 = false) {
    return Send("POST", path, body, {{"Content-Type", "application/json"}}, http10);
  }

  // The status line and headers of the response to the last request. A
  // plain (Content-Length) response's body is read too, into `body`.
  Result<HttpResult> ReadHead();
  // The data of the next event of a streamed body ("data: <this>"), or
  // kNotFound once the body has ended.
  Result<std::string> NextEvent();
  // The data of every event left, up to the end of the body.
  Result<std::vector<std::string>> RemainingEvents();
  // Whether the streamed body was terminated properly (chunked: the last
  // chunk; HTTP/1.0: the server closed).
  bool body_ended() const { return body_ended_; }
  // Whether the server has closed the connection.
  bool closed_by_server() const { return eof_; }

  // Closes the connection (the client hangs up).
  void Close();

 private:
  Status Fill();          // receives more into raw_
  Status DecodeSome();    // moves body bytes from raw_ to body_

  int fd_ = -1;
  bool chunked_ = false;
  bool body_ended_ = false;
  bool eof_ = false;
  size_t chunk_left_ = 0;  // bytes of the current chunk still to decode
  std::string raw_;        // received, not yet decoded
  std::string body_;       // decoded body, not yet split into events
};

}  // namespace shoal::testing
