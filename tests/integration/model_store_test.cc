// The model store (store/, queue/object_store.h) against a real nats-server:
// objects laid out as NATS ADR-20 says (read back with raw JetStream calls,
// not the client under test), reads and fetches that resume, pushes that
// send only what the store lacks, the worker's cache checking, re-fetching
// and evicting, and a pushed model served by a worker from its cache alone.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "admin/catalog_admin.h"
#include "admin/model_directory.h"
#include "common/base64.h"
#include "store/model_cache.h"
#include "store/model_store.h"
#include "support/files.h"
#include "support/gateway_calls.h"
#include "support/test_cluster.h"
#include "support/test_models.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// ADR-20's digest, computed here with OpenSSL directly.
std::string Adr20Digest(const std::string& bytes) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), d, &n, EVP_sha256(), nullptr);
  return "SHA-256=" + EncodeBase64Url(std::string(reinterpret_cast<char*>(d), n));
}

uint64_t StreamMessageCount(jsCtx* js, const std::string& stream) {
  jsStreamInfo* si = nullptr;
  jsErrCode code{};
  EXPECT_EQ(js_GetStreamInfo(&si, js, stream.c_str(), nullptr, &code), NATS_OK);
  if (!si) return 0;
  const uint64_t n = si->State.Msgs;
  jsStreamInfo_Destroy(si);
  return n;
}

// A model directory to push: a copy of a seeded test model.
std::string CopyModel(const std::string& name, const std::string& to) {
  fs::create_directories(fs::path(to).parent_path());
  fs::copy(kModels + "/" + name, to,
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  return to;
}

class ModelStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::ModelStore::Open(cluster_.control_plane().js.get());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  jsCtx* js() { return cluster_.control_plane().js.get(); }
  std::string Scratch(const std::string& name) { return cluster_.dir() + "/scratch/" + name; }

  TestCluster cluster_;
  std::unique_ptr<store::ModelStore> store_;
};

TEST_F(ModelStoreTest, ObjectsAreLaidOutAsAdr20Says) {
  auto bucket = queue::ObjectStore::Open(js(), "adr20");
  ASSERT_TRUE(bucket.ok()) << bucket.status().ToString();
  const std::string bytes = RandomBytes(2 * 128 * 1024 + 5, 1);
  auto info = (*bucket)->PutBytes("a/b c.bin", bytes);
  ASSERT_TRUE(info.ok()) << info.status().ToString();

  // The info message, found where ADR-20 puts it, says what it should.
  natsMsg* raw = nullptr;
  jsErrCode code{};
  const std::string subject = "$O.adr20.M." + EncodeBase64Url("a/b c.bin");
  ASSERT_EQ(js_GetLastMsg(&raw, js(), "OBJ_adr20", subject.c_str(), nullptr, &code), NATS_OK)
      << subject;
  queue::MsgPtr msg(raw);
  const char* rollup = nullptr;
  ASSERT_EQ(natsMsgHeader_Get(msg.get(), "Nats-Rollup", &rollup), NATS_OK);
  EXPECT_STREQ(rollup, "sub");
  const json stored =
      json::parse(std::string(natsMsg_GetData(msg.get()), natsMsg_GetDataLength(msg.get())));
  EXPECT_EQ(stored["name"], "a/b c.bin");
  EXPECT_EQ(stored["bucket"], "adr20");
  EXPECT_EQ(stored["size"], bytes.size());
  EXPECT_EQ(stored["chunks"], 3);
  EXPECT_EQ(stored["options"]["max_chunk_size"], 128 * 1024);
  EXPECT_EQ(stored["digest"], Adr20Digest(bytes));
  EXPECT_FALSE(stored.contains("deleted"));
  // Its chunks, on the chunk subject of its nuid.
  raw = nullptr;
  const std::string chunks = "$O.adr20.C." + stored["nuid"].get<std::string>();
  ASSERT_EQ(js_GetLastMsg(&raw, js(), "OBJ_adr20", chunks.c_str(), nullptr, &code), NATS_OK);
  queue::MsgPtr last(raw);
  EXPECT_EQ(std::string(natsMsg_GetData(last.get()), natsMsg_GetDataLength(last.get())),
            bytes.substr(2 * 128 * 1024));
  EXPECT_EQ(StreamMessageCount(js(), "OBJ_adr20"), 4u);  // three chunks and the info

  auto back = (*bucket)->Get("a/b c.bin");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, bytes);

  // A new version replaces the old one whole: its chunks are purged.
  const std::string smaller = RandomBytes(1000, 2);
  ASSERT_TRUE((*bucket)->PutBytes("a/b c.bin", smaller).ok());
  EXPECT_EQ(StreamMessageCount(js(), "OBJ_adr20"), 2u);
  EXPECT_EQ((*bucket)->Get("a/b c.bin").value(), smaller);

  ASSERT_TRUE((*bucket)->Delete("a/b c.bin").ok());
  EXPECT_EQ((*bucket)->Info("a/b c.bin").status().code(), Code::kNotFound);
  EXPECT_EQ(StreamMessageCount(js(), "OBJ_adr20"), 1u);  // the deleted marker alone
  EXPECT_EQ((*bucket)->Delete("a/b c.bin").code(), Code::kNotFound);
}

