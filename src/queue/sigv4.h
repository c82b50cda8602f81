// AWS Signature Version 4 for S3 requests (header-based, single chunk): the
// canonical request, the string to sign and the signing key of
// docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html.
// Pure functions of their inputs (the date is one of them), so the
// documentation's worked examples are unit tests.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shoal::queue {

struct SigV4Credentials {
  std::string access_key;
  std::string secret_key;
  std::string region = "us-east-1";
  std::string service = "s3";
};

struct SigV4Request {
  std::string_view method{};           // "GET", "PUT", ...
  std::string_view host{};             // the Host header: "bucket.s3.amazonaws.com", "127.0.0.1:4568"
  std::string_view canonical_uri{};    // the path, URI-encoded (UriEncode with keep_slash)
  std::string_view canonical_query{};  // "k=v&k2=v2", encoded, sorted by key; "" when none
  // Headers besides host, x-amz-content-sha256 and x-amz-date to sign
  // (lower-case names, trimmed values), e.g. {"range", "bytes=0-9"}.
  std::vector<std::pair<std::string, std::string>> extra_headers{};
  std::string_view payload_sha256{};   // hex SHA-256 of the body
  std::string_view amz_date{};         // "20130524T000000Z" (UTC)
};

// The Authorization header's value.
std::string SigV4Authorization(const SigV4Request& request, const SigV4Credentials& credentials);

// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters stay,
// '/' stays when `keep_slash` (paths), everything else becomes %XX.
std::string UriEncode(std::string_view s, bool keep_slash);

// "YYYYMMDDTHHMMSSZ" for the current UTC time.
std::string AmzDateNow();

}  // namespace shoal::queue
