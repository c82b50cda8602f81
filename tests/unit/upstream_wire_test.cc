// The upstream runtime's pure parts: reading server-sent events as they
// arrive in pieces, and the OpenAI requests and replies it makes and reads.
// (tests/integration/upstream_test.cc runs it against a real llama-server.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/upstream/openai_wire.h"
#include "runtime/upstream/sse_reader.h"
#include "runtime/upstream/upstream_options.h"

namespace shoal::upstream {
namespace {

using nlohmann::json;

std::vector<std::string> Events(const std::vector<std::string>& pieces) {
  std::vector<std::string> got;
  SseReader r([&](std::string_view d) {
    got.emplace_back(d);
    return Status::Ok();
  });
  for (const auto& p : pieces) EXPECT_TRUE(r.Feed(p).ok());
  return got;
}

TEST(SseReader, EventsSplitAnywhereComeOutWhole) {
  const std::string stream = ": keep-alive\n\ndata: {\"a\":1}\n\nevent: x\nid: 7\ndata: one\ndata: two\r\n\r\ndata:[DONE]\n\n";
  const std::vector<std::string> want = {"{\"a\":1}", "one\ntwo", "[DONE]"};
  EXPECT_EQ(Events({stream}), want);
  for (size_t cut = 1; cut < stream.size(); ++cut) {
    EXPECT_EQ(Events({stream.substr(0, cut), stream.substr(cut)}), want) << cut;
  }
  std::vector<std::string> bytes;
  for (char c : stream) bytes.emplace_back(1, c);
  EXPECT_EQ(Events(bytes), want);
}

TEST(SseReader, AnUnfinishedEventIsPendingAndAHandlerErrorStops) {
  SseReader r([](std::string_view d) {
    return d == "bad" ? Status(Code::kInferenceError, "no") : Status::Ok();
  });
  EXPECT_TRUE(r.Feed("data: ok\n").ok());
  EXPECT_TRUE(r.pending());
  EXPECT_TRUE(r.Feed("\n").ok());
  EXPECT_FALSE(r.pending());
  EXPECT_EQ(r.Feed("data: bad\n\n").code(), Code::kInferenceError);
}

TEST(SseReader, ALineThatNeverEndsIsRefused) {
  SseReader r([](std::string_view) { return Status::Ok(); });
  const std::string chunk(1 << 20, 'x');
  Status s;
  for (int i = 0; i < 9 && s.ok(); ++i) s = r.Feed(chunk);
  EXPECT_EQ(s.code(), Code::kInferenceError);
}

TEST(UpstreamOptions, BaseUrlIsRequiredAndUnknownOptionsRefused) {
  RuntimeOptions o("upstream");
  EXPECT_EQ(ParseUpstreamOptions(o, "m").status().code(), Code::kInvalidInput);
  o.Set("base_url", std::string("http://h:1/v1/"));
  auto parsed = ParseUpstreamOptions(o, "m");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->base_url, "http://h:1/v1");
  EXPECT_EQ(parsed->model, "m");
  o.Set("api_key", std::string("secret"));  // keys are named by variable, never written in a profile
  EXPECT_EQ(ParseUpstreamOptions(o, "m").status().code(), Code::kInvalidInput);
  RuntimeOptions ftp("upstream");
  ftp.Set("base_url", std::string("ftp://h"));
  EXPECT_EQ(ParseUpstreamOptions(ftp, "m").status().code(), Code::kInvalidInput);
}

// llama-server's /props and TEI's /info as they answer (fields abridged).
TEST(UpstreamOptions, TheServerSaysHowManyTextsACallCarries) {
  EXPECT_EQ(ServerCallLimit(R"({"default_generation_settings":{"n_ctx":2048},"total_slots":8,"chat_template":""})", ""),
            8u);
  EXPECT_EQ(ServerCallLimit("", R"({"model_id":"BAAI/bge-small-en-v1.5","max_concurrent_requests":512,
                                    "max_batch_tokens":16384,"max_client_batch_size":32})"),
            32u);
  EXPECT_EQ(ServerCallLimit(R"({"total_slots":0})", "not json"), 0u) << "neither says: no limit";
  EXPECT_EQ(ServerCallLimit("", ""), 0u);
  RuntimeOptions o("upstream");
  o.Set("base_url", std::string("http://h:1/v1"));
  o.Set("inputs_per_call", int64_t{0});
  EXPECT_EQ(ParseUpstreamOptions(o, "m").status().code(), Code::kInvalidInput) << "at least 1";
  o.Set("inputs_per_call", int64_t{4});
  EXPECT_EQ(ParseUpstreamOptions(o, "m")->inputs_per_call, 4u);
}