TEST_F(ModelStoreTest, AReadResumesWhereItStopped) {
  auto bucket = queue::ObjectStore::Open(js(), "resume");
  ASSERT_TRUE(bucket.ok());
  const std::string bytes = RandomBytes(10 * 128 * 1024 + 77, 3);
  auto info = (*bucket)->PutBytes("big", bytes);
  ASSERT_TRUE(info.ok());
  std::string got;
  queue::ReadPosition stopped;
  Status s = (*bucket)->Read(*info, [&](std::string_view chunk, const queue::ReadPosition& after) {
    got.append(chunk);
    stopped = after;
    return after.chunks == 4 ? Status(Code::kInternal, "stop here") : Status::Ok();
  });
  ASSERT_EQ(s.message(), "stop here");
  ASSERT_EQ(stopped.chunks, 4u);
  int chunks_after = 0;
  ASSERT_TRUE((*bucket)
                  ->Read(
                      *info,
                      [&](std::string_view chunk, const queue::ReadPosition&) {
                        got.append(chunk);
                        ++chunks_after;
                        return Status::Ok();
                      },
                      stopped)
                  .ok());
  EXPECT_EQ(chunks_after, 7);  // the rest only
  EXPECT_EQ(got, bytes);
}

TEST_F(ModelStoreTest, APushSendsOnlyWhatTheStoreLacks) {
  const std::string dir = CopyModel("bert-tiny-mean", Scratch("model"));
  auto first = store_->Push(dir);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_GT(first->bytes_sent, 400'000u);
  EXPECT_EQ(first->bytes_present, 0u);
  EXPECT_EQ(first->digest, first->manifest.Digest());
  for (const auto& f : first->manifest.files)
    EXPECT_FALSE(f.path.starts_with('.')) << f.path;  // .make-test-models

  auto again = store_->Push(dir);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->digest, first->digest);
  EXPECT_EQ(again->bytes_sent, 0u);

  // One file changed: a new model, and only that file travels.
  std::ofstream(dir + "/config.json", std::ios::app) << "\n";
  auto changed = store_->Push(dir);
  ASSERT_TRUE(changed.ok());
  EXPECT_NE(changed->digest, first->digest);
  EXPECT_EQ(changed->bytes_sent, fs::file_size(dir + "/config.json"));

  auto manifest = store_->Manifest(first->digest);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->ToJson(), first->manifest.ToJson());
  EXPECT_EQ(store_->Manifest("sha256:" + std::string(64, '0')).status().code(), Code::kNotFound);
}

TEST_F(ModelStoreTest, AnInterruptedFetchResumes) {
  const std::string dir = Scratch("big");
  fs::create_directories(dir);
  const std::string bytes = RandomBytes(3 << 20, 4);
  std::ofstream(dir + "/weights.bin", std::ios::binary) << bytes;
  auto pushed = store_->Push(dir);
  ASSERT_TRUE(pushed.ok());
  const store::ManifestFile& file = pushed->manifest.files[0];
  const std::string partial = Scratch("weights.partial");

  auto cut = store_->FetchFile(file, partial, [](std::string_view, uint64_t done, uint64_t) {
    return done >= (1 << 20) ? Status(Code::kNoCapacity, "link down") : Status::Ok();
  });
  ASSERT_FALSE(cut.ok());
  EXPECT_TRUE(fs::exists(partial + ".resume"));

  auto resumed = store_->FetchFile(file, partial);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_GE(resumed->bytes_resumed, 1u << 20);
  EXPECT_EQ(resumed->bytes_resumed + resumed->bytes_fetched, bytes.size());
  EXPECT_EQ(FileText(partial), bytes);
  EXPECT_FALSE(fs::exists(partial + ".resume"));
}

