// S3rver: the s3rver npm server (an S3 implementation in Node) on a free
// loopback port with one bucket, for the S3 payload store's tests. It
// checks SigV4 signatures against its fixed credentials, S3RVER / S3RVER.
#pragma once

#include <memory>
#include <string>

#include "common/subprocess.h"

namespace shoal::testing {

class S3rver {
 public:
  static constexpr char kAccessKey[] = "S3RVER";
  static constexpr char kSecretKey[] = "S3RVER";

  // Whether node_modules has s3rver (`make test` installs it).
  static bool Available();

  // Starts it with its data in `dir` and `bucket` created; fails the test
  // on error. Sets AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY for this process.
  S3rver(const std::string& dir, const std::string& bucket);

  bool ok() const { return port_ > 0; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // s3://<bucket>/<prefix>?endpoint=... for --payload-store.
  std::string StoreUrl(const std::string& prefix) const;

 private:
  std::string bucket_;
  int port_ = 0;
  std::unique_ptr<Subprocess> process_;
};

}  // namespace shoal::testing
