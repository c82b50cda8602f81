// Generation through the gateway, against a real nats-server: the OpenAI
// chat and completions routes and the native one, plain and streamed (SSE).
// The test plays the worker itself, over real NATS: it heartbeats that it
// serves the model (so the gateway has capacity), pulls the work message
// from the model's JetStream consumer, checks it, and publishes chunks to its
// reply subject as wire/generate.h describes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <future>
#include <thread>

#include "support/fake_generator.h"
#include "support/http_client.h"
#include "support/test_cluster.h"
#include "wire/generate.h"
#include "queue/subjects.h"
#include "wire/work_message.h"

namespace shoal::testing {
namespace {

using nlohmann::json;
using wire::FinishReason;
using wire::GenerationChunk;

constexpr char kModel[] = "test/gen";

// memory_bytes set: registering does not load it (no runtime generates here).
std::string GenerateProfile() {
  return IdentityProfile(kModel,
                         "task: generate\nmemory_bytes: 1000\npinned: false\n"
                         "queue: {ack_wait_ms: 1000, max_deliver: 5}\n");
}

GenerationChunk Chunk(std::string text, std::vector<int32_t> ids,
                      std::vector<float> logprobs = {}) {
  GenerationChunk c;
  c.text = std::move(text);
  c.token_ids = std::move(ids);
  c.logprobs = std::move(logprobs);
  return c;
}

GenerationChunk Final(std::string text, std::vector<int32_t> ids, FinishReason finish,
                      std::vector<float> logprobs = {}) {
  GenerationChunk c = Chunk(std::move(text), std::move(ids), std::move(logprobs));
  c.finish = finish;
  c.prompt_tokens = 7;
  c.completion_tokens = 5;
  c.cached_prompt_tokens = 2;
  c.ttft_ms = 12.5;
  c.itl_ms = 3.25;
  c.queue_ms = 1.5;
  return c;
}

class GenerationGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_.Register(GenerateProfile());
    cluster_.Register(IdentityProfile("test/embed", "identity: {dim: 8}\n"));
    auto spec = ModelSpec::Parse(GenerateProfile());
    ASSERT_TRUE(spec.ok());
    worker_ = std::make_unique<FakeGenerator>(cluster_, *spec);
    gateway_ = cluster_.StartGateway();
    ASSERT_TRUE(gateway_);
    // The gateway queues only what some worker serves: wait until it sees
    // the heartbeat.
    HttpClient http(gateway_->port());
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      auto res = http.Get("/v1/models");
      ASSERT_TRUE(res.ok());
      bool serving = false;
      const json list = json::parse(res->body);
      for (const auto& m : list["data"]) {
        if (m["id"] == kModel) serving = m["shoal"]["serving"].get<bool>();
      }
      if (serving) break;
      ASSERT_LT(std::chrono::steady_clock::now(), until)
          << "the gateway never saw the fake worker: " << res->body;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  // A plain request, answered while the test plays the worker.
  std::future<Result<HttpResult>> PostAsync(std::string path, std::string body) {
    return std::async(std::launch::async,
                      [port = gateway_->port(), path = std::move(path), body = std::move(body)] {
                        HttpClient http(port);
                        return http.PostJson(path, body);
                      });
  }

  Result<HttpResult> Post(const std::string& path, const std::string& body) {
    HttpClient http(gateway_->port());
    return http.PostJson(path, body);
  }

