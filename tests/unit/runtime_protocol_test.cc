// The runtime protocol's messages (runtime/process/protocol.h) and the
// host and client that speak it, in this process over a socket pair: a
// request reads back as written, replies that do not fit their request are
// refused, and an in-process runtime served by RuntimeHost answers through
// RuntimeClient what it answers directly.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "runtime/identity/identity_runtime.h"
#include "runtime/process/protocol.h"
#include "runtime/process/runtime_client.h"
#include "runtime/process/runtime_host.h"
#include "wire/msgpack_writer.h"

namespace shoal::runtime_process {
namespace {

ModelConfig IdentityConfig(uint32_t dim = 8) {
  ModelConfig c;
  c.id = "t/identity";
  c.task = Task::kEncode;
  c.max_input_tokens = 6;
  c.options = RuntimeOptions("identity");
  c.options.Set("dim", int64_t{dim});
  return c;
}

TEST(RuntimeProtocol, RequestsReadBackAsWritten) {
  ModelConfig config = IdentityConfig(16);
  config.path = "/models/x";
  config.options.Set("flag", true);
  config.options.Set("ratio", 0.25);
  config.options.Set("name", std::string("n"));
  const std::string load = LoadRequest(7, "m#1", config, 3);
  Request q;
  ASSERT_TRUE(ReadRequest(load, &q).ok());
  EXPECT_EQ(q.op, "load");
  EXPECT_EQ(q.id, 7u);
  EXPECT_EQ(q.model, "m#1");
  EXPECT_EQ(q.threads, 3u);
  ModelConfig back;
  ASSERT_TRUE(ReadConfig(q.config, "identity", &back).ok());
  EXPECT_EQ(back.id, config.id);
  EXPECT_EQ(back.path, "/models/x");
  EXPECT_EQ(back.max_input_tokens, 6u);
  EXPECT_EQ(back.options.values(), config.options.values());
  EXPECT_EQ(back.options.section(), "identity");

  std::vector<EncodeInput> in = {{.text = "a b", .truncate = true, .normalize = false, .lora = "x"}, {.text = "c"}};
  Request e;
  const std::string encode = EncodeRequest(8, "m#1", in);
  ASSERT_TRUE(ReadRequest(encode, &e).ok());
  std::vector<EncodeInput> read;
  ASSERT_TRUE(ReadEncodeInputs(e.items, &read).ok());
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].text, "a b");
  EXPECT_TRUE(read[0].truncate);
  EXPECT_FALSE(read[0].normalize);
  EXPECT_EQ(read[0].lora, "x");
  EXPECT_TRUE(read[1].normalize);

  std::vector<ExtractInput> ex = {
      {.text = "Ada", .truncate = true, .lora = "x", .aggregation = Aggregation::kMax, .top_k = 0},
      {.text = "fine", .truncate = false, .lora = {}, .aggregation = {}, .top_k = 2}};
  Request x;
  const std::string extract = ExtractRequest(9, "m#1", ex);
  ASSERT_TRUE(ReadRequest(extract, &x).ok());
  EXPECT_EQ(x.op, "extract");
  std::vector<ExtractInput> ex_read;
  ASSERT_TRUE(ReadExtractInputs(x.items, &ex_read).ok());
  ASSERT_EQ(ex_read.size(), 2u);
  EXPECT_EQ(ex_read[0].text, "Ada");
  EXPECT_TRUE(ex_read[0].truncate);
  EXPECT_EQ(ex_read[0].lora, "x");
  EXPECT_EQ(ex_read[0].aggregation, Aggregation::kMax);
  EXPECT_EQ(ex_read[0].top_k, 0u);
  EXPECT_FALSE(ex_read[1].aggregation);
  EXPECT_EQ(ex_read[1].top_k, 2u);

  Request h;
  ASSERT_TRUE(ReadRequest(HelloRequest(1), &h).ok());
  EXPECT_EQ(h.versions, std::vector<uint32_t>{kProtocolVersion});
}

