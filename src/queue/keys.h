// API keys: what a key is, where keys are kept (the `shoal_keys` KV bucket),
// and a gateway's live copy of them (KeyRing).
//
// A key is a random secret, "sk-shoal-" and 48 hex digits (192 bits), shown
// to its holder once, by `shoal keys create` or POST /v1/admin/keys. The
// bucket keeps only its SHA-256, one entry per key under the key's name,
// with what its holder may do:
//
//   {"name": "team-a", "sha256": "<64 hex digits>", "models": ["org/bge", ...] | ["*"],
//    "admin": false, "rps": 10, "tokens_per_min": 60000, "priority": "interactive",
//    "created_unix_ms": 1700000000000}
//
// ("priority" may be missing: keys made before it default to interactive.)
//
// An unsalted hash is enough because the secret is random: there is no
// dictionary to try, and a fixed hash lets a gateway find a key from the
// bearer alone. Secrets are never stored, logged or listed.
//
// KeyRing follows the bucket with a KV watch, as queue/catalog_watch.h follows
// shoal_models: a key created or removed anywhere applies at every gateway
// as the watch delivers it, without a restart. It fails closed:
//   - an entry that does not parse (missing or unknown fields, a bad hash)
//     is dropped with a warning, and with it any earlier version of that
//     key: a broken entry never grants anything;
//   - while the ring is not current — before its first load, after its
//     watch ended, or while its connection is down (it may be missing a
//     removal) — Find refuses every secret with 503 NO_CAPACITY.
//
// Threading: Find and current() from any thread; updates on the watch
// thread. An update builds a new immutable index and swaps it in under
// `mu_` (copy-on-write); readers only copy the pointer under it.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "queue/kv_watch.h"
#include "queue/nats.h"
#include "queue/priority.h"

namespace shoal::queue {

using KeyDigest = std::array<unsigned char, 32>;  // SHA-256

// SHA-256 of `data` (OpenSSL's libcrypto).
KeyDigest Sha256(std::string_view data);
// Whether two digests are equal, in time independent of where they differ.
bool SameDigest(const KeyDigest& a, const KeyDigest& b);

// A fresh secret: "sk-shoal-" and 48 hex digits from OpenSSL's CSPRNG.
Result<std::string> NewSecret();

// Key names: 1..64 bytes of [A-Za-z0-9_-] (the KV key; shown in logs).
Status ValidateKeyName(std::string_view name);

// A model scope as typed on a command line: "*" (every model), or model ids
// separated by commas ("a,b"); "" is no model (an admin-only key).
Result<std::vector<std::string>> ParseModelScope(std::string_view csv);

struct ApiKey {
  std::string name;
  KeyDigest digest{};               // SHA-256 of the secret
  std::vector<std::string> models;  // model ids; "*" is every model
  bool admin = false;               // may use /v1/admin and /v1/cluster
  uint32_t rps = 0;                 // requests per second; 0: unlimited
  uint32_t tokens_per_min = 0;      // estimated tokens per minute; 0: unlimited
  // The class of its requests that send no X-Shoal-Priority (priority.h).
  Priority priority = Priority::kInteractive;
  int64_t created_unix_ms = 0;

  bool MayUse(std::string_view model_id) const;
  bool limited() const { return rps > 0 || tokens_per_min > 0; }
  // The bucket entry (see above).
  std::string ToJson() const;
};

// Parses the bucket entry stored under `name`. Strict: every field of the
// format, of its type, and nothing else — a field this version does not
// know might be a restriction it would fail to apply.
Result<ApiKey> ParseApiKey(std::string_view name, std::string_view json);

// A key just made: the secret (to show once) and what was stored.
struct IssuedKey {
  std::string secret;
  ApiKey key;
};

// The bucket; created if missing, with `replicas` (topology.h OpenBucket).
Result<KvStorePtr> OpenKeysBucket(jsCtx* js, int replicas = 0);
// Makes a secret for `key` (its name, models, admin and limits as given;
// digest and created time set here) and stores it. Refuses a name that
// exists (remove it first): a key is never silently replaced.
Result<IssuedKey> IssueKey(kvStore* keys, ApiKey key);
// kNotFound when there is no such key.
Status RevokeKey(kvStore* keys, std::string_view name);
// Every key that parses, by name; broken entries are skipped with a warning.
Result<std::vector<ApiKey>> ListKeys(kvStore* keys);

class KeyRing {
 public:
  // Watches `keys`, which lives on `nc` (neither owned; both outlive the
  // ring); returns once the existing keys are loaded, or an error after
  // `timeout_ms`.
  static Result<std::unique_ptr<KeyRing>> Open(kvStore* keys, natsConnection* nc, int timeout_ms = 5000);

  // The key whose secret is `secret`: 401 UNAUTHENTICATED when there is
  // none, 503 NO_CAPACITY while the ring is not current.
  Result<std::shared_ptr<const ApiKey>> Find(std::string_view secret) const;
  // The key named `name` (a batch job runs as the key that created it):
  // kUnauthenticated when there is none any more, kNoCapacity as Find.
  Result<std::shared_ptr<const ApiKey>> Named(std::string_view name) const;
  bool current() const;

 private:
  // Keys by name, and by the first 8 bytes of their digest: Find hashes the
  // guess, looks up that prefix, and compares whole digests in constant
  // time. What the lookup's timing can reveal is whether some key's digest
  // shares a prefix with the guess's, which says nothing about any secret.
  struct Index {
    std::map<std::string, std::shared_ptr<const ApiKey>, std::less<>> by_name;
    std::unordered_multimap<uint64_t, std::shared_ptr<const ApiKey>> by_prefix;
  };

  explicit KeyRing(natsConnection* nc) : nc_(nc) {}
  // The index, once loaded and while followed; else kNoCapacity.
  Result<std::shared_ptr<const Index>> CurrentIndex() const;
  void Apply(const KvChange& change);
  // The watch runs and its connection is up (no change can be missed).
  bool Following() const;

  natsConnection* const nc_;
  mutable std::mutex mu_;
  std::condition_variable ready_cv_;
  bool ready_ = false;                   // guarded by mu_
  std::shared_ptr<const Index> index_;   // guarded by mu_
  std::unique_ptr<KvWatch> watch_;       // last: stops first
};

}  // namespace shoal::queue
