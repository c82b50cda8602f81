// Models put into the model store through a gateway's admin API
// (gateway/artifacts_api.h, admin/gateway_push.h), against a real
// nats-server: pieces checked against the SHA-256 that names them, files
// larger than one body joined of parts, manifests stored only whole, and a
// model and its LoRA adapter pushed by `shoal models push --gateway` (no
// NATS on the client's side) served by a worker after the source is gone.
// Digests are computed here with OpenSSL, not with the code under test.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/hex.h"
#include "store/model_store.h"
#include "support/files.h"
#include "support/gateway_calls.h"
#include "support/run_command.h"
#include "support/test_cluster.h"
#include "support/test_models.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kArtifacts = "/v1/admin/artifacts";

std::string Sha256(std::string_view bytes) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), d, &n, EVP_sha256(), nullptr);
  return LowerHex(d, n);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class ArtifactUploadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = store::ModelStore::Open(cluster_.control_plane().js.get());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  std::string Scratch(const std::string& name) { return cluster_.dir() + "/scratch/" + name; }
  std::string CopyModel(const std::string& name, const std::string& to) {
    fs::create_directories(fs::path(to).parent_path());
    fs::copy(kModels + "/" + name, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    return to;
  }
  bool Stored(const std::string& object) { return store_->objects().Info(object).ok(); }

  TestCluster cluster_;
  std::unique_ptr<store::ModelStore> store_;
};

TEST_F(ArtifactUploadsTest, PiecesAreKeptOnlyAsTheirDigestsSay) {
  auto gateway = cluster_.StartGateway();
  const int port = gateway->port();
  const std::string root(kArtifacts);

  // A file whose body is not the bytes its name says, or a name that is no digest.
  EXPECT_EQ(Call(port, "PUT", root + "/files/" + Sha256("abc"), "abd").status, 400);
  EXPECT_EQ(Call(port, "GET", root + "/files/" + Sha256("abc")).status, 404);
  EXPECT_EQ(Call(port, "PUT", root + "/files/not-a-digest", "abc").status, 400);
  auto put = Call(port, "PUT", root + "/files/" + Sha256("abc"), "abc");
  EXPECT_EQ(put.status, 201) << put.body;
  EXPECT_EQ(Call(port, "PUT", root + "/files/" + Sha256("abc"), "abc").status, 200);  // had it
  auto got = Call(port, "GET", root + "/files/" + Sha256("abc"));
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(json::parse(got.body)["bytes"], 3);

  // A file joined of parts: in the wrong order it is refused and the parts
  // stay; in the right one it is stored and the parts are gone.
  const std::string one(70000, 'x'), two = "the second part";
  const std::string whole = one + two;
  for (const std::string* p : {&one, &two}) {
    ASSERT_EQ(Call(port, "PUT", root + "/parts/" + Sha256(*p), *p).status, 201);
  }
  const std::string file = root + "/files/" + Sha256(whole);
  auto wrong = Call(port, "POST", file, json{{"parts", {Sha256(two), Sha256(one)}}}.dump());
  EXPECT_EQ(wrong.status, 400) << wrong.body;
  EXPECT_FALSE(Stored("files/" + Sha256(whole)));
  EXPECT_TRUE(Stored("parts/" + Sha256(one)));
  auto missing = Call(port, "POST", file, json{{"parts", {Sha256(one), Sha256("never put")}}}.dump());
  EXPECT_EQ(missing.status, 400);
  EXPECT_NE(missing.body.find("parts[1]"), std::string::npos) << missing.body;
  auto joined = Call(port, "POST", file, json{{"parts", {Sha256(one), Sha256(two)}}}.dump());
  ASSERT_EQ(joined.status, 201) << joined.body;
  EXPECT_EQ(json::parse(joined.body)["bytes"], whole.size());
  auto bytes = store_->objects().Get("files/" + Sha256(whole));
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  EXPECT_EQ(*bytes, whole);
  EXPECT_FALSE(Stored("parts/" + Sha256(one)));
  EXPECT_FALSE(Stored("parts/" + Sha256(two)));

  // A manifest is stored only when every file it lists is there; its digest
  // is the SHA-256 of its canonical text (sorted keys, no spaces).
  json manifest = {{"files",
                    {{{"bytes", 3}, {"path", "a.txt"}, {"sha256", Sha256("abc")}},
                     {{"bytes", whole.size()}, {"path", "b/weights.bin"}, {"sha256", Sha256(whole)}}}}};
  json lacking = manifest;
  lacking["files"].push_back({{"bytes", 1}, {"path", "c.txt"}, {"sha256", Sha256("c")}});
  auto refused = Call(port, "POST", root + "/manifests", lacking.dump(2));
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("c.txt"), std::string::npos) << refused.body;
  auto stored = Call(port, "POST", root + "/manifests", manifest.dump(2));  // not canonical as sent
  ASSERT_EQ(stored.status, 201) << stored.body;
  const std::string digest = Sha256(manifest.dump());
  EXPECT_EQ(json::parse(stored.body)["artifact"], "sha256:" + digest);
  auto read_back = Call(port, "GET", root + "/manifests/" + digest);
  ASSERT_EQ(read_back.status, 200);
  EXPECT_EQ(read_back.body, manifest.dump());
  EXPECT_EQ(Call(port, "GET", root + "/manifests/" + Sha256("none")).status, 404);
  EXPECT_EQ(Call(port, "DELETE", root + "/files/" + Sha256("abc")).status, 404);  // no such route
}

