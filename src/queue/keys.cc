#include "queue/keys.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/hex.h"
#include "common/log.h"
#include "queue/topology.h"
#include "catalog/names.h"
#include "queue/subjects.h"

namespace shoal::queue {
namespace {

using nlohmann::json;

constexpr std::string_view kSecretPrefix = "sk-shoal-";
constexpr size_t kSecretBytes = 24;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // lower case only: one spelling per digest
}

Result<KeyDigest> DigestFromHex(std::string_view hex) {
  KeyDigest d{};
  if (hex.size() != 2 * d.size()) return InvalidInput("sha256: expected 64 hex digits");
  for (size_t i = 0; i < d.size(); ++i) {
    const int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return InvalidInput("sha256: expected lower-case hex digits");
    d[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return d;
}

Status ValidateScope(const std::vector<std::string>& models) {
  for (const auto& m : models) {
    if (m == "*") {
      if (models.size() > 1) return InvalidInput("models: '*' (every model) stands alone");
      continue;
    }
    if (Status s = ValidateModelId(m); !s.ok()) return InvalidInput("models: " + s.message());
  }
  return Status::Ok();
}

Result<uint32_t> Limit(const json& o, const char* field) {
  const json& v = o.at(field);
  if (!v.is_number_unsigned() || v.get<uint64_t>() > std::numeric_limits<uint32_t>::max()) {
    return InvalidInput(std::string(field) + ": expected a whole number from 0 to 2^32-1");
  }
  return static_cast<uint32_t>(v.get<uint64_t>());
}

uint64_t Prefix(const KeyDigest& d) {
  uint64_t p;
  std::memcpy(&p, d.data(), sizeof p);
  return p;
}

}  // namespace

KeyDigest Sha256(std::string_view data) {
  KeyDigest d{};
  unsigned int n = 0;
  // Cannot fail for SHA-256 with the default provider short of memory
  // exhaustion; an all-zero digest matches no stored key (every stored one
  // is a real SHA-256 output).
  EVP_Digest(data.data(), data.size(), d.data(), &n, EVP_sha256(), nullptr);
  return d;
}

bool SameDigest(const KeyDigest& a, const KeyDigest& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

Result<std::string> NewSecret() {
  unsigned char bytes[kSecretBytes];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return Internal("no randomness for a key (RAND_bytes failed)");
  std::string secret(kSecretPrefix);
  secret += LowerHex(bytes, sizeof bytes);
  OPENSSL_cleanse(bytes, sizeof bytes);
  return secret;
}

Status ValidateKeyName(std::string_view name) {
  if (name.empty() || name.size() > 64) return InvalidInput("key name: 1 to 64 characters");
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return InvalidInput("key name '" + std::string(name) + "': use letters, digits, '_' and '-'");
  }
  return Status::Ok();
}

Result<std::vector<std::string>> ParseModelScope(std::string_view csv) {
  std::vector<std::string> models;
  while (!csv.empty()) {
    const size_t comma = csv.find(',');
    std::string_view m = csv.substr(0, comma);
    while (!m.empty() && m.front() == ' ') m.remove_prefix(1);
    while (!m.empty() && m.back() == ' ') m.remove_suffix(1);
    if (m.empty()) return InvalidInput("models: an empty name in '" + std::string(csv) + "'");
    models.emplace_back(m);
    if (comma == std::string_view::npos) break;
    csv.remove_prefix(comma + 1);
    if (csv.empty()) return InvalidInput("models: a trailing ','");
  }
  SHOAL_RETURN_IF_ERROR(ValidateScope(models));
  return models;
}

bool ApiKey::MayUse(std::string_view model_id) const {
  for (const auto& m : models) {
    if (m == "*" || m == model_id) return true;
  }
  return false;
}

std::string ApiKey::ToJson() const {
  return json{{"name", name},
              {"sha256", LowerHex(digest.data(), digest.size())},
              {"models", models},
              {"admin", admin},
              {"rps", rps},
              {"tokens_per_min", tokens_per_min},
              {"priority", PriorityName(priority)},
              {"created_unix_ms", created_unix_ms}}
      .dump();
}

Result<ApiKey> ParseApiKey(std::string_view name, std::string_view text) {
  const json o = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) return InvalidInput("not a JSON object");
  static constexpr std::string_view kFields[] = {"name", "sha256", "models", "admin",
                                                 "rps", "tokens_per_min", "created_unix_ms"};
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (std::find(std::begin(kFields), std::end(kFields), it.key()) == std::end(kFields) &&
        it.key() != "priority") {
      return InvalidInput("unknown field '" + it.key() + "'");
    }
  }
  for (std::string_view f : kFields) {  // all but "priority", which keys made before it lack
    if (!o.contains(f)) return InvalidInput("missing field '" + std::string(f) + "'");
  }
  ApiKey key;
  if (!o["name"].is_string() || o["name"].get<std::string>() != name) {
    return InvalidInput("name: expected \"" + std::string(name) + "\", the entry's key");
  }
  key.name = std::string(name);
  SHOAL_RETURN_IF_ERROR(ValidateKeyName(key.name));
  if (!o["sha256"].is_string()) return InvalidInput("sha256: expected a string");
  auto digest = DigestFromHex(o["sha256"].get<std::string>());
  if (!digest.ok()) return digest.status();
  key.digest = *digest;
  if (!o["models"].is_array()) return InvalidInput("models: expected an array of model ids");
  for (const auto& m : o["models"]) {
    if (!m.is_string()) return InvalidInput("models: expected an array of model ids");
    key.models.push_back(m.get<std::string>());
  }
  SHOAL_RETURN_IF_ERROR(ValidateScope(key.models));
  if (!o["admin"].is_boolean()) return InvalidInput("admin: expected true or false");
  key.admin = o["admin"].get<bool>();
  auto rps = Limit(o, "rps");
  if (!rps.ok()) return rps.status();
  key.rps = *rps;
  auto tokens = Limit(o, "tokens_per_min");
  if (!tokens.ok()) return tokens.status();
  key.tokens_per_min = *tokens;
  if (o.contains("priority")) {
    const std::optional<Priority> p =
        o["priority"].is_string() ? ParsePriority(o["priority"].get<std::string>()) : std::nullopt;
    if (!p) return InvalidInput("priority: expected \"interactive\" or \"batch\"");
    key.priority = *p;
  }
  if (!o["created_unix_ms"].is_number_integer()) return InvalidInput("created_unix_ms: expected an integer");
  key.created_unix_ms = o["created_unix_ms"].get<int64_t>();
  return key;
}

