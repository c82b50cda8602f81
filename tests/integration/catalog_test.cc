// The self-service catalog through the gateway's admin API: a model
// directory registered over HTTP is checked by loading it, reaches a running
// worker and gateway without a restart, is served, pinned, and removed; a
// broken one is refused with the reason; the admin token is enforced.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <cstdio>
#include <thread>
#include <tuple>

#include "support/run_command.h"
#include "support/cluster_suite.h"
#include "support/http_client.h"
#include "support/test_cluster.h"
#include "support/test_models.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Catalog : public ClusterSuite {
 protected:
  static json Models() {
    json list = json::parse(Call("GET", "/v1/models").body);
    json by_id = json::object();
    for (const auto& m : list["data"]) by_id[m["id"].get<std::string>()] = m;
    return by_id;
  }
};

TEST_F(Catalog, AModelDirectoryAddedOverHttpIsServedWithoutARestart) {
  const std::string dir = CopyModel("bert-tiny-mean", "team-embedder");
  HttpResult added = Call("POST", "/v1/admin/models", json{{"path", dir}, {"id", "team/embedder"}}.dump());
  ASSERT_EQ(added.status, 201) << added.body;
  json spec = json::parse(added.body);
  EXPECT_EQ(spec["id"], "team/embedder");
  EXPECT_EQ(spec["runtime"], "native");
  EXPECT_EQ(spec["task"], "encode");  // from config.json
  EXPECT_GT(spec["memory_bytes"].get<uint64_t>(), 100'000u) << "measured by loading it";
  EXPECT_FALSE(spec["pinned"].get<bool>());

  // The running gateway lists it, the running worker serves it (loading it
  // on the first request: it is not pinned).
  json listed = Models();
  for (int i = 0; i < 100 && !(listed.contains("team/embedder") && listed["team/embedder"]["shoal"]["serving"]); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    listed = Models();
  }
  ASSERT_TRUE(listed.contains("team/embedder")) << listed.dump();
  EXPECT_TRUE(listed["team/embedder"]["shoal"]["serving"].get<bool>());
  EXPECT_EQ(listed["team/embedder"]["shoal"]["memory_bytes"], spec["memory_bytes"]);
  HttpResult encoded = Call("POST", "/v1/encode/team/embedder", R"({"items":[{"text":"the river runs"}]})");
  ASSERT_EQ(encoded.status, 200) << encoded.body;
  EXPECT_EQ(json::parse(encoded.body)["items"][0]["dense"].size(), 64u);  // bert-tiny: hidden 64

  // Registering it again replaces it (200); GET reads it back.
  EXPECT_EQ(Call("POST", "/v1/admin/models", json{{"path", dir}, {"id", "team/embedder"}}.dump()).status, 200);
  EXPECT_EQ(json::parse(Call("GET", "/v1/admin/models/team/embedder").body)["path"], spec["path"]);

  // Removed: gone from the list, and requests for it are 404.
  HttpResult removed = Call("DELETE", "/v1/admin/models/team/embedder");
  EXPECT_EQ(removed.status, 200) << removed.body;
  for (int i = 0; i < 100 && Models().contains("team/embedder"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(Models().contains("team/embedder"));
  EXPECT_EQ(Call("POST", "/v1/encode/team/embedder", R"({"items":[{"text":"x"}]})").status, 404);
  EXPECT_EQ(Call("DELETE", "/v1/admin/models/team/embedder").status, 404);
}

TEST_F(Catalog, ABrokenModelIsRefusedWithTheReasonAndNotRegistered) {
  struct Case {
    std::string name;
    std::function<void(const fs::path&)> breakit;
    std::string reason;
  };
  const std::vector<Case> cases = {
      // Neither tokenizer.json nor the slow tokenizer's vocab.txt.
      {"no-tokenizer",
       [](const fs::path& d) {
         fs::remove(d / "tokenizer.json");
         fs::remove(d / "vocab.txt");
       },
       "tokenizer.json"},
      {"truncated-weights", [](const fs::path& d) { fs::resize_file(d / "model.safetensors", 5000); },
       "truncated"},
      {"no-weights", [](const fs::path& d) { fs::remove(d / "model.safetensors"); }, "safetensors"},
      {"wrong-shape",
       [](const fs::path& d) {
         // config.json says a wider model than the weights hold.
         std::ifstream in(d / "config.json");
         json config = json::parse(in);
         config["hidden_size"] = config["hidden_size"].get<int>() * 2;
         std::ofstream(d / "config.json") << config.dump();
       },
       "shape"},
      {"not-a-model", [](const fs::path& d) { fs::remove(d / "config.json"); }, "config.json"},
  };
  for (const auto& c : cases) {
    const std::string dir = CopyModel("bert-tiny-mean", c.name);
    c.breakit(dir);
    HttpResult res = Call("POST", "/v1/admin/models", json{{"path", dir}}.dump());
    EXPECT_EQ(res.status, 400) << c.name << ": " << res.body;
    json err = json::parse(res.body, nullptr, false);
    EXPECT_EQ(err["error"]["code"], "INVALID_INPUT") << c.name;
    EXPECT_NE(err["error"]["message"].get<std::string>().find(c.reason), std::string::npos)
        << c.name << ": " << res.body;
    EXPECT_EQ(Call("GET", "/v1/admin/models/" + c.name).status, 404) << c.name;
  }
  EXPECT_EQ(Call("POST", "/v1/admin/models", R"({"path": "/nonexistent/model"})").status, 400);
  EXPECT_EQ(Call("POST", "/v1/admin/models", R"({"path": 7})").status, 400);
  EXPECT_EQ(Call("POST", "/v1/admin/models", R"({"path": "/x", "spec": {}})").status, 400);
  EXPECT_EQ(Call("POST", "/v1/admin/models", R"(not json)").status, 400);
}

TEST_F(Catalog, PinningIsStoredAndListed) {
  HttpResult added = Call("POST", "/v1/admin/models",
                          json{{"spec", {{"id", "t/pinme"}, {"runtime", "identity"}, {"identity", {{"dim", 4}}}}}}.dump());
  ASSERT_EQ(added.status, 201) << added.body;

  HttpResult pinned = Call("PATCH", "/v1/admin/models/t/pinme", R"({"pinned": true})");
  ASSERT_EQ(pinned.status, 200) << pinned.body;
  EXPECT_TRUE(json::parse(pinned.body)["pinned"].get<bool>());
  // The gateway lists it once its catalog watch has the change.
  auto listed_pinned = [&] {
    const json m = Models()["t/pinme"];
    return m.is_object() && m["shoal"].is_object() && m["shoal"].value("pinned", false);
  };
  for (int i = 0; i < 100 && !listed_pinned(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(listed_pinned());
  EXPECT_EQ(Call("POST", "/v1/encode/t/pinme", R"({"items":[{"text":"x"}]})").status, 200);

  EXPECT_EQ(Call("PATCH", "/v1/admin/models/t/pinme", R"({"pinned": "yes"})").status, 400);
  EXPECT_EQ(Call("PATCH", "/v1/admin/models/t/nope", R"({"pinned": true})").status, 404);
  EXPECT_EQ(Call("PUT", "/v1/admin/models/t/pinme", R"({})").status, 400);
  EXPECT_EQ(Call("GET", "/v1/admin/nothing").status, 404);
}

TEST_F(Catalog, WithAnAdminTokenOnlyItsBearerMayChangeTheCatalog) {
  gateway::GatewayOptions options;
  options.admin_token = "s3cret-admin";
  auto gw = cluster_->StartGateway(options);
  const int port = gw->port();
  const std::string body = json{{"spec", {{"id", "t/guarded"}, {"runtime", "identity"}}}}.dump();

  HttpResult anonymous = Call("POST", "/v1/admin/models", body, {}, port);
  EXPECT_EQ(anonymous.status, 401) << anonymous.body;
  EXPECT_EQ(json::parse(anonymous.body)["error"]["code"], "UNAUTHENTICATED");
  HttpResult wrong = Call("POST", "/v1/admin/models", body, {{"Authorization", "Bearer s3cret-admiN"}}, port);
  EXPECT_EQ(wrong.status, 403) << wrong.body;
  EXPECT_EQ(json::parse(wrong.body)["error"]["code"], "FORBIDDEN");
  EXPECT_EQ(Call("GET", "/v1/admin/models", "", {{"Authorization", "Bearer "}}, port).status, 401);
  EXPECT_EQ(Call("GET", "/v1/admin/models/t/guarded", "", {{"Authorization", "Bearer s3cret-admin"}}, port).status,
            404);

  HttpResult ok = Call("POST", "/v1/admin/models", body, {{"Authorization", "Bearer s3cret-admin"}}, port);
  EXPECT_EQ(ok.status, 201) << ok.body;
  HttpResult list = Call("GET", "/v1/admin/models", "", {{"Authorization", "Bearer s3cret-admin"}}, port);
  ASSERT_EQ(list.status, 200);
  bool found = false;
  const json listed = json::parse(list.body);
  for (const auto& m : listed["data"]) found = found || m["id"] == "t/guarded";
  EXPECT_TRUE(found) << list.body;
  // The inference routes do not need it.
  EXPECT_EQ(Call("GET", "/v1/models", "", {}, port).status, 200);
}

// `shoal <command> --nats URL <args>` as an operator types it; returns its
// exit status and output.
std::pair<int, std::string> Shoal(const std::string& command, const std::string& nats_url,
                                  const std::string& args = "") {
  const std::string cmd = std::string(SHOAL_BINARY) + " " + command + " --nats " + nats_url + " " + args + " 2>&1";
  return RunCommand(cmd);
}

std::pair<int, std::string> ShoalModels(const std::string& nats_url, const std::string& args) {
  return Shoal("models", nats_url, args);
}

TEST_F(Catalog, TheCliAddsListsPinsAndRemovesModels) {
  const std::string url = cluster_->nats_url();
  const std::string dir = CopyModel("cross-encoder-tiny", "cli-rerank");
  auto [rc, out] = ShoalModels(url, "add " + dir + " --id cli/rerank --pin");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("added cli/rerank version 1 (serving): score"), std::string::npos) << out;  // task from config.json
  EXPECT_NE(out.find("pinned"), std::string::npos) << out;

  std::tie(rc, out) = ShoalModels(url, "ls");
  ASSERT_EQ(rc, 0) << out;
  const size_t row = out.find("cli/rerank");
  ASSERT_NE(row, std::string::npos) << out;
  EXPECT_NE(out.find(" MB", row), std::string::npos) << out;
  EXPECT_NE(out.find("yes", row), std::string::npos) << out;

  // `shoal status` lists it beside the worker (the same view as GET /v1/cluster).
  auto [status_rc, status] = Shoal("status", url);
  EXPECT_EQ(status_rc, 0) << status;
  EXPECT_NE(status.find("WORKERS"), std::string::npos) << status;
  EXPECT_NE(status.find(worker_->id()), std::string::npos) << status;
  EXPECT_NE(status.find("cli/rerank"), std::string::npos) << status;

  std::tie(rc, out) = ShoalModels(url, "unpin cli/rerank");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_FALSE(json::parse(Call("GET", "/v1/admin/models/cli/rerank").body)["pinned"].get<bool>());

  const std::string broken = CopyModel("cross-encoder-tiny", "cli-broken");
  fs::remove(fs::path(broken) / "tokenizer.json");
  fs::remove(fs::path(broken) / "vocab.txt");
  std::tie(rc, out) = ShoalModels(url, "add " + broken);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("tokenizer.json"), std::string::npos) << out;

  std::tie(rc, out) = ShoalModels(url, "rm cli/rerank");
  EXPECT_EQ(rc, 0) << out;
  std::tie(rc, out) = ShoalModels(url, "rm cli/rerank");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("not in the catalog"), std::string::npos) << out;
}

}  // namespace
}  // namespace shoal::testing
