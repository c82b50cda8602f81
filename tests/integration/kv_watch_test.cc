// queue::KvWatch against a real nats-server: a watch whose consumer is gone
// from the server (what a partition can leave behind: cnats' ordered
// consumer, lost with its server, is not always made again) hears nothing
// more; with `max_silence` it is started again and its replay brings what
// it missed.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>

#include "queue/kv_watch.h"
#include "queue/nats.h"
#include "support/test_cluster.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

class KvWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    queue::ConnectOptions co;
    co.url = cluster_.nats_url();
    co.name = "kv-watch-test";
    auto nc = queue::Connect(co);
    ASSERT_TRUE(nc.ok()) << nc.status().ToString();
    nc_ = std::move(nc).value();
    jsCtx* js = nullptr;
    ASSERT_EQ(natsConnection_JetStream(&js, nc_.get(), nullptr), NATS_OK);
    js_.reset(js);
    kvConfig cfg;
    kvConfig_Init(&cfg);
    cfg.Bucket = "watch_test";
    kvStore* kv = nullptr;
    ASSERT_EQ(js_CreateKeyValue(&kv, js_.get(), &cfg), NATS_OK);
    kv_.reset(kv);
  }

  void Put(const char* key, const char* value) {
    uint64_t rev = 0;
    ASSERT_EQ(kvStore_PutString(&rev, kv_.get(), key, value), NATS_OK);
  }

  // Deletes every consumer of the bucket's stream: the watch's among them.
  void DeleteWatchConsumers() {
    jsConsumerNamesList* names = nullptr;
    ASSERT_EQ(js_ConsumerNames(&names, js_.get(), "KV_watch_test", nullptr, nullptr), NATS_OK);
    ASSERT_GT(names->Count, 0);
    for (int i = 0; i < names->Count; ++i) {
      EXPECT_EQ(js_DeleteConsumer(js_.get(), "KV_watch_test", names->List[i], nullptr, nullptr), NATS_OK);
    }
    jsConsumerNamesList_Destroy(names);
  }

  std::unique_ptr<queue::KvWatch> Watch(std::chrono::milliseconds max_silence) {
    auto w = queue::KvWatch::Start(
        kv_.get(),
        [this](const queue::KvChange& c) {
          std::lock_guard lock(mu_);
          seen_[c.key] = c.value;
        },
        nullptr, max_silence);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? std::move(w).value() : nullptr;
  }

  std::string Seen(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = seen_.find(key);
    return it == seen_.end() ? "" : it->second;
  }

  TestCluster cluster_;
  queue::ConnectionPtr nc_;
  queue::JsCtxPtr js_;
  queue::KvStorePtr kv_;
  std::mutex mu_;
  std::map<std::string, std::string> seen_;  // guarded by mu_
};

TEST_F(KvWatchTest, AWatchWhoseConsumerIsGoneIsStartedAgainAfterASilence) {
  Put("a", "1");
  auto watch = Watch(std::chrono::milliseconds(300));
  ASSERT_TRUE(watch);
  ASSERT_TRUE(WaitFor([&] { return Seen("a") == "1"; }));
  DeleteWatchConsumers();
  Put("b", "2");
  ASSERT_TRUE(WaitFor([&] { return Seen("b") == "2"; }, std::chrono::seconds(10)))
      << "the watch did not hear of b (restarts: " << watch->restarts() << ")";
  EXPECT_GE(watch->restarts(), 1u);
  EXPECT_FALSE(watch->ended());
}

}  // namespace
}  // namespace shoal::testing
