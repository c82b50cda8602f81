// Blocking HTTP calls to an OpenAI-compatible server (libcurl), and the
// request set-up the streaming calls share (upstream_streams.h).
//
// Threading: Call may run on several threads at once; easy handles are
// pooled so their connections are kept alive between calls.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/upstream/upstream_options.h"

typedef void CURL;
struct curl_slist;

namespace shoal::upstream {

struct HttpReply {
  long status = 0;   // the HTTP status
  std::string body;  // as received
};

// Where to send and with what key: the options plus the key read from the
// worker's environment at load.
struct Endpoint {
  UpstreamOptions options;
  std::string api_key;  // empty: none
};

// Sets `curl` up for a JSON POST of `body` to base_url + `path` (or a GET
// when `body` is empty); `headers` receives the list to free after the call.
void PrepareRequest(CURL* curl, const Endpoint& endpoint, std::string_view path, const std::string& body,
                    curl_slist** headers);

// The error for a reply that is not 2xx: INVALID_INPUT for 400 and 413/422
// (the input's fault, with the upstream's message), INFERENCE_ERROR for
// anything else (its key refused, the server failing).
Status ErrorFromReply(const Endpoint& endpoint, long status, std::string_view body);

class UpstreamHttp {
 public:
  explicit UpstreamHttp(Endpoint endpoint);
  ~UpstreamHttp();
  UpstreamHttp(const UpstreamHttp&) = delete;
  UpstreamHttp& operator=(const UpstreamHttp&) = delete;

  // One request, waited for (at most timeout_ms). Transport failures:
  // NO_CAPACITY when the server could not be reached (the item is tried
  // again), INFERENCE_ERROR when it did not answer in time.
  Result<HttpReply> Call(std::string_view path, const std::string& body);

  const Endpoint& endpoint() const { return endpoint_; }

 private:
  CURL* Acquire();
  void Release(CURL* curl);

  const Endpoint endpoint_;
  std::mutex mu_;
  std::vector<CURL*> idle_;
};

}  // namespace shoal::upstream
