// Who may call what, decided at the gateway's edge before a request is read
// any further.
//
// Two modes (`shoal gateway --auth`, or SHOAL_AUTH):
//   none  (the default) as before API keys: the data routes are open; the
//         admin routes (/v1/admin/..., /v1/cluster) take the admin token's
//         bearer, or, when the gateway has no admin token, local (loopback)
//         clients only.
//   keys  every route but the probes (/healthz, /readyz) needs
//         `Authorization: Bearer <secret>`: an API key of the shoal_keys
//         bucket (queue/keys.h), or the admin token, which acts as an admin
//         key for every model, without limits.
//
//   no bearer, or a secret no key has             401 UNAUTHENTICATED
//   an admin route with a key without admin scope 403 FORBIDDEN
//   a model outside the key's scope               403 FORBIDDEN (Caller::MayUse,
//                                                 checked by the router)
//   the keys cannot be read or watched            503 NO_CAPACITY: fail closed,
//                                                 never open (KeyRing::Find)
//
// Secrets are compared as SHA-256 digests in constant time, and never logged.
//
// Threading: an Authenticator is immutable after construction; any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "http/http.h"
#include "queue/keys.h"

namespace shoal::gateway {

enum class AuthMode {
  kNone,  // "none"
  kKeys,  // "keys"
};

std::optional<AuthMode> ParseAuthMode(std::string_view name);

// Who sent a request to a data route.
struct Caller {
  // The key it presented; null when none is needed (auth none) or for the
  // admin token: then every model, and no limits.
  std::shared_ptr<const queue::ApiKey> key;

  bool MayUse(std::string_view model_id) const { return !key || key->MayUse(model_id); }
  // Who owns what it creates (files, batch jobs): its key's name; "" for
  // no key.
  std::string Owner() const { return key ? key->name : ""; }
  // Whether it sees what every key created: an admin key, the admin
  // token, or anyone when keys are off.
  bool SeesAll() const { return !key || key->admin; }
};

class Authenticator {
 public:
  // `keys` is required in kKeys mode (not owned; it outlives this).
  Authenticator(AuthMode mode, std::string_view admin_token, const queue::KeyRing* keys);

  AuthMode mode() const { return mode_; }

  // For the data routes: who is calling, or why they may not.
  Result<Caller> Authenticate(const http::Request& req) const;
  // For the admin routes; `who` (may be null) gets the caller's name for
  // the records it makes: "key:<name>", "admin-token" or "local".
  Status AuthorizeAdmin(const http::Request& req, std::string* who = nullptr) const;

 private:
  bool IsAdminToken(std::string_view bearer) const;

  const AuthMode mode_;
  const bool has_admin_token_;
  const queue::KeyDigest admin_token_digest_;  // compared as digests: constant time in any length
  const queue::KeyRing* const keys_;
};

}  // namespace shoal::gateway