  TestCluster cluster_;
  std::unique_ptr<FakeGenerator> worker_;
  std::unique_ptr<gateway::Gateway> gateway_;
};

// --- plain (non-stream) responses ---

TEST_F(GenerationGatewayTest, ChatCompletionIsOneOpenAiAnswerWithLogprobsUsageAndTiming) {
  auto pending =
      PostAsync("/v1/chat/completions", R"({"model":"test/gen","max_tokens":5,"logprobs":true,
      "messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello"}]})");
  FakeGenerator::Work w = worker_->Take();
  // The work message: one item, task generate, cost = prompt bytes / 4 + max_tokens.
  EXPECT_EQ(w.task, Task::kGenerate);
  EXPECT_EQ(w.item, 0u);
  EXPECT_EQ(w.cost, 18u / 4 + 5);
  // Generation's default timeout is 300 s.
  const int64_t deadline = w.deadline_unix_ms;
  EXPECT_NEAR(static_cast<double>(deadline - UnixMillis()), 300000.0, 5000.0);
  EXPECT_EQ(w.request.kind, wire::GenerateRequest::Kind::kChat);
  EXPECT_EQ(w.request.model, kModel);
  ASSERT_EQ(w.request.messages.size(), 2u);
  EXPECT_EQ(w.request.messages[1].content, "Say hello");
  EXPECT_EQ(w.request.sampling.max_tokens, 5u);
  EXPECT_TRUE(w.request.sampling.logprobs);
  EXPECT_FALSE(w.request.stream);

  worker_->Send(w, 0, Chunk("Hel", {10}, {-0.5f}), false);
  worker_->Send(w, 1, Chunk("", {11}, {-0.25f}), false);  // held back: half a character
  worker_->Send(w, 2, Chunk("lo wörld", {12, 13}, {-1.0f, -2.0f}), false);
  worker_->Send(w, 3, Final("!", {14}, FinishReason::kLength, {-0.125f}), true);

  auto res = pending.get();
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->Header("x-shoal-request-id"), w.request_id);
  EXPECT_EQ(res->Header("x-shoal-ttft-ms"), "12.500");
  EXPECT_EQ(res->Header("x-shoal-itl-ms"), "3.250");
  EXPECT_EQ(res->Header("x-shoal-queue-ms"), "1.500");
  EXPECT_EQ(res->Header("x-shoal-attempts"), "1");
  EXPECT_FALSE(res->Header("x-shoal-total-ms").empty());
  json body = json::parse(res->body);
  EXPECT_EQ(body["id"], "chatcmpl-" + w.request_id);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_NEAR(body["created"].get<double>(), static_cast<double>(UnixMillis() / 1000), 60.0);
  EXPECT_EQ(body["model"], kModel);
  ASSERT_EQ(body["choices"].size(), 1u);
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["message"]["role"], "assistant");
  EXPECT_EQ(choice["message"]["content"], "Hello wörld!");
  EXPECT_EQ(choice["finish_reason"], "length");
  const json& lp = choice["logprobs"]["content"];
  ASSERT_EQ(lp.size(), 5u);
  std::string joined;
  for (const auto& t : lp) joined += t["token"].get<std::string>();
  EXPECT_EQ(joined, "Hello wörld!") << "the tokens' texts add up to the content";
  EXPECT_EQ(lp[0]["token"], "Hel");
  EXPECT_EQ(lp[0]["logprob"], -0.5);
  EXPECT_EQ(lp[0]["bytes"], json({72, 101, 108}));
  EXPECT_EQ(lp[0]["top_logprobs"], json::array());
  EXPECT_EQ(lp[1]["token"], "");
  EXPECT_EQ(lp[4]["logprob"], -0.125);
  EXPECT_EQ(body["usage"],
            json::parse(R"({"prompt_tokens":7,"completion_tokens":5,"total_tokens":12,
                                            "prompt_tokens_details":{"cached_tokens":2}})"));
}

