// PayloadStore: where item parts too large for a NATS message wait while
// their request is in the queue (docs/architecture.md, "Large payloads").
// The gateway puts an item's bytes under a key and publishes a work message
// that names the key (its header's "payload": wire/work_message.h) instead
// of carrying them; the worker gets them back;
// the gateway deletes them when the request ends, and sweeps what a gateway
// that died mid-request left behind.
//
// Two stores, chosen by URL (`--payload-store`):
//   /path, dir:/path     a local directory: one file per key, written to a
//                        temporary name and renamed, so a reader never sees a
//                        partial payload. For one machine (`shoal up`).
//   s3://bucket[/prefix] any S3-compatible store, path-style requests signed
//                        with SigV4 (s3_payload_store.h). For clusters.
//
// Keys are [A-Za-z0-9._-] (request id and item index), so they are safe as
// file names and URL path segments; others are refused.
//
// Threading: every method may be called from any thread; each blocks for
// its I/O, so the gateway calls them off its event loops.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::queue {

class PayloadStore {
 public:
  virtual ~PayloadStore() = default;

  virtual Status Put(const std::string& key, std::string_view bytes) = 0;
  // kNotFound when no payload has the key (its request ended); kInternal
  // when the store could not be reached (worth another try).
  virtual Status Get(const std::string& key, std::string* bytes) = 0;
  // Ok when nothing has the key.
  virtual Status Delete(const std::string& key) = 0;
  // Deletes the payloads stored more than `age` ago; counts them in `deleted`.
  virtual Status DeleteOlderThan(std::chrono::seconds age, size_t* deleted) = 0;

  // "directory /tmp/shoal-payloads", "s3 http://127.0.0.1:4568/bucket/prefix"
  virtual std::string Describe() const = 0;
};

// The store `url` names (see above). An S3 store takes its credentials from
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, its region from the URL's
// `region=` or AWS_REGION (default us-east-1) and its endpoint from the URL's
// `endpoint=` or AWS_ENDPOINT_URL (default https://s3.<region>.amazonaws.com).
// A local directory is created if missing.
Result<std::unique_ptr<PayloadStore>> OpenPayloadStore(const std::string& url);

// The default store: a directory under the system's temporary directory.
std::string DefaultPayloadStoreUrl();

// Whether `key` is a valid payload key.
bool ValidPayloadKey(std::string_view key);

}  // namespace shoal::queue