TEST(RuntimeProtocol, ARuntimeThatTakesTokensGetsIdsAndSaysItsLimit) {
  RuntimeHello hello;
  hello.runtime = "onnx";
  hello.takes_tokens = true;
  Reply r;
  std::string frame = HelloReply(1, hello);  // the reply's views point into it
  ASSERT_TRUE(ReadReply(frame, &r).ok());
  RuntimeHello back;
  ASSERT_TRUE(ReadHello(r.ok, &back).ok());
  EXPECT_TRUE(back.takes_tokens);
  hello.takes_tokens = false;
  frame = HelloReply(1, hello);
  ASSERT_TRUE(ReadReply(frame, &r).ok());
  ASSERT_TRUE(ReadHello(r.ok, &back).ok());
  EXPECT_FALSE(back.takes_tokens) << "\"input\": \"text\"";

  // The wire as another language reads it (nlohmann's MessagePack decoder).
  const std::vector<int32_t> ids = {101, 7, 102, 9, 102}, types = {0, 0, 0, 1, 1};
  const std::vector<TokenInput> in = {{.ids = ids, .type_ids = types, .normalize = true, .lora = "x"}};
  const std::string score = TokenBatchRequest(5, Task::kScore, "rr#2", in);
  const auto j = nlohmann::json::from_msgpack(score);
  EXPECT_EQ(j["op"], "score");
  EXPECT_EQ(j["model"], "rr#2");
  EXPECT_EQ(j["items"][0]["ids"], nlohmann::json(ids));
  EXPECT_EQ(j["items"][0]["type_ids"], nlohmann::json(types));
  EXPECT_EQ(j["items"][0]["lora"], "x");
  EXPECT_FALSE(j["items"][0].contains("normalize")) << "a score item has no normalize";
  const auto e = nlohmann::json::from_msgpack(TokenBatchRequest(6, Task::kEncode, "m#1", in));
  EXPECT_EQ(e["op"], "encode");
  EXPECT_EQ(e["items"][0]["normalize"], true);
  EXPECT_FALSE(e["items"][0].contains("type_ids"));

  const auto load_ok = nlohmann::json::to_msgpack({{"memory_bytes", 1024}, {"max_tokens", 512}, {"later", 1}});
  LoadResult loaded;
  const std::string load_frame(load_ok.begin(), load_ok.end());
  ASSERT_TRUE(ReadLoadResult(load_frame, &loaded).ok());
  EXPECT_EQ(loaded.memory_bytes, 1024u);
  EXPECT_EQ(loaded.max_tokens, 512u);
}

