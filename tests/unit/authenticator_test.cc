// The authenticator's decisions that need no key bucket: auth none as
// before keys, the admin token, bearers missing or malformed. (Keys
// themselves: tests/integration/auth_test.cc, against a real bucket.)
#include "gateway/auth.h"

#include <gtest/gtest.h>

namespace shoal::gateway {
namespace {

http::Request Request(std::string authorization, bool loopback = false) {
  http::Request r;
  r.authorization = std::move(authorization);
  r.from_loopback = loopback;
  return r;
}

TEST(Authenticator, ModesParseByName) {
  EXPECT_EQ(ParseAuthMode("none"), AuthMode::kNone);
  EXPECT_EQ(ParseAuthMode("keys"), AuthMode::kKeys);
  EXPECT_FALSE(ParseAuthMode("Keys"));
  EXPECT_FALSE(ParseAuthMode(""));
}

TEST(Authenticator, WithAuthNoneDataRoutesAreOpenAndAdminIsAsBefore) {
  const Authenticator local(AuthMode::kNone, "", nullptr);
  auto caller = local.Authenticate(Request(""));
  ASSERT_TRUE(caller.ok());
  EXPECT_TRUE(caller->MayUse("any/model"));
  EXPECT_TRUE(local.AuthorizeAdmin(Request("", /*loopback=*/true)).ok());
  EXPECT_EQ(local.AuthorizeAdmin(Request("")).code(), Code::kForbidden);

  const Authenticator token(AuthMode::kNone, "s3cret", nullptr);
  EXPECT_EQ(token.AuthorizeAdmin(Request("", true)).code(), Code::kUnauthenticated) << "the token, not loopback";
  EXPECT_EQ(token.AuthorizeAdmin(Request("Bearer ")).code(), Code::kUnauthenticated);
  EXPECT_EQ(token.AuthorizeAdmin(Request("Bearer s3creT")).code(), Code::kForbidden);
  EXPECT_EQ(token.AuthorizeAdmin(Request("Bearer s3cret-and-more")).code(), Code::kForbidden);
  EXPECT_EQ(token.AuthorizeAdmin(Request("Basic s3cret")).code(), Code::kUnauthenticated);
  EXPECT_TRUE(token.AuthorizeAdmin(Request("Bearer s3cret")).ok());
  EXPECT_TRUE(token.AuthorizeAdmin(Request("bearer  s3cret ")).ok()) << "the scheme is case-insensitive";
}

TEST(Authenticator, WithAuthKeysABearerIsRequiredAndTheAdminTokenIsAnAdminKey) {
  // No ring is needed for these: they are decided before any lookup.
  const Authenticator auth(AuthMode::kKeys, "s3cret", nullptr);
  EXPECT_EQ(auth.Authenticate(Request("")).status().code(), Code::kUnauthenticated);
  EXPECT_EQ(auth.Authenticate(Request("Bearer")).status().code(), Code::kUnauthenticated);
  EXPECT_EQ(auth.Authenticate(Request("Basic abc")).status().code(), Code::kUnauthenticated);
  EXPECT_EQ(auth.AuthorizeAdmin(Request("", /*loopback=*/true)).code(), Code::kUnauthenticated)
      << "no loopback exemption with keys";
  auto admin = auth.Authenticate(Request("Bearer s3cret"));
  ASSERT_TRUE(admin.ok());
  EXPECT_TRUE(admin->MayUse("any/model"));
  EXPECT_EQ(admin->key, nullptr) << "no limits";
  EXPECT_TRUE(auth.AuthorizeAdmin(Request("Bearer s3cret")).ok());
}

}  // namespace
}  // namespace shoal::gateway