TEST(OpenAiWire, EmbeddingsAreOnePerInputInIndexOrderAndNormalizedWhenAsked) {
  EncodeInput a{.text = "ab", .normalize = true}, b{.text = "cdef", .normalize = false};
  const EncodeInput* in[] = {&a, &b};
  EXPECT_EQ(json::parse(EmbeddingsBody("m", in))["input"], json({"ab", "cdef"}));
  EncodeOutput oa, ob;
  EncodeOutput* out[] = {&oa, &ob};
  const std::string reply = R"({"data":[{"index":1,"embedding":[3,4]},{"index":0,"embedding":[0,2]}],
                                "usage":{"prompt_tokens":9}})";
  ASSERT_TRUE(ReadEmbeddings(reply, in, out).ok());
  EXPECT_EQ(oa.dense, (std::vector<float>{0, 1}));
  EXPECT_EQ(ob.dense, (std::vector<float>{3, 4}));  // as the upstream sent it
  EXPECT_EQ(oa.tokens + ob.tokens, 9u);             // shared by length: 3 and 6
  EXPECT_EQ(oa.tokens, 3u);
}

TEST(OpenAiWire, EmbeddingRepliesThatAreNotOnePerInputAreGarbage) {
  EncodeInput a{.text = "x"}, b{.text = "y"};
  const EncodeInput* in[] = {&a, &b};
  EncodeOutput oa, ob;
  EncodeOutput* out[] = {&oa, &ob};
  for (const char* reply : {"not json", R"({"data":[{"index":0,"embedding":[1]}]})",
                            R"({"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]})",
                            R"({"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":["x"]}]})",
                            R"({"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[]}]})"}) {
    EXPECT_EQ(ReadEmbeddings(reply, in, out).code(), Code::kInferenceError) << reply;
  }
}

TEST(OpenAiWire, AJobBecomesAStreamedCompletionOrChat) {
  GenerationJob job;
  job.prompt = "hi";
  job.max_tokens = 5;
  job.sampling.temperature = 0;
  job.seed = 7;
  job.stop = {"\n"};
  auto call = GenerationRequest("m", job);
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(call->path, "/completions");
  const json b = json::parse(call->body);
  EXPECT_EQ(b["prompt"], "hi");
  EXPECT_EQ(b["stream"], true);
  EXPECT_EQ(b["stream_options"]["include_usage"], true);
  EXPECT_EQ(b["max_tokens"], 5);
  EXPECT_EQ(b["seed"], 7);
  EXPECT_EQ(b["stop"], json({"\n"}));
  EXPECT_FALSE(b.contains("top_k") || b.contains("ignore_eos") || b.contains("add_special_tokens"));

  job.chat = true;
  job.messages = {{"user", "hello"}};
  job.ignore_eos = true;
  job.sampling.top_k = 3;
  job.chat_template_kwargs_json = R"({"enable_thinking":false})";
  call = GenerationRequest("m", job);
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(call->path, "/chat/completions");
  const json c = json::parse(call->body);
  EXPECT_EQ(c["messages"][0]["content"], "hello");
  EXPECT_EQ(c["ignore_eos"], true);
  EXPECT_EQ(c["top_k"], 3);
  EXPECT_EQ(c["chat_template_kwargs"]["enable_thinking"], false);
}

TEST(OpenAiWire, WhatAStreamCannotCarryIsRefused) {
  GenerationJob job;
  job.prompt = "hi";
  job.logprobs = true;
  EXPECT_EQ(GenerationRequest("m", job).status().code(), Code::kInvalidInput);
  job.logprobs = false;
  job.lora = "a";
  EXPECT_EQ(GenerationRequest("m", job).status().code(), Code::kModelNotFound);
}

TEST(OpenAiWire, StreamEventsReadAsTextFinishAndUsage) {
  StreamEvent e;
  ASSERT_TRUE(ReadStreamEvent(R"({"choices":[{"index":0,"text":"Hel","finish_reason":null}]})", false, &e).ok());
  EXPECT_EQ(e.text, "Hel");
  ASSERT_TRUE(ReadStreamEvent(R"({"choices":[{"delta":{"content":"lo"},"finish_reason":"length"}]})", true, &e).ok());
  EXPECT_EQ(e.text, "lo");
  EXPECT_EQ(e.finish_reason, "length");
  ASSERT_TRUE(ReadStreamEvent(R"({"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2}})", true, &e).ok());
  EXPECT_TRUE(e.has_usage);
  EXPECT_EQ(e.prompt_tokens, 4u);
  EXPECT_EQ(e.completion_tokens, 2u);
  ASSERT_TRUE(ReadStreamEvent("[DONE]", true, &e).ok());
  EXPECT_TRUE(e.done);
  EXPECT_EQ(ReadStreamEvent("garbage", false, &e).code(), Code::kInferenceError);
  EXPECT_EQ(ReadStreamEvent(R"({"foo":1})", false, &e).code(), Code::kInferenceError);
  EXPECT_EQ(ReadStreamEvent(R"({"choices":[{"text":5}]})", false, &e).code(), Code::kInferenceError);
  const Status mid = ReadStreamEvent(R"({"error":{"message":"out of memory"}})", false, &e);
  EXPECT_EQ(mid.code(), Code::kInferenceError);
  EXPECT_NE(mid.message().find("out of memory"), std::string::npos);
}

}  // namespace
}  // namespace shoal::upstream