TEST(RuntimeProtocol, GenerationMessagesReadBackAndAsAnotherDecoderSeesThem) {
  GenerationJob job;
  job.chat = true;
  job.messages = {{"system", "be brief"}, {"user", "héllo"}};
  job.add_generation_prompt = false;
  job.chat_template_kwargs_json = R"({"enable_thinking":false})";
  job.max_tokens = 9;
  job.sampling = {.temperature = 0.5f, .top_p = 0.75f, .top_k = 4};
  job.seed = 0xfedcba9876543210ull;  // beyond int64
  job.stop = {"\n\n", "END"};
  job.stop_token_ids = {7, 11};
  job.ignore_eos = true;
  job.logprobs = true;
  job.adjustments = {.presence_penalty = 0.5f, .repetition_penalty = 1.25f, .logit_bias = {{9, -100.0f}, {3, 2.5f}},
                     .min_tokens = 4};
  const std::string frame = GenerateJobRequest(12, "qwen#1", job);
  // An independent MessagePack decoder sees the documented fields.
  const auto j = nlohmann::json::from_msgpack(frame);
  EXPECT_EQ(j["op"], "generate");
  EXPECT_EQ(j["model"], "qwen#1");
  EXPECT_EQ(j["job"]["messages"][1]["content"], "héllo");
  EXPECT_EQ(j["job"]["seed"].get<uint64_t>(), 0xfedcba9876543210ull);
  EXPECT_FALSE(j["job"].contains("prompt"));
  EXPECT_EQ(j["job"]["adjustments"]["logit_bias_ids"], nlohmann::json({9, 3}));
  EXPECT_EQ(j["job"]["adjustments"]["min_tokens"], 4);
  Request q;
  ASSERT_TRUE(ReadRequest(frame, &q).ok());
  GenerationJob back;
  ASSERT_TRUE(ReadGenerationJob(q.job, &back).ok());
  EXPECT_TRUE(back.chat);
  ASSERT_EQ(back.messages.size(), 2u);
  EXPECT_EQ(back.messages[0].role, "system");
  EXPECT_EQ(back.chat_template_kwargs_json, job.chat_template_kwargs_json);
  EXPECT_EQ(back.max_tokens, 9u);
  EXPECT_FLOAT_EQ(back.sampling.top_p, 0.75f);
  EXPECT_EQ(back.sampling.top_k, 4);
  EXPECT_EQ(back.seed, job.seed);
  EXPECT_EQ(back.stop, job.stop);
  EXPECT_EQ(back.stop_token_ids, job.stop_token_ids);
  EXPECT_TRUE(back.ignore_eos && back.logprobs && !back.add_generation_prompt);
  EXPECT_FLOAT_EQ(back.adjustments.presence_penalty, 0.5f);
  EXPECT_EQ(back.adjustments.frequency_penalty, 0.0f);
  EXPECT_FLOAT_EQ(back.adjustments.repetition_penalty, 1.25f);
  EXPECT_EQ(back.adjustments.logit_bias, job.adjustments.logit_bias);
  EXPECT_EQ(back.adjustments.min_tokens, 4u);
  // A job asking for nothing carries no adjustments at all.
  GenerationJob plain;
  plain.prompt = "x";
  EXPECT_FALSE(nlohmann::json::from_msgpack(GenerateJobRequest(1, "m", plain))["job"].contains("adjustments"));

  const std::string cancel = CancelRequest(13, 12);  // the request's views point into it
  Request c;
  ASSERT_TRUE(ReadRequest(cancel, &c).ok());
  EXPECT_EQ(c.op, "cancel");
  EXPECT_EQ(c.target, 12u);

  GenerationUpdate u;
  u.text = "Hel";
  u.token_ids = {9906, 3};
  u.logprobs = {-0.25f, -1.5f};
  Reply r;
  const std::string chunk = ChunkReply(12, u);
  ASSERT_TRUE(ReadReply(chunk, &r).ok());
  ASSERT_EQ(r.kind, Reply::Kind::kChunk);
  GenerationUpdate got;
  ASSERT_TRUE(ReadChunk(r.chunk, &got).ok());
  EXPECT_EQ(got.text, "Hel");
  EXPECT_EQ(got.token_ids, u.token_ids);
  EXPECT_EQ(got.logprobs, u.logprobs);
  u.finish_reason = "length";
  u.prompt_tokens = 31;
  u.completion_tokens = 57;
  const std::string finish = FinishReply(12, u);
  EXPECT_EQ(nlohmann::json::from_msgpack(finish)["ok"]["finish_reason"], "length");
  ASSERT_TRUE(ReadReply(finish, &r).ok());
  GenerationUpdate end;
  ASSERT_TRUE(ReadFinish(r.ok, &end).ok());
  EXPECT_EQ(end.prompt_tokens, 31u);
  EXPECT_EQ(end.completion_tokens, 57u);

  // Refused: a job with both a prompt and messages, or neither; a bad
  // top_p; an unknown finish reason; logprobs that do not match the tokens.
  std::string both;
  wire::MsgpackWriter w(&both);
  w.MapHeader(2);
  w.Str("prompt");
  w.Str("x");
  w.Str("messages");
  w.ArrayHeader(0);
  GenerationJob bad;
  EXPECT_EQ(ReadGenerationJob(both, &bad).code(), Code::kInvalidInput);
  std::string top_p;
  wire::MsgpackWriter w2(&top_p);
  w2.MapHeader(2);
  w2.Str("prompt");
  w2.Str("x");
  w2.Str("top_p");
  w2.Float64(0);
  GenerationJob bad2;
  EXPECT_EQ(ReadGenerationJob(top_p, &bad2).code(), Code::kInvalidInput);
  // (A reply's views point into its frame: each frame outlives its reads.)
  u.finish_reason = "tired";
  const std::string tired = FinishReply(12, u);
  ASSERT_TRUE(ReadReply(tired, &r).ok());
  EXPECT_FALSE(ReadFinish(r.ok, &end).ok());
  u.logprobs = {-1.0f};
  const std::string misfit = ChunkReply(12, u);
  ASSERT_TRUE(ReadReply(misfit, &r).ok());
  EXPECT_FALSE(ReadChunk(r.chunk, &got).ok());
}