TEST_F(ModelStoreTest, TheCacheChecksEveryFileRefetchesAndEvicts) {
  auto a = store_->Push(CopyModel("bert-tiny-mean", Scratch("a")));
  auto b = store_->Push(CopyModel("cross-encoder-tiny", Scratch("b")));
  ASSERT_TRUE(a.ok() && b.ok());
  const uint64_t room =
      std::max(a->manifest.bytes(), b->manifest.bytes()) * 3 / 2;  // one at a time
  auto cache =
      store::ModelCache::Open({.dir = Scratch("cache"), .budget_bytes = room}, store_.get());
  ASSERT_TRUE(cache.ok());

  {
    auto lease = (*cache)->Acquire(a->digest);
    ASSERT_TRUE(lease.ok()) << lease.status().ToString();
    EXPECT_EQ(FileText((*lease)->path() + "/model.safetensors"),
              FileText(kModels + "/bert-tiny-mean/model.safetensors"));
    EXPECT_EQ((*cache)->stats().fetches, 1u);
  }
  {
    // A flipped byte (same size) and a stray file: found, mended.
    const std::string weights = Scratch("cache") + "/models/" +
                                std::string(store::DigestHex(a->digest)) + "/model.safetensors";
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x5a' ^ FileText(weights)[1000]);
    f.close();
    std::ofstream(fs::path(weights).parent_path() / "shoal.yaml") << "runtime: identity\n";
    auto lease = (*cache)->Acquire(a->digest);
    ASSERT_TRUE(lease.ok());
    EXPECT_EQ((*cache)->stats().corrupt_files, 1u);
    EXPECT_EQ(FileText(weights), FileText(kModels + "/bert-tiny-mean/model.safetensors"));
    EXPECT_FALSE(fs::exists(fs::path(weights).parent_path() / "shoal.yaml"));
    EXPECT_EQ((*cache)->stats().hits, 0u);
  }
  {
    auto lease = (*cache)->Acquire(a->digest);
    ASSERT_TRUE(lease.ok());
    EXPECT_EQ((*cache)->stats().hits, 1u);
  }
  // b needs a's room; a is not in use, so it goes.
  auto b_lease = (*cache)->Acquire(b->digest);
  ASSERT_TRUE(b_lease.ok()) << b_lease.status().ToString();
  EXPECT_EQ((*cache)->stats().evicted, 1u);
  EXPECT_FALSE(
      fs::exists(Scratch("cache") + "/models/" + std::string(store::DigestHex(a->digest))));
  // Now b is in use: a cannot come back without the budget.
  auto refused = (*cache)->Acquire(a->digest);
  EXPECT_EQ(refused.status().code(), Code::kNoCapacity) << refused.status().ToString();
  EXPECT_LE((*cache)->UsedBytes(), room);
}

