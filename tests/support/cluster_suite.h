// ClusterSuite: a test suite's cluster — nats-server, one worker, one
// gateway, started once for the suite — and the calls its tests make on
// it: the gateway's routes, and copies of generated models to register.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "support/http_client.h"
#include "support/test_cluster.h"
#include "support/test_models.h"

namespace shoal::testing {

class ClusterSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new TestCluster();
    worker_ = cluster_->StartWorker().release();
    gateway_ = cluster_->StartGateway().release();
  }
  static void TearDownTestSuite() {
    delete gateway_;
    delete worker_;
    delete cluster_;
    gateway_ = nullptr;
    worker_ = nullptr;
    cluster_ = nullptr;
  }

  // A copy of a generated model, to break, change or rename.
  static std::string CopyModel(const std::string& name, const std::string& as) {
    namespace fs = std::filesystem;
    const fs::path to = fs::path(cluster_->dir()) / as;
    fs::remove_all(to);
    fs::copy(fs::path(kModels) / name, to, fs::copy_options::recursive);
    return to.string();
  }

  // A request to the suite's gateway (or the one on `port`); a body is JSON.
  static HttpResult Call(const std::string& method, const std::string& path,
                         const std::string& body = "",
                         std::map<std::string, std::string> headers = {}, int port = 0) {
    HttpClient http(port ? port : gateway_->port());
    if (!body.empty()) headers.emplace("Content-Type", "application/json");
    auto res = http.Request(method, path, body, headers);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    return res.ok() ? *res : HttpResult{};
  }

  static inline TestCluster* cluster_ = nullptr;
  static inline worker::Worker* worker_ = nullptr;
  static inline gateway::Gateway* gateway_ = nullptr;
};

}  // namespace shoal::testing