TEST_F(GenerationGatewayTest, NAsksForOneItemPerOutputAndAnswersEveryChoice) {
  auto pending = PostAsync("/v1/chat/completions", R"({"model":"test/gen","max_tokens":5,"n":3,
      "messages":[{"role":"user","content":"Say hello"}]})");
  // Three items with the same body, each its own output; they may finish
  // in any order.
  std::vector<FakeGenerator::Work> w;
  for (int i = 0; i < 3; ++i) w.push_back(worker_->Take());
  std::sort(w.begin(), w.end(), [](const auto& a, const auto& b) { return a.item < b.item; });
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(w[i].item, i);
    EXPECT_EQ(w[i].request_id, w[0].request_id);
    EXPECT_EQ(w[i].request.messages[0].content, "Say hello");
  }
  worker_->Send(w[2], 0, Chunk("C", {3}), false);
  worker_->Send(w[0], 0, Final("A", {1}, FinishReason::kStop), true);
  worker_->Send(w[2], 1, Final("c", {4}, FinishReason::kLength), true);
  worker_->Send(w[1], 0, Final("B", {2}, FinishReason::kStop), true);

  auto res = pending.get();
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(res->status, 200) << res->body;
  const json body = json::parse(res->body);
  ASSERT_EQ(body["choices"].size(), 3u);
  const char* texts[] = {"A", "B", "Cc"};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(body["choices"][i]["index"], i);
    EXPECT_EQ(body["choices"][i]["message"]["content"], texts[i]);
  }
  EXPECT_EQ(body["choices"][2]["finish_reason"], "length");
  // The prompt counts once, every output's tokens (5 each here) count.
  EXPECT_EQ(body["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(body["usage"]["completion_tokens"], 15);
  EXPECT_EQ(body["usage"]["total_tokens"], 22);
}

TEST_F(GenerationGatewayTest, AStreamOfNOutputsInterleavesChoicesAndEndsOnce) {
  StreamConnection conn(gateway_->port());
  ASSERT_TRUE(conn.PostJson("/v1/completions", R"({"model":"test/gen","stream":true,"n":2,
      "stream_options":{"include_usage":true},"prompt":"Hi"})")
                  .ok());
  FakeGenerator::Work a = worker_->Take(), b = worker_->Take();
  if (a.item > b.item) std::swap(a, b);
  worker_->Send(b, 0, Chunk("b1", {1}), false);
  auto head = conn.ReadHead();
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  auto event = [&] {
    auto e = conn.NextEvent();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? json::parse(*e) : json();
  };
  json e = event();
  EXPECT_EQ(e["choices"][0]["index"], 1);
  EXPECT_EQ(e["choices"][0]["text"], "b1");
  worker_->Send(a, 0, Final("a1", {2}, FinishReason::kStop), true);
  e = event();
  EXPECT_EQ(e["choices"][0]["index"], 0);
  EXPECT_EQ(e["choices"][0]["text"], "a1");
  e = event();  // output 0 ends; the stream does not
  EXPECT_EQ(e["choices"][0]["index"], 0);
  EXPECT_EQ(e["choices"][0]["finish_reason"], "stop");
  worker_->Send(b, 1, Final("", {3}, FinishReason::kLength), true);
  auto rest = conn.RemainingEvents();
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  ASSERT_EQ(rest->size(), 3u);
  const json last = json::parse((*rest)[0]);
  EXPECT_EQ(last["choices"][0]["index"], 1);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(json::parse((*rest)[1])["usage"]["completion_tokens"], 10);
  EXPECT_EQ((*rest)[2], "[DONE]");
}

TEST_F(GenerationGatewayTest, AFailedOutputFailsTheRequestAndStopsTheOthers) {
  auto pending = PostAsync("/v1/completions", R"({"model":"test/gen","prompt":"p","n":2})");
  FakeGenerator::Work a = worker_->Take(), b = worker_->Take();
  if (a.item > b.item) std::swap(a, b);
  worker_->Send(a, 0, Chunk("x", {1}), false);
  worker_->SendError(b, "INFERENCE_ERROR", "the step failed");
  auto res = pending.get();
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(json::parse(res->body)["error"]["code"], "INFERENCE_ERROR") << res->body;
  // The pool's workers hear that the request is over, so output 0 stops.
  const std::string notice = worker_->NextCancel();
  EXPECT_TRUE(notice.starts_with(a.request_id + " ")) << "notice: '" << notice << "'";
}

