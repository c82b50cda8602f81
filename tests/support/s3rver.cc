#include "support/s3rver.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

namespace shoal::testing {

bool S3rver::Available() { return std::filesystem::exists(SHOAL_S3RVER); }

S3rver::S3rver(const std::string& dir, const std::string& bucket) : bucket_(bucket) {
  auto port = FreeLoopbackPort();
  if (!port.ok()) {
    ADD_FAILURE() << port.status().ToString();
    return;
  }
  std::filesystem::create_directories(dir);
  auto p = Subprocess::Spawn({"node", SHOAL_S3RVER, "-d", dir, "-a", "127.0.0.1", "-p", std::to_string(*port),
                              "--silent", "--configure-bucket", bucket},
                             dir + "/s3rver.log");
  if (!p.ok()) {
    ADD_FAILURE() << p.status().ToString();
    return;
  }
  process_ = std::make_unique<Subprocess>(std::move(p).value());
  for (int i = 0; i < 200 && !PortAcceptsConnections(*port); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!PortAcceptsConnections(*port)) {
    ADD_FAILURE() << "s3rver did not start; see " << dir << "/s3rver.log";
    return;
  }
  port_ = *port;
  ::setenv("AWS_ACCESS_KEY_ID", kAccessKey, 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", kSecretKey, 1);
}

std::string S3rver::StoreUrl(const std::string& prefix) const {
  return "s3://" + bucket_ + "/" + prefix + "?endpoint=" + endpoint();
}

}  // namespace shoal::testing
