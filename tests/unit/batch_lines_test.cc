// A batch job's lines (gateway/batch_lines.h) and its stored record
// (queue/batch_store.h): what a line may hold, what each refusal says, the
// output file's shape as OpenAI documents it, and the record's round trip.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gateway/batch_lines.h"
#include "queue/batch_store.h"

namespace shoal::gateway {
namespace {

using nlohmann::json;

std::string Line(const json& o) { return o.dump() + "\n"; }

json Request(const std::string& id, const std::string& url = "/v1/embeddings") {
  return {{"custom_id", id}, {"method", "POST"}, {"url", url}, {"body", {{"model", "m"}, {"input", "x"}}}};
}

TEST(BatchLines, EachLineIsCheckedOnItsOwn) {
  json stream = Request("s");
  stream["body"]["stream"] = true;
  json no_id = Request("");
  json get = Request("g");
  get["method"] = "GET";
  json extra = Request("e");
  extra["priority"] = "high";
  json body = Request("b");
  body["body"] = "text";
  const std::string file = Line(Request("a")) + "\n" +              // 1 ok, 2 blank (skipped)
                           Line(Request("a")) +                     // 3 repeated id
                           Line(Request("c", "/v1/rerank")) +       // 4 another endpoint
                           Line(stream) + Line(no_id) + Line(get) + // 5, 6, 7
                           Line(extra) + Line(body) + "[1]\r\n" +   // 8, 9, 10
                           Line(Request("z"));                      // 11 ok
  auto lines = ParseBatchLines(file, "/v1/embeddings");
  ASSERT_TRUE(lines.ok()) << lines.status().ToString();
  ASSERT_EQ(lines->size(), 10u);
  const std::vector<std::pair<uint32_t, std::string>> want = {
      {1, ""}, {3, "earlier line"}, {4, "endpoint"}, {5, "stream"}, {6, "custom_id"}, {7, "method"},
      {8, "priority"}, {9, "body"}, {10, "not a JSON object"}, {11, ""}};
  for (size_t i = 0; i < want.size(); ++i) {
    const BatchLine& l = (*lines)[i];
    EXPECT_EQ(l.number, want[i].first);
    if (want[i].second.empty()) {
      EXPECT_EQ(l.error, "") << l.number;
      EXPECT_EQ(json::parse(l.body)["model"], "m");
    } else {
      EXPECT_NE(l.error.find("line " + std::to_string(l.number) + ": "), std::string::npos) << l.error;
      EXPECT_NE(l.error.find(want[i].second), std::string::npos) << l.error;
    }
  }
  EXPECT_EQ((*lines)[0].custom_id, "a");
}

TEST(BatchLines, NativeEndpointsNameTheModelInTheUrl) {
  auto lines = ParseBatchLines(Line(Request("a", "/v1/extract/ner")) + Line(Request("b", "/v1/extract")) +
                                   Line(Request("c", "/v1/extractx/ner")),
                               "/v1/extract");
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ((*lines)[0].error, "");
  EXPECT_NE((*lines)[1].error, "");
  EXPECT_NE((*lines)[2].error, "");
  EXPECT_TRUE(CheckBatchEndpoint("/v1/chat/completions").ok());
  EXPECT_TRUE(CheckBatchEndpoint("/v2/rerank").ok());
  EXPECT_FALSE(CheckBatchEndpoint("/v1/tokenize").ok());
  EXPECT_FALSE(CheckBatchEndpoint("/v1/extract/ner").ok());
}

TEST(BatchLines, AFileOfNoRequestOrOverTheLimitIsRefused) {
  EXPECT_FALSE(ParseBatchLines("\n\n", "/v1/embeddings").ok());
  auto none = ParseBatchLines(Line(Request("a", "/v1/rerank")), "/v1/embeddings");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("line 1"), std::string::npos) << none.status().message();
  auto over = ParseBatchLines(Line(Request("a")) + Line(Request("b")) + Line(Request("c")), "/v1/embeddings", 2);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), Code::kInvalidInput);
  EXPECT_NE(over.status().message().find("more than 2"), std::string::npos);
}

