#include "gateway/auth.h"

#include <cctype>

namespace shoal::gateway {
namespace {

// The token of an `Authorization: Bearer <token>` header; empty when the
// header is absent, empty, or of another scheme. The scheme is
// case-insensitive (RFC 9110 §11.1).
std::string_view Bearer(std::string_view header) {
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() < kScheme.size()) return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return {};
  }
  header.remove_prefix(kScheme.size());
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  while (!header.empty() && header.back() == ' ') header.remove_suffix(1);
  return header;
}

}  // namespace

std::optional<AuthMode> ParseAuthMode(std::string_view name) {
  if (name == "none") return AuthMode::kNone;
  if (name == "keys") return AuthMode::kKeys;
  return std::nullopt;
}

Authenticator::Authenticator(AuthMode mode, std::string_view admin_token, const queue::KeyRing* keys)
    : mode_(mode),
      has_admin_token_(!admin_token.empty()),
      admin_token_digest_(queue::Sha256(admin_token)),
      keys_(keys) {}

bool Authenticator::IsAdminToken(std::string_view bearer) const {
  return has_admin_token_ && queue::SameDigest(queue::Sha256(bearer), admin_token_digest_);
}

Result<Caller> Authenticator::Authenticate(const http::Request& req) const {
  if (mode_ == AuthMode::kNone) return Caller{};
  const std::string_view bearer = Bearer(req.authorization);
  if (bearer.empty()) {
    return Status(Code::kUnauthenticated, "this gateway needs an API key: 'Authorization: Bearer <key>'");
  }
  if (IsAdminToken(bearer)) return Caller{};
  auto key = keys_->Find(bearer);
  if (!key.ok()) return key.status();
  return Caller{std::move(key).value()};
}

Status Authenticator::AuthorizeAdmin(const http::Request& req, std::string* who) const {
  std::string ignored;
  if (!who) who = &ignored;
  const std::string_view bearer = Bearer(req.authorization);
  *who = "admin-token";
  if (mode_ == AuthMode::kNone) {
    if (!has_admin_token_) {
      *who = "local";
      if (req.from_loopback) return Status::Ok();
      return Status(Code::kForbidden,
                    "the admin API answers only local clients unless the gateway has an admin token "
                    "(--admin-token or SHOAL_ADMIN_TOKEN) or API keys (--auth keys)");
    }
    if (bearer.empty()) {
      return Status(Code::kUnauthenticated, "admin routes need 'Authorization: Bearer <admin token>'");
    }
    return IsAdminToken(bearer) ? Status::Ok() : Status(Code::kForbidden, "not the admin token");
  }
  if (bearer.empty()) {
    return Status(Code::kUnauthenticated, "admin routes need 'Authorization: Bearer <admin key>'");
  }
  if (IsAdminToken(bearer)) return Status::Ok();
  auto key = keys_->Find(bearer);
  if (!key.ok()) return key.status();
  if (!(*key)->admin) return Status(Code::kForbidden, "key '" + (*key)->name + "' has no admin scope");
  *who = "key:" + (*key)->name;
  return Status::Ok();
}

}  // namespace shoal::gateway
