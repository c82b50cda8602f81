// The Batch API (gateway/batches_api.h, batch_runner.h) against a real
// nats-server, gateways and workers: a job's lines answered into its output
// and error files through the work streams at batch priority, on the
// embeddings route and on a real generator's chat route; a job resumed by
// another gateway after its own stopped, without running its answered
// lines again; cancelled and expired jobs; a key's jobs its own and run
// within its scope; bad requests refused naming what is wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <csignal>
#include <set>

#include "common/subprocess.h"
#include "queue/keys.h"
#include "support/gateway_calls.h"
#include "support/http_client.h"
#include "support/test_cluster.h"
#include "support/test_models.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

using nlohmann::json;

// POST /v1/files as a multipart/form-data upload; the file's id.
std::string UploadBatchInput(int port, const std::string& jsonl, Headers headers = {}) {
  const std::string boundary = "batch-test-boundary-7f3a";
  const std::string body = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n" +
                           "--" + boundary +
                           "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n"
                           "Content-Type: application/jsonl\r\n\r\n" +
                           jsonl + "\r\n--" + boundary + "--\r\n";
  headers["Content-Type"] = "multipart/form-data; boundary=" + boundary;
  HttpClient http(port);
  auto res = http.Request("POST", "/v1/files", body, headers);
  EXPECT_TRUE(res.ok() && res->status == 200) << (res.ok() ? res->body : res.status().ToString());
  return res.ok() && res->status == 200 ? json::parse(res->body)["id"].get<std::string>() : "";
}

json BatchRequestLine(const std::string& id, const std::string& url, const json& body) {
  return {{"custom_id", id}, {"method", "POST"}, {"url", url}, {"body", body}};
}

// `n` embeddings requests "<prefix>0".. for `model`.
std::string EmbeddingLines(int n, const std::string& model, const std::string& prefix = "e") {
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += BatchRequestLine(prefix + std::to_string(i), "/v1/embeddings",
                            {{"model", model}, {"input", "text " + std::to_string(i)}})
               .dump() +
           "\n";
  }
  return out;
}

json CreateBatch(int port, const std::string& file_id, const std::string& endpoint, const std::string& window = "24h",
                 const Headers& headers = {}) {
  const HttpResult r =
      Call(port, "POST", "/v1/batches",
           json{{"input_file_id", file_id}, {"endpoint", endpoint}, {"completion_window", window}}.dump(), headers);
  EXPECT_EQ(r.status, 200) << r.body;
  return json::parse(r.body, nullptr, false);
}

// Polls the job until its status is `status`; the job as last seen.
json WaitForBatch(int port, const std::string& id, const std::string& status, const Headers& headers = {},
                  std::chrono::seconds within = std::chrono::seconds(60)) {
  json last;
  const bool reached = WaitFor(
      [&] {
        HttpClient http(port);
        auto r = http.Request("GET", "/v1/batches/" + id, "", headers);
        if (!r.ok() || r->status != 200) return false;
        last = json::parse(r->body);
        return last["status"] == status;
      },
      within);
  EXPECT_TRUE(reached) << "batch " << id << " never reached " << status << "; last: " << last.dump();
  return last;
}