TEST(RuntimeProtocol, RepliesReadBackAndMisfitsAreRefused) {
  std::vector<EncodeOutput> out(2);
  out[0].dense = {1.5f, -2.0f};
  out[0].tokens = 3;
  out[1].status = InvalidInput("too long");
  const std::string frame = EncodeReply(5, out);
  Reply r;
  ASSERT_TRUE(ReadReply(frame, &r).ok());
  EXPECT_EQ(r.id, 5u);
  ASSERT_EQ(r.kind, Reply::Kind::kOk);
  std::vector<EncodeOutput> back(2);
  ASSERT_TRUE(ReadEncodeOutputs(r.ok, back).ok());
  EXPECT_EQ(back[0].dense, out[0].dense);
  EXPECT_EQ(back[0].tokens, 3u);
  EXPECT_EQ(back[1].status.code(), Code::kInvalidInput);
  EXPECT_EQ(back[1].status.message(), "too long");

  std::vector<ExtractOutput> extracted(3);
  extracted[0].entities = {{.label = "PER", .score = 0.75f, .start = 0, .end = 3, .text = "Ada"}};
  extracted[0].tokens = 5;
  extracted[0].truncated = true;
  extracted[1].labels = {{"positive", 0.5f}, {"negative", 0.25f}};
  extracted[2].status = InvalidInput("top_k: no");
  Reply xr;
  const std::string extract_frame = ExtractReply(6, extracted);
  ASSERT_TRUE(ReadReply(extract_frame, &xr).ok());
  std::vector<ExtractOutput> xback(3);
  const Status xs = ReadExtractOutputs(xr.ok, xback);
  ASSERT_TRUE(xs.ok()) << xs.ToString();
  ASSERT_EQ(xback[0].entities.size(), 1u);
  EXPECT_EQ(xback[0].entities[0].label, "PER");
  EXPECT_EQ(xback[0].entities[0].score, 0.75f);
  EXPECT_EQ(xback[0].entities[0].end, 3u);
  EXPECT_EQ(xback[0].entities[0].text, "Ada");
  EXPECT_EQ(xback[0].tokens, 5u);
  EXPECT_TRUE(xback[0].truncated);
  ASSERT_EQ(xback[1].labels.size(), 2u);
  EXPECT_EQ(xback[1].labels[1].label, "negative");
  EXPECT_EQ(xback[1].labels[1].score, 0.25f);
  EXPECT_EQ(xback[2].status.message(), "top_k: no");

  std::vector<EncodeOutput> three(3);
  Status s = ReadEncodeOutputs(r.ok, three);
  EXPECT_EQ(s.code(), Code::kInternal);
  EXPECT_NE(s.message().find("2 items for a batch of 3"), std::string::npos) << s.ToString();

  Reply e;
  ASSERT_TRUE(ReadReply(ErrorReply(9, Status(Code::kModelNotFound, "gone")), &e).ok());
  EXPECT_EQ(e.kind, Reply::Kind::kError);
  EXPECT_EQ(e.error.code(), Code::kModelNotFound);

  // Not replies: no id, no outcome, not a map, a vector of odd bytes.
  std::string no_id;
  wire::MsgpackWriter w(&no_id);
  w.MapHeader(1);
  w.Str("ok");
  w.MapHeader(0);
  EXPECT_FALSE(ReadReply(no_id, &r).ok());
  EXPECT_FALSE(ReadReply(PlainRequest(1, "health").substr(0, 3), &r).ok());
  EXPECT_FALSE(ReadReply("\x93\x01\x02\x03", &r).ok());
  std::string odd;
  wire::MsgpackWriter o(&odd);
  o.MapHeader(1);
  o.Str("items");
  o.ArrayHeader(1);
  o.MapHeader(1);
  o.Str("dense");
  o.Bin("abc");
  std::vector<EncodeOutput> one(1);
  EXPECT_FALSE(ReadEncodeOutputs(odd, one).ok());
}

