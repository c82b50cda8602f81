// The Files API (gateway/files_api.h) against a real gateway and
// nats-server: files uploaded as curl -F sends them, listed, read back
// whole (across parts), removed; bad uploads refused naming what is wrong;
// a key's files hidden from other keys; a file kept by JetStream, seen by
// another gateway.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "queue/keys.h"
#include "support/gateway_calls.h"
#include "support/http_client.h"
#include "support/test_cluster.h"

namespace shoal::testing {
namespace {

using nlohmann::json;

struct CurlResult {
  int status = 0;
  std::string body;
};

// curl -F: the multipart/form-data upload a user types. `fields` are
// -F arguments ("purpose=batch", "file=@/path").
CurlResult CurlForm(int port, const std::vector<std::string>& fields, const std::string& bearer = "") {
  std::string cmd = "curl -s -w '\\n%{http_code}' http://127.0.0.1:" + std::to_string(port) + "/v1/files";
  for (const std::string& f : fields) cmd += " -F '" + f + "'";
  if (!bearer.empty()) cmd += " -H 'Authorization: Bearer " + bearer + "'";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  const size_t nl = out.rfind('\n');
  if (nl == std::string::npos) return {};
  return {std::atoi(out.c_str() + nl + 1), out.substr(0, nl)};
}

std::string WriteFile(const std::string& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// A batch input of `lines` requests, about `line_bytes` each.
std::string Jsonl(int lines, size_t line_bytes = 100) {
  std::string out;
  for (int i = 0; i < lines; ++i) {
    const std::string text(line_bytes, static_cast<char>('a' + i % 26));
    out += json{{"custom_id", "r" + std::to_string(i)},
                {"method", "POST"},
                {"url", "/v1/embeddings"},
                {"body", {{"model", "m"}, {"input", text}}}}
               .dump() +
           "\n";
  }
  return out;
}

TEST(Files, UploadListReadAndRemove) {
  TestCluster cluster;
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  const int port = gateway->port();
  // Over two 512 KiB parts.
  const std::string big = Jsonl(6000, 200);
  ASSERT_GT(big.size(), 2 * queue::FileStore::kPartBytes);
  CurlResult up = CurlForm(port, {"purpose=batch", "file=@" + WriteFile(cluster.dir(), "big.jsonl", big)});
  ASSERT_EQ(up.status, 200) << up.body;
  const json file = json::parse(up.body);
  EXPECT_EQ(file["object"], "file");
  EXPECT_EQ(file["purpose"], "batch");
  EXPECT_EQ(file["filename"], "big.jsonl");
  EXPECT_EQ(file["bytes"], big.size());
  const std::string id = file["id"];

  HttpClient http(port);
  auto content = http.Get("/v1/files/" + id + "/content");
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(content->status, 200);
  EXPECT_TRUE(content->body == big) << "the bytes came back changed";
  auto got = http.Get("/v1/files/" + id);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(json::parse(got->body), file);

  // A second, smaller file; lists newest first, or as asked.
  CurlResult small = CurlForm(port, {"file=@" + WriteFile(cluster.dir(), "small.jsonl", Jsonl(2)), "purpose=batch"});
  ASSERT_EQ(small.status, 200) << small.body;
  const std::string id2 = json::parse(small.body)["id"];
  auto list = http.Get("/v1/files");
  ASSERT_TRUE(list.ok());
  json l = json::parse(list->body);
  EXPECT_EQ(l["object"], "list");
  ASSERT_EQ(l["data"].size(), 2u);
  list = http.Get("/v1/files?order=asc&limit=1&purpose=batch");
  l = json::parse(list->body);
  ASSERT_EQ(l["data"].size(), 1u);
  EXPECT_EQ(l["data"][0]["id"], id);
  EXPECT_TRUE(l["has_more"].get<bool>());
  list = http.Get("/v1/files?order=asc&after=" + id);
  l = json::parse(list->body);
  ASSERT_EQ(l["data"].size(), 1u);
  EXPECT_EQ(l["data"][0]["id"], id2);
  EXPECT_FALSE(l["has_more"].get<bool>());
  EXPECT_EQ(json::parse(http.Get("/v1/files?purpose=batch_output")->body)["data"].size(), 0u);
  for (const char* bad : {"/v1/files?limit=0", "/v1/files?order=up", "/v1/files?colour=red"}) {
    EXPECT_EQ(http.Get(bad)->status, 400) << bad;
  }

  // Kept by JetStream: another gateway serves it too.
  auto other = cluster.StartGateway();
  ASSERT_TRUE(other);
  HttpClient http2(other->port());
  EXPECT_EQ(http2.Get("/v1/files/" + id + "/content")->body.size(), big.size());

  auto removed = http.Request("DELETE", "/v1/files/" + id);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->status, 200);
  EXPECT_EQ(json::parse(removed->body), json({{"id", id}, {"object", "file"}, {"deleted", true}}));
  EXPECT_EQ(http.Get("/v1/files/" + id)->status, 404);
  EXPECT_EQ(http.Get("/v1/files/" + id + "/content")->status, 404);
  EXPECT_EQ(http.Request("DELETE", "/v1/files/" + id)->status, 404);
  EXPECT_EQ(json::parse(http.Get("/v1/files")->body)["data"].size(), 1u);
}

TEST(Files, BadUploadsAreRefusedNamingWhatIsWrong) {
  TestCluster cluster;
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  const int port = gateway->port();
  const std::string good = WriteFile(cluster.dir(), "good.jsonl", Jsonl(3));
  const std::string broken = WriteFile(cluster.dir(), "broken.jsonl", Jsonl(2) + "{\"custom_id\": \n" + Jsonl(1));
  const std::string empty = WriteFile(cluster.dir(), "empty.jsonl", "");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"purpose=batch", "file=@" + broken}, "line 3"},
      {{"purpose=fine-tune", "file=@" + good}, "purpose"},
      {{"file=@" + good}, "purpose"},
      {{"purpose=batch"}, "file"},
      {{"purpose=batch", "file=@" + empty}, "empty"},
      {{"purpose=batch", "file=@" + good, "extra=1"}, "extra"},
  };
  for (const auto& [fields, says] : cases) {
    CurlResult r = CurlForm(port, fields);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.body.find("INVALID_INPUT"), std::string::npos) << r.body;
    EXPECT_NE(r.body.find(says), std::string::npos) << r.body;
  }
  HttpClient http(port);
  auto json_body = http.PostJson("/v1/files", R"({"purpose": "batch"})");
  EXPECT_EQ(json_body->status, 400) << "a JSON body is not an upload";
  EXPECT_EQ(json::parse(http.Get("/v1/files")->body)["data"].size(), 0u) << "nothing was kept";
  EXPECT_EQ(http.Get("/v1/files/file-000000000000000000000000")->status, 404);
  EXPECT_EQ(http.Get("/v1/files/../../etc/passwd")->status, 404);
}