TEST_F(ArtifactUploadsTest, TheArtifactRoutesTakeTheAdminToken) {
  gateway::GatewayOptions options;
  options.admin_token = "upload-admin";
  auto gateway = cluster_.StartGateway(options);
  const std::string path = std::string(kArtifacts) + "/files/" + Sha256("abc");
  EXPECT_EQ(Call(gateway->port(), "PUT", path, "abc").status, 401);
  EXPECT_FALSE(Stored("files/" + Sha256("abc")));
  EXPECT_EQ(Call(gateway->port(), "PUT", path, "abc", Bearer("upload-admin")).status, 201);
}

// The command line, pointed at a gateway whose bodies are smaller than the
// model's weights: the weights go in parts; the model and an adapter are
// registered by digest and served from a worker's cache once the sources
// are deleted, answering exactly as the same files registered by path.
TEST_F(ArtifactUploadsTest, AModelPushedThroughAGatewayIsServedFromTheStore) {
  const std::string dir = CopyModel("bert-tiny-mean", Scratch("laptop/bert"));
  const std::string adapter = CopyModel("loras/bert-tiny-mean/a1", Scratch("laptop/a1"));
  const std::string weights = ReadAll(dir + "/model.safetensors");
  gateway::GatewayOptions options;
  options.http.max_body_bytes = 128 * 1024;
  ASSERT_GT(weights.size(), 3 * options.http.max_body_bytes);
  auto gateway = cluster_.StartGateway(options);
  const std::string url = "http://127.0.0.1:" + std::to_string(gateway->port());

  const auto [pushed, out] = RunCommand(std::string(SHOAL_BINARY) + " models push " + dir +
                                        " --id team/pushed --pin --gateway " + url + " 2>&1");
  ASSERT_EQ(pushed, 0) << out;
  EXPECT_NE(out.find("uploading"), std::string::npos) << out;  // progress
  EXPECT_NE(out.find("added team/pushed version 1 (serving)"), std::string::npos) << out;
  EXPECT_TRUE(Stored("files/" + Sha256(weights)));
  EXPECT_FALSE(Stored("parts/" + Sha256(weights.substr(0, options.http.max_body_bytes))));
  const auto [lora, lora_out] = RunCommand(std::string(SHOAL_BINARY) + " models add-lora team/pushed " + adapter +
                                           " --name a1 --push --gateway " + url + " 2>&1");
  ASSERT_EQ(lora, 0) << lora_out;

  // Pushed again: nothing is sent, and the digest is the one a push over
  // NATS gives the same directory.
  const auto [again, again_out] =
      RunCommand(std::string(SHOAL_BINARY) + " models push " + dir + " --id team/pushed --gateway " + url + " 2>&1");
  ASSERT_EQ(again, 0) << again_out;
  EXPECT_NE(again_out.find("0.0 MB sent"), std::string::npos) << again_out;
  auto over_nats = store_->Push(dir);
  ASSERT_TRUE(over_nats.ok());
  EXPECT_EQ(over_nats->bytes_sent, 0u);
  EXPECT_NE(again_out.find(over_nats->digest), std::string::npos) << again_out;
  fs::remove_all(Scratch("laptop"));

  const int port = gateway->port();
  ASSERT_EQ(Call(port, "POST", "/v1/admin/models",
                 json{{"path", kModels + "/bert-tiny-mean"}, {"id", "local"}, {"pinned", true}}.dump())
                .status,
            201);
  ASSERT_EQ(Call(port, "POST", "/v1/admin/models/local/loras",
                 json{{"name", "a1"}, {"path", kModels + "/loras/bert-tiny-mean/a1"}}.dump())
                .status,
            201);
  worker::WorkerOptions wo;
  wo.cache_dir = Scratch("worker-cache");
  auto worker = cluster_.StartWorkerWith(wo);
  ASSERT_NE(worker, nullptr);
  cluster_.WaitForWorkers("team/pushed", 1);
  for (const std::string suffix : {"", ":a1"}) {
    auto from_store = Call(port, "POST", "/v1/embeddings", Embed("team/pushed" + suffix, "pushed from afar"));
    auto from_path = Call(port, "POST", "/v1/embeddings", Embed("local" + suffix, "pushed from afar"));
    ASSERT_EQ(from_store.status, 200) << suffix << ": " << from_store.body;
    ASSERT_EQ(from_path.status, 200) << from_path.body;
    EXPECT_EQ(json::parse(from_store.body)["data"], json::parse(from_path.body)["data"]) << suffix;
  }

  // An adapter by a digest the store lacks is the caller's mistake.
  auto unknown = Call(port, "POST", "/v1/admin/models/team/pushed/loras",
                      json{{"name", "a9"}, {"artifact", "sha256:" + Sha256("none")}}.dump());
  EXPECT_EQ(unknown.status, 400) << unknown.body;
}

}  // namespace
}  // namespace shoal::testing