// RuntimeHost on one end of a socket pair, RuntimeClient on the other.
class HostedIdentity : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    host_ = std::make_unique<RuntimeHost>(&runtime_, 4);
    serving_ = std::thread([this, fd = fds[1]] { stopped_ = host_->ServeConnection(fd); });
    auto client = RuntimeClient::Open(fds[0], std::chrono::seconds(10));
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    client_ = std::move(client).value();
  }
  void TearDown() override {
    client_.reset();  // closes the socket: the host's reader ends
    serving_.join();
  }

  Result<OkReply> Call(const std::function<std::string(uint64_t)>& request) {
    const uint64_t id = client_->NextId();
    return client_->Call(id, request(id), std::chrono::seconds(10));
  }

  IdentityRuntime runtime_;
  std::unique_ptr<RuntimeHost> host_;
  std::thread serving_;
  bool stopped_ = false;
  std::unique_ptr<RuntimeClient> client_;
};

TEST_F(HostedIdentity, AnswersWhatTheRuntimeAnswersInProcess) {
  EXPECT_EQ(client_->hello().runtime, "identity");
  EXPECT_EQ(client_->hello().protocol, kProtocolVersion);
  auto loaded = Call([](uint64_t id) { return LoadRequest(id, "m", IdentityConfig(), 1); });
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();

  std::vector<EncodeInput> in = {{.text = "hello world"}, {.text = "one two three four five six seven"},
                                 {.text = "one two three four five six seven", .truncate = true}};
  auto reply = Call([&](uint64_t id) { return EncodeRequest(id, "m", in); });
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  std::vector<EncodeOutput> remote(in.size());
  ASSERT_TRUE(ReadEncodeOutputs(reply->ok(), remote).ok());

  auto local_model = runtime_.Load(IdentityConfig(), LoadContext{});
  ASSERT_TRUE(local_model.ok());
  std::vector<EncodeOutput> local(in.size());
  ASSERT_TRUE((*local_model)->Encode(in, local).ok());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(remote[i].status.code(), local[i].status.code()) << i;
    EXPECT_EQ(remote[i].dense, local[i].dense) << i;
    EXPECT_EQ(remote[i].tokens, local[i].tokens) << i;
    EXPECT_EQ(remote[i].truncated, local[i].truncated) << i;
  }
  EXPECT_EQ(remote[1].status.code(), Code::kInvalidInput);  // 7 words, limit 6
  EXPECT_TRUE(remote[2].truncated);

  auto unknown = Call([&](uint64_t id) { return EncodeRequest(id, "nope", in); });
  EXPECT_EQ(unknown.status().code(), Code::kModelNotFound);
}

TEST_F(HostedIdentity, PipelinesCallsFromManyThreads) {
  ASSERT_TRUE(Call([](uint64_t id) { return LoadRequest(id, "m", IdentityConfig(), 1); }).ok());
  constexpr int kThreads = 8, kCalls = 50;
  std::atomic<int> right{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const std::string text = "thread " + std::to_string(t) + " call " + std::to_string(i);
        std::vector<EncodeInput> in = {{.text = text}};
        auto reply = Call([&](uint64_t id) { return EncodeRequest(id, "m", in); });
        std::vector<EncodeOutput> out(1);
        if (reply.ok() && ReadEncodeOutputs(reply->ok(), out).ok() &&
            out[0].dense == IdentityVector(IdentityTokens(text), 8, true)) {
          ++right;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(right.load(), kThreads * kCalls);
}

TEST_F(HostedIdentity, StopIsAnsweredAndEndsTheConnection) {
  auto reply = Call([](uint64_t id) { return PlainRequest(id, "stop"); });
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  serving_.join();
  serving_ = std::thread([] {});
  EXPECT_TRUE(stopped_);
  // The host closed its end: the client notices and every later call fails
  // as "the runtime process is gone".
  auto after = Call([](uint64_t id) { return PlainRequest(id, "health"); });
  EXPECT_EQ(after.status().code(), Code::kNoCapacity) << after.status().ToString();
}

}  // namespace
}  // namespace shoal::runtime_process