// A model pushed from a directory that is then deleted, and a LoRA adapter
// pushed the same way, served by a worker that has only its cache, answer
// exactly as the same files registered by path do.
TEST_F(ModelStoreTest, APushedModelIsServedFromTheCache) {
  const std::string dir = CopyModel("bert-tiny-mean", Scratch("pushed-from"));
  const std::string adapter = CopyModel("loras/bert-tiny-mean/a1", Scratch("adapter-from"));
  auto pushed = store_->Push(dir);
  auto pushed_adapter = store_->Push(adapter);
  ASSERT_TRUE(pushed.ok() && pushed_adapter.ok());
  admin::CatalogAdmin catalog(cluster_.control_plane().models.get(), cluster_.control_plane().versions.get(), js());
  auto spec = admin::SpecFromDirectory(dir, "pushed");
  ASSERT_TRUE(spec.ok());
  spec->artifact = pushed->digest;
  spec->pinned = true;
  ASSERT_TRUE(catalog.Register(*spec).ok());
  auto lora = catalog.AddLora(
      "pushed", LoraSpec{.name = "a1", .path = adapter, .artifact = pushed_adapter->digest});
  ASSERT_TRUE(lora.ok()) << lora.status().ToString();
  auto local = admin::SpecFromDirectory(kModels + "/bert-tiny-mean", "local");
  ASSERT_TRUE(local.ok());
  local->pinned = true;
  ASSERT_TRUE(catalog.Register(*local).ok());
  ASSERT_TRUE(
      catalog.AddLora("local", LoraSpec{.name = "a1", .path = kModels + "/loras/bert-tiny-mean/a1"})
          .ok());
  fs::remove_all(dir);
  fs::remove_all(adapter);

  worker::WorkerOptions wo;
  wo.cache_dir = Scratch("worker-cache");
  auto worker = cluster_.StartWorkerWith(wo);
  ASSERT_NE(worker, nullptr);
  auto gateway = cluster_.StartGateway();
  cluster_.WaitForWorkers("pushed", 1);
  std::vector<json> answers;
  for (const std::string suffix : {"", ":a1"}) {
    auto from_store = Call(gateway->port(), "POST", "/v1/embeddings",
                           Embed("pushed" + suffix, "the cache serves"));
    auto from_path = Call(gateway->port(), "POST", "/v1/embeddings",
                          Embed("local" + suffix, "the cache serves"));
    ASSERT_EQ(from_store.status, 200) << from_store.body;
    ASSERT_EQ(from_path.status, 200) << from_path.body;
    answers.push_back(json::parse(from_store.body)["data"]);
    EXPECT_EQ(answers.back(), json::parse(from_path.body)["data"]) << suffix;
  }
  EXPECT_NE(answers[0], answers[1]);  // the adapter is applied
  EXPECT_TRUE(fs::exists(wo.cache_dir + "/models/" + std::string(store::DigestHex(pushed->digest)) +
                         "/model.safetensors"));
  EXPECT_TRUE(fs::exists(wo.cache_dir + "/models/" +
                         std::string(store::DigestHex(pushed_adapter->digest)) +
                         "/adapter_config.json"));
}

// The admin API registers a model already in the store by its digest: the
// gateway fetches and checks it as it checks a path.
TEST_F(ModelStoreTest, TheAdminApiRegistersAModelByItsArtifact) {
  auto pushed = store_->Push(CopyModel("bert-tiny-mean", Scratch("pushed-elsewhere")));
  ASSERT_TRUE(pushed.ok());
  fs::remove_all(Scratch("pushed-elsewhere"));
  auto gateway = cluster_.StartGateway();
  const int port = gateway->port();
  auto registered =
      Call(port, "POST", "/v1/admin/models",
           json{{"artifact", pushed->digest}, {"id", "team/from-store"}, {"pinned", true}}.dump());
  ASSERT_EQ(registered.status, 201) << registered.body;
  const json spec = json::parse(registered.body);
  EXPECT_EQ(spec["artifact"], pushed->digest);
  EXPECT_EQ(spec["runtime"], "native");
  EXPECT_GT(spec["memory_bytes"].get<uint64_t>(), 0u);

  const std::string unknown = "sha256:" + std::string(64, 'e');
  for (const json& bad :
       {json{{"artifact", unknown}, {"id", "x"}}, json{{"artifact", pushed->digest}},
        json{{"artifact", "sha256:short"}, {"id", "x"}},
        json{{"artifact", pushed->digest}, {"id", "x"}, {"path", "/tmp"}}}) {
    auto refused = Call(port, "POST", "/v1/admin/models", bad.dump());
    EXPECT_EQ(refused.status, 400) << bad.dump() << ": " << refused.body;
  }

  auto worker = cluster_.StartWorker();
  cluster_.WaitForWorkers("team/from-store", 1);
  auto answer = Call(port, "POST", "/v1/embeddings", Embed("team/from-store"));
  EXPECT_EQ(answer.status, 200) << answer.body;

  // Its int8 variant: the same artifact, fetched again to be judged.
  auto variant = Call(port, "POST", "/v1/admin/models/team/from-store/quantize",
                      json{{"precision", "int8"}}.dump());
  ASSERT_EQ(variant.status, 200) << variant.body;
  const json v2 = json::parse(variant.body);
  EXPECT_EQ(v2["version"], 2);
  EXPECT_EQ(v2["artifact"], pushed->digest);
  EXPECT_EQ(v2["record"]["source"], "artifact:" + pushed->digest);
  EXPECT_TRUE(v2["record"]["variant"]["passed"].get<bool>()) << variant.body;
  answer = Call(port, "POST", "/v1/embeddings", Embed("team/from-store@2"));
  EXPECT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.Header("x-shoal-model-version"), "2");
}

}  // namespace
}  // namespace shoal::testing