TEST_F(GenerationGatewayTest, CompletionHasOpenAiCompletionLogprobs) {
  auto pending = PostAsync("/v1/completions",
                           R"({"model":"test/gen","prompt":"Once upon a time","logprobs":0})");
  FakeGenerator::Work w = worker_->Take();
  EXPECT_EQ(w.request.kind, wire::GenerateRequest::Kind::kCompletion);
  EXPECT_EQ(w.request.prompt, "Once upon a time");
  EXPECT_EQ(w.request.sampling.max_tokens, 16u) << "OpenAI's default for completions";
  EXPECT_TRUE(w.request.sampling.logprobs);
  worker_->Send(w, 0, Chunk(" there", {1}, {-1.0f}), false);
  worker_->Send(w, 1, Final(" was", {2}, FinishReason::kStop, {-2.0f}), true);

  auto res = pending.get();
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->status, 200) << res->body;
  json body = json::parse(res->body);
  EXPECT_EQ(body["id"], "cmpl-" + w.request_id);
  EXPECT_EQ(body["object"], "text_completion");
  const json& choice = body["choices"][0];
  EXPECT_EQ(choice["text"], " there was");
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_EQ(choice["logprobs"],
            json::parse(R"({"tokens":[" there"," was"],"token_logprobs":[-1.0,-2.0],
                                                 "text_offset":[0,6],"top_logprobs":null})"));
  EXPECT_EQ(body["usage"]["total_tokens"], 12);
}

TEST_F(GenerationGatewayTest, NativeGenerateHasTokensUsageAndTiming) {
  auto pending =
      PostAsync("/v1/generate/test/gen", R"({"prompt":"The sky is","max_tokens":8,"top_k":5,
      "seed":3,"stop":["\n"],"logprobs":true})");
  FakeGenerator::Work w = worker_->Take();
  EXPECT_EQ(w.request.prompt, "The sky is");
  EXPECT_EQ(w.request.sampling.top_k, 5);
  EXPECT_EQ(w.request.sampling.seed, 3u);
  EXPECT_EQ(w.request.sampling.stop, std::vector<std::string>{"\n"});
  worker_->Send(w, 0, Chunk(" blue", {4}, {-0.5f}), false);
  worker_->Send(w, 1, Final(".", {5}, FinishReason::kStop, {-0.25f}), true);

  auto res = pending.get();
  ASSERT_TRUE(res.ok());
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body),
            json::parse(R"({"id":")" + w.request_id + R"(","model":"test/gen",
      "text":" blue.","token_ids":[4,5],"logprobs":[-0.5,-0.25],"finish_reason":"stop",
      "usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":2}},
      "timing":{"ttft_ms":12.5,"itl_ms":3.25,"queue_ms":1.5}})"));
  EXPECT_EQ(res->Header("x-shoal-ttft-ms"), "12.500");
}

// --- streams ---

TEST_F(GenerationGatewayTest, ChatStreamIsOpenAiSseInOrderAndTheConnectionStaysAlive) {
  StreamConnection conn(gateway_->port());
  ASSERT_TRUE(conn.PostJson("/v1/chat/completions", R"({"model":"test/gen","stream":true,
      "stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hi"}]})")
                  .ok());
  FakeGenerator::Work w = worker_->Take();
  EXPECT_TRUE(w.request.stream);
  EXPECT_TRUE(w.request.include_usage);
  worker_->Send(w, 0, Chunk("Hi", {1}), false);

  auto head = conn.ReadHead();
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->Header("content-type"), "text/event-stream");
  EXPECT_EQ(head->Header("cache-control"), "no-cache");
  EXPECT_EQ(head->Header("transfer-encoding"), "chunked");
  EXPECT_EQ(head->Header("content-length"), "");
  EXPECT_EQ(head->Header("x-shoal-request-id"), w.request_id);

  auto event = [&] {
    auto e = conn.NextEvent();
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? json::parse(*e) : json();
  };
  // The events of the first chunk arrive before the worker sends the next.
  json first = event();
  EXPECT_EQ(first["id"], "chatcmpl-" + w.request_id);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["model"], kModel);
  EXPECT_EQ(first["choices"][0]["delta"], json::parse(R"({"role":"assistant","content":""})"));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(first.contains("usage") && first["usage"].is_null());
  EXPECT_EQ(event()["choices"][0]["delta"], json::parse(R"({"content":"Hi"})"));

  worker_->Send(w, 1, Chunk("", {2}), false);  // held back: no empty delta
  worker_->Send(w, 2, Chunk(" there", {3}), false);
  EXPECT_EQ(event()["choices"][0]["delta"], json::parse(R"({"content":" there"})"));

  worker_->Send(w, 3, Final("", {4}, FinishReason::kStop), true);
  auto rest = conn.RemainingEvents();
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  ASSERT_EQ(rest->size(), 3u);
  json last = json::parse((*rest)[0]);
  EXPECT_EQ(last["choices"][0]["delta"], json::object());
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  json usage = json::parse((*rest)[1]);
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
  EXPECT_EQ((*rest)[2], "[DONE]");
  EXPECT_TRUE(conn.body_ended());

  // Keep-alive: the connection serves the next request.
  ASSERT_TRUE(conn.Send("GET", "/healthz").ok());
  auto health = conn.ReadHead();
  ASSERT_TRUE(health.ok()) << health.status().ToString();
  EXPECT_EQ(health->status, 200);
}

