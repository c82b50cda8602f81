// Large payloads: items too large for a NATS message wait in the payload
// store — a local directory, or S3 (the s3rver npm server, which checks
// SigV4 signatures) — and are deleted when their request ends, however it
// ends; results too large for a message come back in parts. Real gateway,
// nats-server (1 MB max payload, its default) and worker.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "queue/s3_payload_store.h"
#include "runtime/identity/identity_runtime.h"
#include "support/http_client.h"
#include "support/s3rver.h"
#include "support/test_cluster.h"

namespace shoal::testing {
namespace {

using nlohmann::json;

// `words` words of `word_bytes` bytes each, separated by spaces.
std::string Words(size_t words, size_t word_bytes) {
  std::string text;
  text.reserve(words * (word_bytes + 1));
  for (size_t i = 0; i < words; ++i) {
    if (i) text += ' ';
    std::string w = "w" + std::to_string(i);
    w.resize(std::max(word_bytes, w.size()), 'x');
    text += w;
  }
  return text;
}

size_t FilesIn(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) n += e.is_regular_file();
  return n;
}

// Objects s3rver holds under `dir`, however deep their keys.
size_t ObjectsIn(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    n += e.is_regular_file() && e.path().filename().string().ends_with("._S3rver_object");
  }
  return n;
}

// Waits (deletes run off the gateway's loops) until `count()` is 0.
template <class Fn>
size_t WaitForZero(Fn count) {
  size_t n = count();
  for (int i = 0; i < 200 && n > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    n = count();
  }
  return n;
}

// An encode request with a 3 MB item and a small one: the large one goes
// through the store and both embeddings are right.
void ExpectLargeEncodeWorks(int port) {
  const std::string large = Words(3, 1 << 20);  // three 1 MB words
  const json body = {{"items", {{{"text", large}}, {{"text", "small one"}}}}};
  HttpClient http(port);
  auto res = http.PostJson("/v1/encode/test/embed", body.dump(), {{"Accept", "application/json"}});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(res->status, 200) << res->body.substr(0, 300);
  const json j = json::parse(res->body);
  EXPECT_EQ(j["items"][0]["dense"].get<std::vector<float>>(), IdentityVector(IdentityTokens(large), 8, true));
  EXPECT_EQ(j["items"][1]["dense"].get<std::vector<float>>(), IdentityVector(IdentityTokens("small one"), 8, true));
}

TEST(Payloads, LargeItemsWaitInTheLocalStoreAndAreDeletedAfterwards) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/embed", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  ExpectLargeEncodeWorks(gateway->port());
  EXPECT_EQ(WaitForZero([&] { return FilesIn(cluster.payload_dir()); }), 0u)
      << "the request's payload was not deleted";
  EXPECT_EQ(cluster.WaitForEmptyStream(), 0u);
}

TEST(Payloads, LargeItemsWaitInS3AndAreDeletedAfterwards) {
  if (!S3rver::Available()) GTEST_SKIP() << "node_modules/s3rver is missing (run scripts/setup)";
  TestCluster cluster;
  S3rver s3(cluster.dir() + "/s3", "shoal-payloads");
  ASSERT_TRUE(s3.ok());
  cluster.Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
  worker::WorkerOptions wo;
  wo.payload_store = s3.StoreUrl("queued");
  auto worker = cluster.StartWorkerWith(wo);
  cluster.WaitForWorkers("test/embed", 1);
  gateway::GatewayOptions go;
  go.payload_store = s3.StoreUrl("queued");
  go.offload_bytes = 100 * 1000;  // the 200 kB items below go to the store too
  auto gateway = cluster.StartGateway(go);
  ASSERT_TRUE(gateway);
  ExpectLargeEncodeWorks(gateway->port());

  // Several at once, of 200 kB (fits a message, over --offload-bytes).
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      HttpClient http(gateway->port());
      const std::string text = Words(10, 20000) + " client" + std::to_string(c);
      const json body = {{"model", "test/embed"}, {"input", {text, text + " again"}}};
      auto res = http.PostJson("/v1/embeddings", body.dump());
      if (!res.ok() || res->status != 200) {
        ADD_FAILURE() << (res.ok() ? res->body.substr(0, 300) : res.status().ToString());
        return;
      }
      const json j = json::parse(res->body);
      ok += j["data"][1]["embedding"].get<std::vector<float>>() ==
            IdentityVector(IdentityTokens(text + " again"), 8, true);
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 4);

  // Nothing left in the bucket. Counted on s3rver's disk (one
  // `<key>._S3rver_object` file per object), not by a sweep: a sweep would
  // delete what it found and pass the second time, and s3rver's listing can
  // fail while an object is being deleted under it.
  EXPECT_EQ(WaitForZero([&] { return ObjectsIn(cluster.dir() + "/s3/shoal-payloads"); }), 0u)
      << "payloads were left in the bucket";
}