Result<KvStorePtr> OpenKeysBucket(jsCtx* js, int replicas) {
  return OpenBucket(js, kKeysBucket, 0, replicas);
}

Result<IssuedKey> IssueKey(kvStore* keys, ApiKey key) {
  SHOAL_RETURN_IF_ERROR(ValidateKeyName(key.name));
  SHOAL_RETURN_IF_ERROR(ValidateScope(key.models));
  kvEntry* existing = nullptr;
  if (kvStore_Get(&existing, keys, key.name.c_str()) == NATS_OK) {
    kvEntry_Destroy(existing);
    return InvalidInput("a key named '" + key.name + "' exists; remove it first");
  }
  auto secret = NewSecret();
  if (!secret.ok()) return secret.status();
  key.digest = Sha256(*secret);
  key.created_unix_ms = UnixMillis();
  const std::string entry = key.ToJson();
  uint64_t rev = 0;
  // Create, not Put: if another admin made the same name meanwhile, this fails.
  SHOAL_RETURN_IF_ERROR(FromNats(
      kvStore_Create(&rev, keys, key.name.c_str(), entry.data(), static_cast<int>(entry.size())),
      "storing key '" + key.name + "'"));
  return IssuedKey{std::move(secret).value(), std::move(key)};
}

Status RevokeKey(kvStore* keys, std::string_view name) {
  const std::string k(name);
  kvEntry* e = nullptr;
  const natsStatus s = kvStore_Get(&e, keys, k.c_str());
  if (s == NATS_NOT_FOUND) return Status(Code::kNotFound, "no key named '" + k + "'");
  if (s != NATS_OK) return FromNats(s, "reading key '" + k + "'");
  kvEntry_Destroy(e);
  // Purge rather than delete: the hash goes too, not only its current value.
  return FromNats(kvStore_Purge(keys, k.c_str(), nullptr), "removing key '" + k + "'");
}