TEST(Files, AKeysFilesAreItsOwn) {
  TestCluster cluster;
  auto bucket = queue::OpenKeysBucket(cluster.control_plane().js.get());
  ASSERT_TRUE(bucket.ok());
  auto issue = [&](const char* name, bool admin) {
    queue::ApiKey key;
    key.name = name;
    key.models = {"*"};
    key.admin = admin;
    auto issued = queue::IssueKey(bucket->get(), key);
    EXPECT_TRUE(issued.ok());
    return issued.ok() ? issued->secret : std::string();
  };
  const std::string a = issue("team-a", false), b = issue("team-b", false), ops = issue("ops", true);
  gateway::GatewayOptions options;
  options.auth = gateway::AuthMode::kKeys;
  auto gateway = cluster.StartGateway(options);
  ASSERT_TRUE(gateway);
  const int port = gateway->port();
  CurlResult up = CurlForm(port, {"purpose=batch", "file=@" + WriteFile(cluster.dir(), "a.jsonl", Jsonl(2))}, a);
  ASSERT_EQ(up.status, 200) << up.body;
  const std::string id = json::parse(up.body)["id"];
  EXPECT_EQ(CurlForm(port, {"purpose=batch", "file=@" + WriteFile(cluster.dir(), "x.jsonl", Jsonl(1))}).status, 401);

  auto get = [&](const std::string& path, const std::string& secret) {
    return Call(port, "GET", path, "", Bearer(secret));
  };
  EXPECT_EQ(get("/v1/files/" + id, a).status, 200);
  EXPECT_EQ(get("/v1/files/" + id, b).status, 404) << "another key learns nothing of it";
  EXPECT_EQ(get("/v1/files/" + id + "/content", b).status, 404);
  EXPECT_EQ(json::parse(get("/v1/files", b).body)["data"].size(), 0u);
  EXPECT_EQ(json::parse(get("/v1/files", a).body)["data"].size(), 1u);
  EXPECT_EQ(get("/v1/files/" + id, ops).status, 200) << "an admin key sees every file";
  EXPECT_EQ(Call(port, "DELETE", "/v1/files/" + id, "", Bearer(b)).status, 404);
  EXPECT_EQ(Call(port, "DELETE", "/v1/files/" + id, "", Bearer(a)).status, 200);
}

}  // namespace
}  // namespace shoal::testing