// The S3 store's operations against s3rver. (s3rver checks the access key
// but not SigV4 signatures; the signer is checked against the AWS
// documentation's examples in unit/payload_store_test.cc.)
TEST(Payloads, TheS3StoreAgainstS3rver) {
  if (!S3rver::Available()) GTEST_SKIP() << "node_modules/s3rver is missing (run scripts/setup)";
  char tmpl[] = "/tmp/shoal-s3-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  S3rver s3(dir, "bucket");
  ASSERT_TRUE(s3.ok());
  queue::S3PayloadStore store({s3.endpoint(), "bucket", "p/"}, {S3rver::kAccessKey, S3rver::kSecretKey});
  const std::string big(3 << 20, 'b');
  ASSERT_TRUE(store.Put("r-1.0", big).ok());
  ASSERT_TRUE(store.Put("r-1.1", "small").ok());
  EXPECT_EQ(ObjectsIn(dir + "/bucket"), 2u);  // the count the test above relies on
  std::string got;
  ASSERT_TRUE(store.Get("r-1.0", &got).ok());
  EXPECT_EQ(got, big);
  EXPECT_EQ(store.Get("r-2.0", &got).code(), Code::kNotFound);
  EXPECT_TRUE(store.Delete("r-1.0").ok());
  EXPECT_TRUE(store.Delete("r-1.0").ok());
  EXPECT_EQ(store.Get("r-1.0", &got).code(), Code::kNotFound);
  size_t deleted = 0;
  ASSERT_TRUE(store.DeleteOlderThan(std::chrono::hours(1), &deleted).ok());
  EXPECT_EQ(deleted, 0u) << "r-1.1 is new";
  ASSERT_TRUE(store.DeleteOlderThan(std::chrono::seconds(-60), &deleted).ok());
  EXPECT_EQ(deleted, 1u);

  // A refusal is an error with the server's reason, not silence.
  queue::S3PayloadStore wrong({s3.endpoint(), "bucket", "p/"}, {"NOT-A-KEY", S3rver::kSecretKey});
  const Status refused = wrong.Put("r-3.0", "x");
  EXPECT_EQ(refused.code(), Code::kInternal);
  EXPECT_NE(refused.message().find("InvalidAccessKeyId"), std::string::npos) << refused.ToString();
  queue::S3PayloadStore no_bucket({s3.endpoint(), "no-such-bucket", ""}, {S3rver::kAccessKey, S3rver::kSecretKey});
  const Status missing = no_bucket.Put("r-3.0", "x");
  EXPECT_NE(missing.message().find("NoSuchBucket"), std::string::npos) << missing.ToString();
  std::filesystem::remove_all(dir);
}

TEST(Payloads, ResultsLargerThanAMessageComeBackInParts) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/embed", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  // 150,000 words (1.2 MB, offloaded): their tokens are about 8 MB of
  // MessagePack, so about 8 parts.
  const std::string text = Words(150000, 7);
  HttpClient http(gateway->port());
  auto res = http.PostJson("/v1/tokenize/test/embed", json{{"inputs", text}}.dump());
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(res->status, 200) << res->body.substr(0, 300);
  const json j = json::parse(res->body);
  ASSERT_EQ(j.size(), 1u);
  const auto words = IdentityTokens(text);
  ASSERT_EQ(j[0].size(), words.size());
  for (size_t i : {size_t{0}, size_t{77777}, words.size() - 1}) {
    EXPECT_EQ(j[0][i]["text"], std::string(words[i])) << i;
    EXPECT_EQ(j[0][i]["start"].get<size_t>(), static_cast<size_t>(words[i].data() - text.data())) << i;
  }
  EXPECT_EQ(WaitForZero([&] { return FilesIn(cluster.payload_dir()); }), 0u);
}

TEST(Payloads, ARequestThatTimesOutHasItsPayloadDeletedAndItsItemDropped) {
  TestCluster cluster;
  // One item at a time, 1 s each: the large request waits behind a small one.
  cluster.Register(IdentityProfile("test/slow",
                                   "identity: {dim: 8, us_per_batch: 1000000}\n"
                                   "batching: {max_batch_requests: 1}\n"
                                   "queue: {ack_wait_ms: 5000, max_deliver: 5}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("test/slow", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  std::thread first([&] {
    HttpClient http(gateway->port());
    auto res = http.PostJson("/v1/encode/test/slow", R"({"items":[{"text":"first"}]})");
    EXPECT_TRUE(res.ok() && res->status == 200);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  HttpClient http(gateway->port());
  const json body = {{"items", {{{"text", Words(2, 1 << 20)}}}}};
  auto res = http.PostJson("/v1/encode/test/slow", body.dump(), {{"X-Shoal-Timeout-Ms", "400"}});
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->status, 504) << res->body;
  // Deleted when the request ended, long before the worker gets to it...
  EXPECT_EQ(WaitForZero([&] { return FilesIn(cluster.payload_dir()); }), 0u);
  first.join();
  // ...which then finds it gone (or expired) and drops it, acked.
  EXPECT_EQ(cluster.WaitForEmptyStream(), 0u);
}

TEST(Payloads, AStartingGatewaySweepsWhatADeadOneLeftBehind) {
  TestCluster cluster;
  std::filesystem::create_directories(cluster.payload_dir());
  // A payload of a gateway that died an hour ago, and one of a request in flight.
  const std::string orphan = cluster.payload_dir() + "/gwdead-0-1.0";
  const std::string live = cluster.payload_dir() + "/gwlive-0-1.0";
  for (const std::string& path : {orphan, live}) std::ofstream(path) << "x";
  std::filesystem::last_write_time(orphan, std::filesystem::file_time_type::clock::now() - std::chrono::hours(1));
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  EXPECT_EQ(WaitForZero([&] { return size_t{std::filesystem::exists(orphan)}; }), 0u);
  EXPECT_TRUE(std::filesystem::exists(live));
}

}  // namespace
}  // namespace shoal::testing
