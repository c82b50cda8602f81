// S3PayloadStore: payloads as objects of an S3-compatible bucket
// (payload_store.h), over libcurl with SigV4-signed, path-style requests:
//   PUT/GET/DELETE <endpoint>/<bucket>/<prefix><key>
//   GET <endpoint>/<bucket>?list-type=2&prefix=<prefix>   (the sweep)
// Tested against the s3rver npm server, which checks signatures.
//
// Threading: curl handles (each with its connection cache) are taken from
// a pool under a mutex, so calls from many threads reuse connections.
#pragma once

#include <mutex>
#include <vector>

#include "queue/payload_store.h"
#include "queue/sigv4.h"

namespace shoal::queue {

struct S3Location {
  std::string endpoint;  // "http://127.0.0.1:4568" (scheme://host[:port], no path)
  std::string bucket;
  std::string prefix;    // "" or ends in '/'
};

class S3PayloadStore final : public PayloadStore {
 public:
  S3PayloadStore(S3Location location, SigV4Credentials credentials);
  ~S3PayloadStore() override;

  Status Put(const std::string& key, std::string_view bytes) override;
  Status Get(const std::string& key, std::string* bytes) override;
  Status Delete(const std::string& key) override;
  Status DeleteOlderThan(std::chrono::seconds age, size_t* deleted) override;
  std::string Describe() const override;

 private:
  struct Response {
    long status = 0;
    std::string body;
  };
  // One signed request; a transport failure is kInternal.
  Status Send(std::string_view method, const std::string& path, const std::string& query,
              std::string_view body, Response* response);
  void* Acquire();
  void Release(void* handle);

  const S3Location location_;
  const SigV4Credentials credentials_;
  std::string host_;  // the Host header: the endpoint's host[:port]
  std::mutex mu_;
  std::vector<void*> idle_;  // CURL* handles, guarded by mu_
};

}  // namespace shoal::queue