TEST_F(GenerationGatewayTest, CompletionsStreamCarriesTextAndEndsWithFinishAndDone) {
  StreamConnection conn(gateway_->port());
  ASSERT_TRUE(
      conn.PostJson("/v1/completions", R"({"model":"test/gen","prompt":"x","stream":true})").ok());
  FakeGenerator::Work w = worker_->Take();
  worker_->Send(w, 0, Chunk("a", {1}), false);
  worker_->Send(w, 1, Final("b", {2}, FinishReason::kLength), true);
  auto head = conn.ReadHead();
  ASSERT_TRUE(head.ok());
  auto events = conn.RemainingEvents();
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  ASSERT_EQ(events->size(), 4u);
  json a = json::parse((*events)[0]), b = json::parse((*events)[1]),
       end = json::parse((*events)[2]);
  EXPECT_EQ(a["object"], "text_completion");
  EXPECT_EQ(a["id"], "cmpl-" + w.request_id);
  EXPECT_EQ(a["choices"][0]["text"], "a");
  EXPECT_TRUE(a["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(a.contains("usage")) << "no usage unless stream_options.include_usage";
  EXPECT_EQ(b["choices"][0]["text"], "b");
  EXPECT_EQ(end["choices"][0]["text"], "");
  EXPECT_EQ(end["choices"][0]["finish_reason"], "length");
  EXPECT_EQ((*events)[3], "[DONE]");
}

TEST_F(GenerationGatewayTest, NativeStreamToAnHttp10ClientEndsWithAClose) {
  StreamConnection conn(gateway_->port());
  ASSERT_TRUE(
      conn.PostJson("/v1/generate/test/gen", R"({"prompt":"p","stream":true})", /*http10=*/true)
          .ok());
  FakeGenerator::Work w = worker_->Take();
  worker_->Send(w, 0, Chunk("x", {5}), false);
  auto head = conn.ReadHead();
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->Header("content-type"), "text/event-stream");
  EXPECT_EQ(head->Header("transfer-encoding"), "") << "HTTP/1.0 has no chunking";
  EXPECT_EQ(head->Header("content-length"), "");
  auto x = conn.NextEvent();
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(json::parse(*x), json::parse(R"({"text":"x","token_ids":[5]})"));
  worker_->Send(w, 1, Final("y", {6}, FinishReason::kStop), true);
  auto rest = conn.RemainingEvents();
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  ASSERT_EQ(rest->size(), 2u);
  EXPECT_EQ(json::parse((*rest)[0]),
            json::parse(R"({"text":"y","token_ids":[6],"finish_reason":"stop",
      "usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":2}},
      "timing":{"ttft_ms":12.5,"itl_ms":3.25,"queue_ms":1.5}})"));
  EXPECT_EQ((*rest)[1], "[DONE]");
  EXPECT_TRUE(conn.closed_by_server());
}

