#include "common/status.h"

#include <gtest/gtest.h>

#include "http/errors.h"

namespace shoal {
namespace {

TEST(Status, CodesRoundTripThroughTheirNames) {
  for (int c = 0; c <= static_cast<int>(Code::kDeadlineExceeded); ++c) {
    const Code code = static_cast<Code>(c);
    EXPECT_EQ(CodeFromName(CodeName(code)), code) << CodeName(code);
  }
  EXPECT_EQ(CodeFromName("SOMETHING_NEW"), Code::kInternal);
}

TEST(Status, HttpStatusesFollowTheDocumentedContract) {
  EXPECT_EQ(http::HttpStatus(Code::kInvalidInput), 400);
  EXPECT_EQ(http::HttpStatus(Code::kUnauthenticated), 401);
  EXPECT_EQ(http::HttpStatus(Code::kForbidden), 403);
  EXPECT_EQ(http::HttpStatus(Code::kModelNotFound), 404);
  EXPECT_EQ(http::HttpStatus(Code::kPayloadTooLarge), 413);
  EXPECT_EQ(http::HttpStatus(Code::kRateLimited), 429);
  EXPECT_EQ(http::HttpStatus(Code::kInferenceError), 500);
  EXPECT_EQ(http::HttpStatus(Code::kModelLoadFailed), 502);
  EXPECT_EQ(http::HttpStatus(Code::kOverloaded), 503);
  EXPECT_EQ(http::HttpStatus(Code::kNoCapacity), 503);
  EXPECT_EQ(http::HttpStatus(Code::kDeadlineExceeded), 504);
  EXPECT_TRUE(http::WantsRetryAfter(Code::kNoCapacity));
  EXPECT_TRUE(http::WantsRetryAfter(Code::kOverloaded));
  EXPECT_FALSE(http::WantsRetryAfter(Code::kInvalidInput));
}

TEST(Status, ErrorBodyIsTheDocumentedShape) {
  EXPECT_EQ(http::ErrorBody(InvalidInput("items[0].text: \"bad\""), "gw-1"),
            R"({"error":{"code":"INVALID_INPUT","message":"items[0].text: \"bad\"","request_id":"gw-1"}})");
}

TEST(Result, HoldsAValueOrAnError) {
  Result<int> ok = 3;
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);
  Result<int> bad = InvalidInput("nope");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidInput);
}

}  // namespace
}  // namespace shoal