Result<std::vector<ApiKey>> ListKeys(kvStore* keys) {
  std::vector<ApiKey> out;
  kvKeysList names;
  const natsStatus s = kvStore_Keys(&names, keys, nullptr);
  if (s == NATS_NOT_FOUND) return out;  // an empty bucket
  if (s != NATS_OK) return FromNats(s, "listing keys");
  for (int i = 0; i < names.Count; ++i) {
    kvEntry* e = nullptr;
    if (kvStore_Get(&e, keys, names.Keys[i]) != NATS_OK) continue;  // removed meanwhile
    auto key = ParseApiKey(names.Keys[i], std::string_view(kvEntry_ValueString(e), kvEntry_ValueLen(e)));
    kvEntry_Destroy(e);
    if (!key.ok()) {
      spdlog::warn("keys: skipping entry '{}': {}", names.Keys[i], key.status().message());
      continue;
    }
    out.push_back(std::move(key).value());
  }
  kvKeysList_Destroy(&names);
  return out;
}

Result<std::unique_ptr<KeyRing>> KeyRing::Open(kvStore* keys, natsConnection* nc, int timeout_ms) {
  std::unique_ptr<KeyRing> ring(new KeyRing(nc));
  ring->index_ = std::make_shared<Index>();
  KeyRing* self = ring.get();
  auto watch = KvWatch::Start(
      keys, [self](const KvChange& ch) { self->Apply(ch); },
      [self] {
        std::lock_guard lock(self->mu_);
        self->ready_ = true;
        self->ready_cv_.notify_all();
      });
  if (!watch.ok()) return watch.status();
  ring->watch_ = std::move(watch).value();
  std::unique_lock lock(ring->mu_);
  if (!ring->ready_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return ring->ready_; })) {
    return Status(Code::kNoCapacity, "keys: no answer from the shoal_keys bucket");
  }
  return ring;
}

void KeyRing::Apply(const KvChange& change) {
  std::shared_ptr<const ApiKey> key;
  if (!change.deleted) {
    auto parsed = ParseApiKey(change.key, change.value);
    if (parsed.ok()) {
      key = std::make_shared<const ApiKey>(std::move(parsed).value());
    } else {
      spdlog::warn("keys: entry '{}' is malformed ({}); the key is refused", change.key,
                   parsed.status().message());
    }
  }
  auto next = std::make_shared<Index>();
  {
    std::lock_guard lock(mu_);
    next->by_name = index_->by_name;
    next->by_name.erase(change.key);  // a broken entry takes its earlier version with it
    if (key) next->by_name[change.key] = key;
    for (const auto& [name, k] : next->by_name) next->by_prefix.emplace(Prefix(k->digest), k);
    index_ = next;
  }
  if (key) spdlog::info("keys: {} loaded", change.key);
  if (change.deleted) spdlog::info("keys: {} removed", change.key);
}

bool KeyRing::Following() const {
  return !watch_->ended() && natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED;
}

bool KeyRing::current() const {
  std::lock_guard lock(mu_);
  return ready_ && Following();
}

Result<std::shared_ptr<const KeyRing::Index>> KeyRing::CurrentIndex() const {
  std::shared_ptr<const Index> index;
  bool ready;
  {
    std::lock_guard lock(mu_);
    ready = ready_;
    index = index_;
  }
  if (!ready || !Following()) {
    return Status(Code::kNoCapacity,
                  "API keys are unavailable (the shoal_keys bucket cannot be read or watched); "
                  "requests are refused until they are");
  }
  return index;
}

Result<std::shared_ptr<const ApiKey>> KeyRing::Named(std::string_view name) const {
  auto index = CurrentIndex();
  if (!index.ok()) return index.status();
  const auto it = (*index)->by_name.find(name);
  if (it == (*index)->by_name.end()) return Status(Code::kUnauthenticated, "key '" + std::string(name) + "' was revoked");
  return it->second;
}

Result<std::shared_ptr<const ApiKey>> KeyRing::Find(std::string_view secret) const {
  auto found = CurrentIndex();
  if (!found.ok()) return found.status();
  const std::shared_ptr<const Index>& index = *found;
  const KeyDigest digest = Sha256(secret);
  auto [begin, end] = index->by_prefix.equal_range(Prefix(digest));
  for (auto it = begin; it != end; ++it) {
    if (SameDigest(it->second->digest, digest)) return it->second;
  }
  return Status(Code::kUnauthenticated, "unknown API key");
}

}  // namespace shoal::queue