TEST_F(GenerationGatewayTest, ABurstOfChunksStreamsCompleteAndInOrder) {
  StreamConnection conn(gateway_->port());
  ASSERT_TRUE(conn.PostJson("/v1/generate/test/gen", R"({"prompt":"p","stream":true})").ok());
  FakeGenerator::Work w = worker_->Take();
  constexpr int kChunks = 300;
  std::string want;
  for (int i = 0; i < kChunks; ++i) {
    const std::string piece = std::to_string(i) + " ";
    want += piece;
    const bool last = i + 1 == kChunks;
    worker_->Send(w, i, last ? Final(piece, {i}, FinishReason::kLength) : Chunk(piece, {i}), last);
  }
  ASSERT_TRUE(conn.ReadHead().ok());
  auto events = conn.RemainingEvents();
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  ASSERT_EQ(events->size(), kChunks + 1u);
  std::string got;
  for (int i = 0; i < kChunks; ++i) {
    json e = json::parse((*events)[i]);
    got += e["text"].get<std::string>();
    EXPECT_EQ(e["token_ids"], json::array({i}));
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(events->back(), "[DONE]");
}

TEST_F(GenerationGatewayTest, ARedeliveredGenerationIsNotRelayedTwice) {
  StreamConnection conn(gateway_->port());
  ASSERT_TRUE(conn.PostJson("/v1/generate/test/gen", R"({"prompt":"p","stream":true})").ok());
  // The first worker streams two chunks and dies (never acks).
  FakeGenerator::Work first = worker_->Take(/*ack=*/false);
  worker_->Send(first, 0, Chunk("A", {1}), false, 1);
  worker_->Send(first, 1, Chunk("B", {2}), false, 1);
  ASSERT_TRUE(conn.ReadHead().ok());
  auto a = conn.NextEvent(), b = conn.NextEvent();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(json::parse(*a)["text"], "A");
  EXPECT_EQ(json::parse(*b)["text"], "B");

  // JetStream redelivers after AckWait (1 s); the new attempt starts over
  // at Shoal-Seq 0 and regenerates the same tokens.
  FakeGenerator::Work second = worker_->Take();
  EXPECT_EQ(second.delivered, 2u);
  EXPECT_EQ(second.request_id, first.request_id);
  worker_->Send(second, 0, Chunk("A", {1}), false, 2);
  worker_->Send(second, 1, Chunk("B", {2}), false, 2);
  worker_->Send(first, 5, Chunk("stray", {9}), false, 1);  // out of sequence: dropped
  worker_->Send(second, 2, Chunk("C", {3}), false, 2);
  worker_->Send(second, 3, Final("D", {4}, FinishReason::kStop), true, 2);
  auto rest = conn.RemainingEvents();
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  ASSERT_EQ(rest->size(), 3u);
  EXPECT_EQ(json::parse((*rest)[0]), json::parse(R"({"text":"C","token_ids":[3]})"));
  EXPECT_EQ(json::parse((*rest)[1])["text"], "D");
  EXPECT_EQ((*rest)[2], "[DONE]");
}

// --- errors ---

TEST_F(GenerationGatewayTest, AnErrorBeforeTheFirstChunkIsAPlainJsonError) {
  StreamConnection conn(gateway_->port());
  ASSERT_TRUE(conn.PostJson("/v1/chat/completions", R"({"model":"test/gen","stream":true,
      "messages":[{"role":"user","content":"a very long prompt"}]})")
                  .ok());
  FakeGenerator::Work w = worker_->Take();
  worker_->SendError(w, "INVALID_INPUT", "prompt: 5000 tokens, over the model's context of 4096");
  auto res = conn.ReadHead();
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(res->Header("content-type"), "application/json");
  json body = json::parse(res->body);
  EXPECT_EQ(body["error"]["code"], "INVALID_INPUT");
  EXPECT_EQ(body["error"]["message"], "prompt: 5000 tokens, over the model's context of 4096");
  EXPECT_EQ(body["error"]["request_id"], w.request_id);

  // Likewise without streaming, with the code's own status.
  auto pending = PostAsync("/v1/generate/test/gen", R"({"prompt":"p"})");
  FakeGenerator::Work w2 = worker_->Take();
  worker_->SendError(w2, "MODEL_LOAD_FAILED", "weights missing");
  auto plain = pending.get();
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->status, 502);
  EXPECT_EQ(json::parse(plain->body)["error"]["code"], "MODEL_LOAD_FAILED");
}

