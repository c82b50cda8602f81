// The payload store's parts that need no server: SigV4 against the worked
// example of the AWS documentation, key rules, store URLs, and the local
// directory store. The S3 store against a real S3 server (s3rver) is in
// integration/payload_test.cc.
#include <gtest/gtest.h>
#include <sys/time.h>

#include <cstdlib>
#include <filesystem>

#include "common/sha256.h"
#include "queue/local_payload_store.h"
#include "queue/payload_store.h"
#include "queue/sigv4.h"

namespace shoal::queue {
namespace {

// docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html,
// "Example: GET Object".
TEST(SigV4, MatchesTheAwsGetObjectExample) {
  const std::string empty_hash = Sha256Hex("");
  EXPECT_EQ(empty_hash, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  SigV4Request r{.method = "GET",
                 .host = "examplebucket.s3.amazonaws.com",
                 .canonical_uri = "/test.txt",
                 .canonical_query = "",
                 .extra_headers = {{"range", "bytes=0-9"}},
                 .payload_sha256 = empty_hash,
                 .amz_date = "20130524T000000Z"};
  SigV4Credentials c{.access_key = "AKIAIOSFODNN7EXAMPLE",
                     .secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                     .region = "us-east-1"};
  EXPECT_EQ(SigV4Authorization(r, c),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

// The same page, "Example: PUT Object": a body, an encoded path and more
// signed headers.
TEST(SigV4, MatchesTheAwsPutObjectExample) {
  const std::string body_hash = Sha256Hex("Welcome to Amazon S3.");
  EXPECT_EQ(body_hash, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
  const std::string uri = UriEncode("/test$file.text", true);
  EXPECT_EQ(uri, "/test%24file.text");
  SigV4Request r{.method = "PUT",
                 .host = "examplebucket.s3.amazonaws.com",
                 .canonical_uri = uri,
                 .canonical_query = "",
                 .extra_headers = {{"date", "Fri, 24 May 2013 00:00:00 GMT"},
                                   {"x-amz-storage-class", "REDUCED_REDUNDANCY"}},
                 .payload_sha256 = body_hash,
                 .amz_date = "20130524T000000Z"};
  SigV4Credentials c{.access_key = "AKIAIOSFODNN7EXAMPLE",
                     .secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};
  EXPECT_NE(SigV4Authorization(r, c).find("Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"),
            std::string::npos)
      << SigV4Authorization(r, c);
}

// "Example: GET Bucket (List Objects)": a query string.
TEST(SigV4, MatchesTheAwsListObjectsExample) {
  const std::string empty_hash = Sha256Hex("");  // the request holds views
  SigV4Request r{.method = "GET",
                 .host = "examplebucket.s3.amazonaws.com",
                 .canonical_uri = "/",
                 .canonical_query = "max-keys=2&prefix=J",
                 .payload_sha256 = empty_hash,
                 .amz_date = "20130524T000000Z"};
  SigV4Credentials c{.access_key = "AKIAIOSFODNN7EXAMPLE",
                     .secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};
  EXPECT_NE(SigV4Authorization(r, c).find("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"),
            std::string::npos)
      << SigV4Authorization(r, c);
}

TEST(SigV4, UriEncodingKeepsUnreservedCharacters) {
  EXPECT_EQ(UriEncode("a-b_c.d~e/f g+h", true), "a-b_c.d~e/f%20g%2Bh");
  EXPECT_EQ(UriEncode("a/b", false), "a%2Fb");
  EXPECT_EQ(AmzDateNow().size(), 16u);
}

TEST(PayloadStore, KeysAreSafeFileNamesOnly) {
  EXPECT_TRUE(ValidPayloadKey("gwabc123-0-17.3"));
  EXPECT_FALSE(ValidPayloadKey(""));
  EXPECT_FALSE(ValidPayloadKey("../etc/passwd"));
  EXPECT_FALSE(ValidPayloadKey("a/b"));
  EXPECT_FALSE(ValidPayloadKey(".hidden"));
  EXPECT_FALSE(ValidPayloadKey(std::string(201, 'a')));
}

TEST(PayloadStore, UrlsAreCheckedWhenOpened) {
  EXPECT_EQ(OpenPayloadStore("relative/dir").status().code(), Code::kInvalidInput);
  EXPECT_EQ(OpenPayloadStore("s3://").status().code(), Code::kInvalidInput);
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  auto no_credentials = OpenPayloadStore("s3://bucket/prefix?endpoint=http://127.0.0.1:1");
  ASSERT_FALSE(no_credentials.ok());
  EXPECT_NE(no_credentials.status().message().find("AWS_ACCESS_KEY_ID"), std::string::npos);
  ::setenv("AWS_ACCESS_KEY_ID", "id", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
  EXPECT_EQ(OpenPayloadStore("s3://bucket?endpoint=ftp://x").status().code(), Code::kInvalidInput);
  auto s3 = OpenPayloadStore("s3://bucket/prefix?endpoint=http://127.0.0.1:1/&region=eu-west-1");
  ASSERT_TRUE(s3.ok()) << s3.status().ToString();
  EXPECT_EQ((*s3)->Describe(), "s3 http://127.0.0.1:1/bucket/prefix/");
  // Nothing listens there: a transport error, not "not found".
  std::string bytes;
  EXPECT_EQ((*s3)->Get("k", &bytes).code(), Code::kInternal);
}

class LocalStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / ("shoal-payload-test-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(dir_);
    auto store = OpenPayloadStore("dir:" + dir_ + "/nested");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  std::unique_ptr<PayloadStore> store_;
};

TEST_F(LocalStoreTest, PutGetDelete) {
  const std::string big(3 << 20, 'x');
  ASSERT_TRUE(store_->Put("req-1.0", big).ok());
  ASSERT_TRUE(store_->Put("req-1.1", "").ok());
  std::string got;
  ASSERT_TRUE(store_->Get("req-1.0", &got).ok());
  EXPECT_EQ(got, big);
  ASSERT_TRUE(store_->Get("req-1.1", &got).ok());
  EXPECT_EQ(got, "");
  EXPECT_EQ(store_->Get("req-2.0", &got).code(), Code::kNotFound);
  EXPECT_EQ(store_->Put("../x", "y").code(), Code::kInvalidInput);
  EXPECT_TRUE(store_->Delete("req-1.0").ok());
  EXPECT_TRUE(store_->Delete("req-1.0").ok()) << "deleting what is gone is not an error";
  EXPECT_EQ(store_->Get("req-1.0", &got).code(), Code::kNotFound);
}

TEST_F(LocalStoreTest, TheSweepDeletesOnlyOldPayloads) {
  ASSERT_TRUE(store_->Put("old.0", "a").ok());
  ASSERT_TRUE(store_->Put("new.0", "b").ok());
  // An hour old, as a payload a dead gateway left behind.
  const std::string old_path = dir_ + "/nested/old.0";
  struct timeval times[2];
  ::gettimeofday(&times[0], nullptr);
  times[0].tv_sec -= 3600;
  times[1] = times[0];
  ASSERT_EQ(::utimes(old_path.c_str(), times), 0);
  size_t deleted = 0;
  ASSERT_TRUE(store_->DeleteOlderThan(std::chrono::minutes(15), &deleted).ok());
  EXPECT_EQ(deleted, 1u);
  std::string got;
  EXPECT_EQ(store_->Get("old.0", &got).code(), Code::kNotFound);
  EXPECT_TRUE(store_->Get("new.0", &got).ok());
}

}  // namespace
}  // namespace shoal::queue