TEST(BatchLines, OutputLinesAreOpenAIs) {
  BatchLine line;
  line.custom_id = "req-1";
  const json ok = json::parse(AnsweredLine(line, 200, "gw-0-7", R"({"data": [1]})"));
  EXPECT_TRUE(ok["id"].get<std::string>().starts_with("batch_req_"));
  EXPECT_EQ(ok["custom_id"], "req-1");
  EXPECT_EQ(ok["response"]["status_code"], 200);
  EXPECT_EQ(ok["response"]["request_id"], "gw-0-7");
  EXPECT_EQ(ok["response"]["body"], json::parse(R"({"data": [1]})"));
  EXPECT_TRUE(ok["error"].is_null());
  const json unsent = json::parse(UnsentLine(BatchLine{}, "batch_expired", "too late"));
  EXPECT_TRUE(unsent["custom_id"].is_null());
  EXPECT_TRUE(unsent["response"].is_null());
  EXPECT_EQ(unsent["error"], json({{"code", "batch_expired"}, {"message", "too late"}}));
}

TEST(BatchLines, CompletionWindows) {
  EXPECT_EQ(*ParseCompletionWindow("24h"), 86400);
  EXPECT_EQ(*ParseCompletionWindow("30m"), 1800);
  EXPECT_EQ(*ParseCompletionWindow("2s"), 2);
  for (const char* bad : {"25h", "0s", "h", "24", "1d", "-1h", "99999999999999999999h", ""}) {
    EXPECT_FALSE(ParseCompletionWindow(bad).ok()) << bad;
  }
}

TEST(BatchRecord, RoundTripsAndRefusesWhatIsNotOne) {
  queue::BatchRecord r;
  r.id = "batch_0123456789abcdefghijklmn";
  r.endpoint = "/v1/embeddings";
  r.input_file_id = "file-0123456789abcdefghijklmn";
  r.completion_window = "24h";
  r.status = queue::BatchStatus::kInProgress;
  r.created_at = 1700000000;
  r.in_progress_at = 1700000001;
  r.total = 10;
  r.completed = 4;
  r.failed = 1;
  r.metadata = {{"team", "search"}};
  r.errors = {{"invalid_file", "no", 3}};
  r.owner = "team-a";
  r.runner = "gw1";
  r.lease_until_ms = 1700000005000;
  auto back = queue::ParseBatchRecord(r.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), r.ToJson());
  const json api = json::parse(r.ToApiJson());
  EXPECT_EQ(api["object"], "batch");
  EXPECT_EQ(api["status"], "in_progress");
  EXPECT_TRUE(api["output_file_id"].is_null());
  EXPECT_TRUE(api["completed_at"].is_null());
  EXPECT_EQ(api["request_counts"], json({{"total", 10}, {"completed", 4}, {"failed", 1}}));
  EXPECT_EQ(api["errors"]["data"][0]["line"], 3);
  EXPECT_FALSE(api.contains("shoal")) << "the owner and the lease are not the API's";

  const json good = json::parse(r.ToJson());
  for (auto [field, value] : {std::pair{"status", json("paused")}, {"id", json("batch_x")},
                              {"created_at", json("yesterday")}, {"metadata", json({{"a", 1}})}}) {
    json bad = good;
    bad[field] = value;
    EXPECT_FALSE(queue::ParseBatchRecord(bad.dump()).ok()) << field;
  }
  json no_shoal = good;
  no_shoal.erase("shoal");
  EXPECT_FALSE(queue::ParseBatchRecord(no_shoal.dump()).ok());
  EXPECT_FALSE(queue::ParseBatchRecord("[]").ok());
}

}  // namespace
}  // namespace shoal::gateway