TEST_F(GenerationGatewayTest, AnErrorMidStreamIsAnSseErrorEventThatEndsTheStream) {
  StreamConnection conn(gateway_->port());
  ASSERT_TRUE(conn.PostJson("/v1/generate/test/gen", R"({"prompt":"p","stream":true})").ok());
  FakeGenerator::Work w = worker_->Take();
  worker_->Send(w, 0, Chunk("x", {1}), false);
  worker_->SendError(w, "INFERENCE_ERROR", "out of KV cache");
  auto head = conn.ReadHead();
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->status, 200);
  auto events = conn.RemainingEvents();
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ(json::parse((*events)[0])["text"], "x");
  EXPECT_EQ(json::parse((*events)[1]), json::parse(R"({"error":{"code":"INFERENCE_ERROR",
      "message":"out of KV cache","request_id":")" +
                                                   w.request_id + R"("}})"));
  EXPECT_TRUE(conn.body_ended()) << "the stream ends properly, without [DONE]";
}

TEST_F(GenerationGatewayTest, ADeadlineMidStreamIsAnSseErrorEvent) {
  StreamConnection conn(gateway_->port());
  ASSERT_TRUE(
      conn.Send("POST", "/v1/chat/completions",
                R"({"model":"test/gen","stream":true,"messages":[{"role":"user","content":"x"}]})",
                {{"Content-Type", "application/json"}, {"X-Shoal-Timeout-Ms", "1500"}})
          .ok());
  FakeGenerator::Work w = worker_->Take();
  EXPECT_NEAR(static_cast<double>(w.deadline_unix_ms - UnixMillis()), 1500.0, 1000.0);
  worker_->Send(w, 0, Chunk("x", {1}), false);
  ASSERT_TRUE(conn.ReadHead().ok());
  auto events = conn.RemainingEvents();  // the worker goes quiet
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  ASSERT_EQ(events->size(), 3u);  // role, "x", the error
  EXPECT_EQ(json::parse(events->back())["error"]["code"], "DEADLINE_EXCEEDED");
}

TEST_F(GenerationGatewayTest, AClientThatHangsUpMidStreamCancelsItsRequest) {
  StreamConnection conn(gateway_->port());
  ASSERT_TRUE(conn.PostJson("/v1/chat/completions", R"({"model":"test/gen","stream":true,
      "messages":[{"role":"user","content":"tell me a long story"}]})")
                  .ok());
  FakeGenerator::Work w = worker_->Take();
  worker_->Send(w, 0, Chunk("Once", {1}), false);
  ASSERT_TRUE(conn.ReadHead().ok());
  ASSERT_TRUE(conn.NextEvent().ok());
  ASSERT_TRUE(conn.NextEvent().ok());
  conn.Close();
  // The workers of the pool hear about it, so the sequence stops.
  const std::string notice = worker_->NextCancel();
  EXPECT_TRUE(notice.starts_with(w.request_id + " ")) << "notice: '" << notice << "'";
  worker_->Send(w, 1, Chunk(" upon", {2}), false);  // nobody is listening; nothing breaks
}