// The lines of a file, by custom_id.
std::map<std::string, json> BatchFileLines(int port, const json& file_id, const Headers& headers = {}) {
  std::map<std::string, json> out;
  if (!file_id.is_string()) return out;
  HttpClient http(port);
  auto r = http.Request("GET", "/v1/files/" + file_id.get<std::string>() + "/content", "", headers);
  EXPECT_TRUE(r.ok() && r->status == 200);
  if (!r.ok()) return out;
  size_t start = 0;
  while (start < r->body.size()) {
    const size_t end = r->body.find('\n', start);
    const json line = json::parse(r->body.substr(start, end - start));
    const std::string key = line["custom_id"].is_string() ? line["custom_id"].get<std::string>()
                                                           : "#" + std::to_string(out.size());
    EXPECT_TRUE(out.emplace(key, line).second) << "answered twice: " << key;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

TEST(Batches, AJobAnswersEveryLineIntoItsFilesAtBatchPriority) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("t/emb", "identity: {dim: 8}\n"));
  cluster.Register("id: t/chat\nruntime: native\ntask: generate\npath: " + kModels +
                   "/qwen3-tiny\npinned: true\nnative: {max_context: 256, kv_cache_tokens: 2048, kv_block_tokens: 8}\n");
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("t/emb", 1);
  cluster.WaitForWorkers("t/chat", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  const int port = gateway->port();

  // 20 requests, two lines that cannot be sent, one the router refuses.
  const std::string jsonl =
      EmbeddingLines(20, "t/emb") +
      BatchRequestLine("other-route", "/v1/rerank", {{"model", "t/emb"}}).dump() + "\n" +
      BatchRequestLine("e0", "/v1/embeddings", {{"model", "t/emb"}, {"input", "again"}}).dump() + "\n" +
      BatchRequestLine("missing", "/v1/embeddings", {{"model", "t/none"}, {"input", "x"}}).dump() + "\n";
  const std::string input = UploadBatchInput(port, jsonl);
  const HttpResult created = Call(port, "POST", "/v1/batches",
                                  json{{"input_file_id", input},
                                       {"endpoint", "/v1/embeddings"},
                                       {"completion_window", "24h"},
                                       {"metadata", {{"purpose", "test"}}}}
                                      .dump());
  ASSERT_EQ(created.status, 200) << created.body;
  const json batch = json::parse(created.body);
  EXPECT_EQ(batch["object"], "batch");
  EXPECT_EQ(batch["status"], "validating");
  EXPECT_EQ(batch["request_counts"]["total"], 23);
  EXPECT_EQ(batch["metadata"], json({{"purpose", "test"}}));
  EXPECT_EQ(batch["expires_at"].get<int64_t>() - batch["created_at"].get<int64_t>(), 86400);

  const json done = WaitForBatch(port, batch["id"], "completed");
  EXPECT_EQ(done["request_counts"], json({{"total", 23}, {"completed", 20}, {"failed", 3}})) << done;
  for (const char* at : {"in_progress_at", "finalizing_at", "completed_at"}) EXPECT_TRUE(done[at].is_number()) << at;
  const auto output = BatchFileLines(port, done["output_file_id"]);
  ASSERT_EQ(output.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    const json& line = output.at("e" + std::to_string(i));
    EXPECT_TRUE(line["id"].get<std::string>().starts_with("batch_req_"));
    EXPECT_EQ(line["response"]["status_code"], 200);
    EXPECT_FALSE(line["response"]["request_id"].get<std::string>().empty());
    EXPECT_EQ(line["response"]["body"]["data"][0]["embedding"].size(), 8u);
    EXPECT_TRUE(line["error"].is_null());
  }
  const auto errors = BatchFileLines(port, done["error_file_id"]);
  ASSERT_EQ(errors.size(), 3u) << "the repeated e0 is reported under its id";
  EXPECT_EQ(errors.at("missing")["response"]["status_code"], 404);
  EXPECT_EQ(errors.at("other-route")["error"]["code"], "invalid_request");
  EXPECT_NE(errors.at("other-route")["error"]["message"].get<std::string>().find("line 21"), std::string::npos);
  EXPECT_NE(errors.at("e0")["error"]["message"].get<std::string>().find("line 22"), std::string::npos);
  const HttpResult output_file = Call(port, "GET", "/v1/files/" + done["output_file_id"].get<std::string>());
  EXPECT_EQ(json::parse(output_file.body)["purpose"], "batch_output");

  // The lines went through the work stream as batch-class work.
  EXPECT_GE(cluster.ConsumerDeliveries("t/emb", "default", queue::Priority::kBatch), 20u);
  EXPECT_EQ(cluster.ConsumerDeliveries("t/emb", "default", queue::Priority::kInteractive), 0u);
  const json list = json::parse(Call(port, "GET", "/v1/batches").body);
  ASSERT_EQ(list["data"].size(), 1u);
  EXPECT_EQ(list["data"][0]["id"], batch["id"]);
  EXPECT_FALSE(list["has_more"].get<bool>());

  // A chat job on a real generator answers as the route does (greedy: the
  // same text as the same request sent directly).
  const json chat = {{"model", "t/chat"},
                     {"messages", {{{"role", "user"}, {"content", "Tell me a story"}}}},
                     {"max_tokens", 6},
                     {"temperature", 0}};
  const HttpResult direct = Call(port, "POST", "/v1/chat/completions", chat.dump());
  ASSERT_EQ(direct.status, 200) << direct.body;
  const std::string chat_input =
      UploadBatchInput(port, BatchRequestLine("c1", "/v1/chat/completions", chat).dump() + "\n" +
                                 BatchRequestLine("c2", "/v1/chat/completions", chat).dump() + "\n");
  const json chat_batch = CreateBatch(port, chat_input, "/v1/chat/completions");
  const json chat_done = WaitForBatch(port, chat_batch["id"], "completed");
  EXPECT_TRUE(chat_done["error_file_id"].is_null());
  const auto chat_output = BatchFileLines(port, chat_done["output_file_id"]);
  ASSERT_EQ(chat_output.size(), 2u);
  for (const auto& [id, line] : chat_output) {
    EXPECT_EQ(line["response"]["body"]["choices"][0]["message"]["content"],
              json::parse(direct.body)["choices"][0]["message"]["content"])
        << id;
    EXPECT_EQ(line["response"]["body"]["usage"]["completion_tokens"],
              json::parse(direct.body)["usage"]["completion_tokens"]);
  }
}

TEST(Batches, AJobResumesOnAnotherGatewayWithoutRunningItsAnsweredLinesAgain) {
  TestCluster cluster;
  // One item at a time, 20 ms each: 60 lines are over a second of work.
  cluster.Register(IdentityProfile("t/slow", "identity: {dim: 4, us_per_batch: 20000}\n"
                                             "batching: {max_batch_requests: 1}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("t/slow", 1);
  gateway::GatewayOptions options;
  options.batch_in_flight = 4;
  auto first = cluster.StartGateway(options);
  ASSERT_TRUE(first);
  const std::string input = UploadBatchInput(first->port(), EmbeddingLines(60, "t/slow"));
  const std::string id = CreateBatch(first->port(), input, "/v1/embeddings")["id"];
  ASSERT_TRUE(WaitFor([&] {
    const json b = json::parse(Call(first->port(), "GET", "/v1/batches/" + id).body);
    return b["request_counts"]["completed"].get<int>() >= 10;
  }));
  // Its progress where operators look: the cluster view and the metrics.
  const json view = json::parse(Call(first->port(), "GET", "/v1/cluster").body);
  ASSERT_EQ(view["batch_jobs"].size(), 1u) << view["batch_jobs"];
  EXPECT_EQ(view["batch_jobs"][0]["id"], id);
  EXPECT_EQ(view["batch_jobs"][0]["runner"], first->id());
  EXPECT_EQ(view["batch_jobs"][0]["total"], 60);
  const std::string metrics = Call(first->port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("shoal_batch_requests{batch=\"" + id + "\",state=\"total\"} 60"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("shoal_batch_jobs_running 1"), std::string::npos);
  const json dashboard = json::parse(Call(first->port(), "GET", "/v1/dashboard").body);
  ASSERT_EQ(dashboard["cluster"]["batch_jobs"].size(), 1u);
  EXPECT_GE(dashboard["cluster"]["batch_jobs"][0]["completed"].get<int>(), 10);

  first.reset();  // drains: the job's lease goes back
  auto second = cluster.StartGateway(options);
  ASSERT_TRUE(second);
  const json done = WaitForBatch(second->port(), id, "completed");
  EXPECT_EQ(done["request_counts"]["completed"], 60);
  const auto output = BatchFileLines(second->port(), done["output_file_id"]);
  EXPECT_EQ(output.size(), 60u);
  // Resumed, not run again from the start: at most the lines in flight
  // when the first gateway stopped ran twice.
  const uint64_t items = worker->batch_totals().items;
  EXPECT_GE(items, 60u);
  EXPECT_LE(items, 60u + options.batch_in_flight) << "lines answered before the stop ran again";
}

TEST(Batches, AJobOutlivesAGatewayKilledMidJob) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("t/slow", "identity: {dim: 4, us_per_batch: 20000}\n"
                                             "batching: {max_batch_requests: 1}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("t/slow", 1);
  // The job's first gateway is a process of its own, killed with SIGKILL:
  // it gives nothing back, its lease has to lapse.
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  auto doomed = Subprocess::Spawn({SHOAL_BINARY, "gateway", "--nats", cluster.nats_url(), "--port",
                                   std::to_string(*port), "--batch-in-flight", "4"},
                                  cluster.dir() + "/doomed-gateway.log");
  ASSERT_TRUE(doomed.ok());
  ASSERT_TRUE(WaitFor([&] { return PortAcceptsConnections(*port); }));
  const std::string input = UploadBatchInput(*port, EmbeddingLines(300, "t/slow"));
  const std::string id = CreateBatch(*port, input, "/v1/embeddings")["id"];
  ASSERT_TRUE(WaitFor([&] {
    return json::parse(Call(*port, "GET", "/v1/batches/" + id).body)["request_counts"]["completed"].get<int>() >= 10;
  }));
  const int killed = doomed->Stop(SIGKILL, std::chrono::seconds(5));
  EXPECT_TRUE(WIFSIGNALED(killed) && WTERMSIG(killed) == SIGKILL) << killed;

  auto second = cluster.StartGateway();
  ASSERT_TRUE(second);
  const json done = WaitForBatch(second->port(), id, "completed", {}, std::chrono::seconds(90));
  EXPECT_EQ(done["request_counts"], json({{"total", 300}, {"completed", 300}, {"failed", 0}}));
  EXPECT_EQ(BatchFileLines(second->port(), done["output_file_id"]).size(), 300u);
  // Resumed where its results stopped: what ran twice is at most what was
  // in flight, and what was answered but not yet kept when the first died.
  EXPECT_LE(worker->batch_totals().items, 300u + 8u);
}

TEST(Batches, CancelledAndExpiredJobsKeepWhatWasAnswered) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("t/slow", "identity: {dim: 4, us_per_batch: 50000}\n"
                                             "batching: {max_batch_requests: 1}\n"));
  // Known, but no worker serves it: its requests wait for capacity.
  cluster.Register(IdentityProfile("t/nowhere", "identity: {dim: 4}\npinned: false\nmemory_bytes: 1000\n"));
  auto worker = cluster.StartWorker({"t/slow"});
  cluster.WaitForWorkers("t/slow", 1);
  gateway::GatewayOptions options;
  options.batch_in_flight = 2;
  options.no_capacity_wait = std::chrono::milliseconds(200);
  auto gateway = cluster.StartGateway(options);
  ASSERT_TRUE(gateway);
  const int port = gateway->port();

  const std::string id = CreateBatch(port, UploadBatchInput(port, EmbeddingLines(100, "t/slow")), "/v1/embeddings")["id"];
  ASSERT_TRUE(WaitFor([&] {
    return json::parse(Call(port, "GET", "/v1/batches/" + id).body)["request_counts"]["completed"].get<int>() >= 2;
  }));
  const HttpResult cancel = Call(port, "POST", "/v1/batches/" + id + "/cancel");
  ASSERT_EQ(cancel.status, 200) << cancel.body;
  EXPECT_EQ(json::parse(cancel.body)["status"], "cancelling");
  const json cancelled = WaitForBatch(port, id, "cancelled");
  const int completed = cancelled["request_counts"]["completed"];
  EXPECT_LT(completed, 100);
  EXPECT_TRUE(cancelled["cancelling_at"].is_number() && cancelled["cancelled_at"].is_number());
  EXPECT_EQ(BatchFileLines(port, cancelled["output_file_id"]).size(), static_cast<size_t>(completed));
  EXPECT_EQ(json::parse(Call(port, "POST", "/v1/batches/" + id + "/cancel").body)["status"], "cancelled");

  const std::string small = CreateBatch(port, UploadBatchInput(port, EmbeddingLines(1, "t/slow")), "/v1/embeddings")["id"];
  WaitForBatch(port, small, "completed");
  const HttpResult late = Call(port, "POST", "/v1/batches/" + small + "/cancel");
  EXPECT_EQ(late.status, 400) << late.body;
  EXPECT_NE(late.body.find("completed"), std::string::npos) << late.body;

  // Its window passes while its requests find no capacity: every line is
  // reported in the error file, none lost.
  const json expiring =
      CreateBatch(port, UploadBatchInput(port, EmbeddingLines(3, "t/nowhere")), "/v1/embeddings", "2s");
  EXPECT_EQ(expiring["expires_at"].get<int64_t>() - expiring["created_at"].get<int64_t>(), 2);
  const json expired = WaitForBatch(port, expiring["id"], "expired");
  EXPECT_EQ(expired["request_counts"], json({{"total", 3}, {"completed", 0}, {"failed", 3}}));
  EXPECT_TRUE(expired["output_file_id"].is_null());
  const auto errors = BatchFileLines(port, expired["error_file_id"]);
  ASSERT_EQ(errors.size(), 3u);
  for (const auto& [custom_id, line] : errors) EXPECT_EQ(line["error"]["code"], "batch_expired") << custom_id;
}

TEST(Batches, AKeysJobsAreItsOwnAndRunWithinItsScope) {
  TestCluster cluster;
  cluster.Register(IdentityProfile("t/emb", "identity: {dim: 8}\n"));
  cluster.Register(IdentityProfile("t/other", "identity: {dim: 8}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("t/emb", 1);
  cluster.WaitForWorkers("t/other", 1);
  auto bucket = queue::OpenKeysBucket(cluster.control_plane().js.get());
  ASSERT_TRUE(bucket.ok());
  auto issue = [&](const char* name, std::vector<std::string> models, bool admin) {
    queue::ApiKey key;
    key.name = name;
    key.models = std::move(models);
    key.admin = admin;
    key.rps = 1;  // a job's lines are not charged to it
    auto issued = queue::IssueKey(bucket->get(), key);
    EXPECT_TRUE(issued.ok());
    return Bearer(issued.ok() ? issued->secret : "");
  };
  const Headers a = issue("team-a", {"t/emb"}, false), b = issue("team-b", {"*"}, false), ops = issue("ops", {}, true);
  gateway::GatewayOptions options;
  options.auth = gateway::AuthMode::kKeys;
  auto gateway = cluster.StartGateway(options);
  ASSERT_TRUE(gateway);
  const int port = gateway->port();

  const std::string input = UploadBatchInput(port, EmbeddingLines(4, "t/emb") + EmbeddingLines(1, "t/other", "o"), a);
  EXPECT_EQ(Call(port, "POST", "/v1/batches",
                 json{{"input_file_id", input}, {"endpoint", "/v1/embeddings"}, {"completion_window", "24h"}}.dump(),
                 b)
                .status,
            404)
      << "another key's file is not found";
  const std::string id = CreateBatch(port, input, "/v1/embeddings", "24h", a)["id"];
  EXPECT_EQ(Call(port, "GET", "/v1/batches/" + id, "", b).status, 404);
  EXPECT_EQ(Call(port, "POST", "/v1/batches/" + id + "/cancel", "", b).status, 404);
  EXPECT_EQ(json::parse(Call(port, "GET", "/v1/batches", "", b).body)["data"].size(), 0u);
  EXPECT_EQ(Call(port, "GET", "/v1/batches/" + id, "", ops).status, 200) << "an admin key sees every job";
  EXPECT_EQ(Call(port, "GET", "/v1/batches/" + id).status, 401);

  const json done = WaitForBatch(port, id, "completed", a);
  EXPECT_EQ(done["request_counts"], json({{"total", 5}, {"completed", 4}, {"failed", 1}})) << done;
  const auto errors = BatchFileLines(port, done["error_file_id"], a);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors.at("o0")["response"]["status_code"], 403) << "the job runs within its key's scope";
  EXPECT_EQ(Call(port, "GET", "/v1/files/" + done["output_file_id"].get<std::string>(), "", b).status, 404);
  EXPECT_EQ(Call(port, "GET", "/v1/files/" + done["output_file_id"].get<std::string>(), "", a).status, 200);
}

TEST(Batches, BadRequestsAreRefusedNamingWhatIsWrong) {
  TestCluster cluster;
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  const int port = gateway->port();
  const std::string input = UploadBatchInput(port, EmbeddingLines(2, "t/emb"));
  const std::string unsendable =
      UploadBatchInput(port, BatchRequestLine("x", "/v1/rerank", {{"model", "m"}}).dump() + "\n");
  json metadata;
  for (int i = 0; i < 17; ++i) metadata["k" + std::to_string(i)] = "v";
  const json good = {{"input_file_id", input}, {"endpoint", "/v1/embeddings"}, {"completion_window", "24h"}};
  auto with = [&](const char* field, json value) {
    json j = good;
    j[field] = std::move(value);
    return j.dump();
  };
  const std::vector<std::tuple<std::string, int, std::string>> cases = {
      {with("output_expires_after", {{"anchor", "created_at"}, {"seconds", 3600}}), 400, "output_expires_after"},
      {with("endpoint", "/v1/tokenize"), 400, "endpoint"},
      {with("completion_window", "48h"), 400, "completion_window"},
      {with("metadata", metadata), 400, "metadata"},
      {with("input_file_id", "file-000000000000000000000000"), 404, "no file"},
      {with("input_file_id", unsendable), 400, "line 1"},
      {with("input_file_id", 7), 400, "input_file_id"},
      {"[]", 400, "object"},
  };
  for (const auto& [body, status, says] : cases) {
    const HttpResult r = Call(port, "POST", "/v1/batches", body);
    EXPECT_EQ(r.status, status) << body << " → " << r.body;
    EXPECT_NE(r.body.find(says), std::string::npos) << r.body;
  }
  EXPECT_EQ(json::parse(Call(port, "GET", "/v1/batches").body)["data"].size(), 0u) << "nothing was created";
  EXPECT_EQ(Call(port, "GET", "/v1/batches?limit=0").status, 400);
  EXPECT_EQ(Call(port, "GET", "/v1/batches?colour=red").status, 400);
  EXPECT_EQ(Call(port, "GET", "/v1/batches/batch_000000000000000000000000").status, 404);
  EXPECT_EQ(Call(port, "GET", "/v1/batches/../files").status, 404);
  EXPECT_EQ(Call(port, "DELETE", "/v1/batches").status, 404);
}

}  // namespace
}  // namespace shoal::testing