TEST_F(GenerationGatewayTest, UnknownModelsAre404) {
  auto chat = Post("/v1/chat/completions",
                   R"({"model":"nope","messages":[{"role":"user","content":"x"}]})");
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->status, 404);
  EXPECT_EQ(json::parse(chat->body)["error"]["code"], "MODEL_NOT_FOUND");
  auto completion = Post("/v1/completions", R"({"model":"nope","prompt":"x"})");
  ASSERT_TRUE(completion.ok());
  EXPECT_EQ(completion->status, 404);
  auto native = Post("/v1/generate/nope", R"({"prompt":"x"})");
  ASSERT_TRUE(native.ok());
  EXPECT_EQ(native->status, 404);
  EXPECT_EQ(json::parse(native->body)["error"]["code"], "MODEL_NOT_FOUND");
}

TEST_F(GenerationGatewayTest, RoutesRefuseModelsOfAnotherTask) {
  auto chat = Post("/v1/chat/completions",
                   R"({"model":"test/embed","messages":[{"role":"user","content":"x"}]})");
  ASSERT_TRUE(chat.ok());
  EXPECT_EQ(chat->status, 400);
  EXPECT_EQ(json::parse(chat->body)["error"]["message"],
            "model 'test/embed' does not generate (task: encode)");
  auto encode = Post("/v1/encode/test/gen", R"({"items":[{"text":"x"}]})");
  ASSERT_TRUE(encode.ok());
  EXPECT_EQ(encode->status, 400);
  EXPECT_EQ(json::parse(encode->body)["error"]["message"],
            "model 'test/gen' does not encode (task: generate)");
  auto embeddings = Post("/v1/embeddings", R"({"model":"test/gen","input":"x"})");
  ASSERT_TRUE(embeddings.ok());
  EXPECT_EQ(embeddings->status, 400);
}

TEST_F(GenerationGatewayTest, BadFieldsAre400NamingTheField) {
  auto error = [&](const std::string& path, const std::string& body) {
    auto res = Post(path, body);
    EXPECT_TRUE(res.ok());
    if (!res.ok()) return std::string();
    EXPECT_EQ(res->status, 400) << body;
    return json::parse(res->body)["error"]["message"].get<std::string>();
  };
  EXPECT_EQ(
      error("/v1/chat/completions",
            R"({"model":"test/gen","temperature":3,"messages":[{"role":"user","content":"x"}]})"),
      "temperature: must be between 0 and 2, got 3");
  EXPECT_EQ(error("/v1/chat/completions",
                  R"({"model":"test/gen","n":200,"messages":[{"role":"user","content":"x"}]})"),
            "n: must be at most 128, got 200");
  EXPECT_EQ(error("/v1/completions", R"({"model":"test/gen","prompt":"x","max_tokens":0})"),
            "max_tokens: must be at least 1, got 0");
  EXPECT_EQ(error("/v1/completions", R"({"model":"test/gen","prompt":[1,2]})"),
            "prompt: token-id prompts are not supported; send text");
  EXPECT_EQ(error("/v1/generate/test/gen", R"({"prompt":"x","top_p":0})"),
            "top_p: must be greater than 0 and at most 1, got 0");
  EXPECT_EQ(error("/v1/generate/test/gen", R"({"inputs":"x"})"), "body: unknown field 'inputs'");
  EXPECT_EQ(error("/v1/generate/test/gen", "not json").rfind("body: malformed JSON (", 0), 0u);
  EXPECT_EQ(error("/v1/chat/completions",
                  R"({"model":"test/gen","messages":[{"role":"user","content":"x"},{"role":"wizard","content":"y"}]})"),
            "messages[1].role: 'wizard' is not a role (system, developer, user, assistant or tool)");
}

TEST_F(GenerationGatewayTest, ModelListShowsTheGenerateTask) {
  auto res = HttpClient(gateway_->port()).Get("/v1/models");
  ASSERT_TRUE(res.ok());
  bool found = false;
  const json list = json::parse(res->body);
  for (const auto& m : list["data"]) {
    if (m["id"] != kModel) continue;
    found = true;
    EXPECT_EQ(m["shoal"]["task"], "generate");
    EXPECT_TRUE(m["shoal"]["serving"].get<bool>());
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace shoal::testing
