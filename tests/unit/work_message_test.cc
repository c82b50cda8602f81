// The messages between gateways and workers (wire/work_message.h): read back
// what was written, read what an independent MessagePack codec (msgpack-c)
// writes to the documented layout and write what it reads, refuse what a
// worker or gateway must not trust.
#include "wire/work_message.h"

#include <gtest/gtest.h>

#include <map>
#include <msgpack.hpp>

namespace shoal::wire {
namespace {

// A header map built with msgpack-c, then a body.
std::string Packed(const std::map<std::string, msgpack::type::variant>& fields, std::string_view body) {
  msgpack::sbuffer buf;
  msgpack::pack(buf, fields);
  return std::string(buf.data(), buf.size()) + std::string(body);
}

// A header as msgpack-c reads it: field name → value.
std::map<std::string, msgpack::type::variant> Unpacked(std::string_view message, size_t* header_bytes) {
  size_t off = 0;
  auto handle = msgpack::unpack(message.data(), message.size(), off);
  *header_bytes = off;
  return handle.get().as<std::map<std::string, msgpack::type::variant>>();
}

TEST(WorkMessage, RoundTripsEveryField) {
  WorkHeader h;
  h.request_id = "gw1-0-42";
  h.item = 7;
  h.cost = 130;
  h.deadline_unix_ms = 1'800'000'000'123;
  h.reply = "_INBOX.gw1-0.42";
  h.task = Task::kTokenize;
  h.truncate = true;
  h.normalize = false;
  h.lora = "support-v2";
  h.payload_key = "gw1-0-42.7";
  h.trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  std::string message;
  AppendWork(h, "body bytes", &message);
  WorkHeader back;
  std::string_view body;
  ASSERT_TRUE(ReadWork(message, &back, &body).ok());
  EXPECT_EQ(back.request_id, h.request_id);
  EXPECT_EQ(back.item, 7u);
  EXPECT_EQ(back.cost, 130u);
  EXPECT_EQ(back.deadline_unix_ms, h.deadline_unix_ms);
  EXPECT_EQ(back.reply, h.reply);
  EXPECT_EQ(back.task, Task::kTokenize);
  EXPECT_TRUE(back.truncate);
  EXPECT_FALSE(back.normalize);
  EXPECT_EQ(back.lora, "support-v2");
  EXPECT_EQ(back.payload_key, "gw1-0-42.7");
  EXPECT_EQ(back.trace, h.trace);
  EXPECT_EQ(body, "body bytes");
  EXPECT_FALSE(back.aggregation);
  EXPECT_EQ(back.top_k, 0u);

  h.task = Task::kExtract;
  h.aggregation = Aggregation::kAverage;
  h.top_k = 3;
  message.clear();
  AppendWork(h, "body bytes", &message);
  ASSERT_TRUE(ReadWork(message, &back, &body).ok());
  EXPECT_EQ(back.task, Task::kExtract);
  EXPECT_EQ(back.aggregation, Aggregation::kAverage);
  EXPECT_EQ(back.top_k, 3u);
  EXPECT_EQ(back.outputs, 0) << "absent: dense";
  EXPECT_EQ(back.role, InputRole::kUnspecified);

  h.task = Task::kEncode;
  h.outputs = static_cast<OutputKinds>(OutputKind::kSparse) | static_cast<OutputKinds>(OutputKind::kMultivector);
  h.role = InputRole::kQuery;
  h.sparse_top_k = 16;
  h.sparse_tokens = true;
  message.clear();
  AppendWork(h, "body bytes", &message);
  ASSERT_TRUE(ReadWork(message, &back, &body).ok());
  EXPECT_EQ(back.outputs, h.outputs);
  EXPECT_EQ(back.role, InputRole::kQuery);
  EXPECT_EQ(back.sparse_top_k, 16u);
  EXPECT_TRUE(back.sparse_tokens);
}

TEST(WorkMessage, IsTheDocumentedMapThenTheBody) {
  WorkHeader h;
  h.request_id = "r";
  h.item = 2;
  h.cost = 5;
  h.reply = "_INBOX.x.1";
  h.task = Task::kScore;
  std::string message;
  AppendWork(h, "\x81\xa4text\xa1" "a", &message);
  size_t header_bytes = 0;
  auto fields = Unpacked(message, &header_bytes);
  EXPECT_EQ(fields["v"].as_uint64_t(), 1u);
  EXPECT_EQ(fields["request"].as_string(), "r");
  EXPECT_EQ(fields["item"].as_uint64_t(), 2u);
  EXPECT_EQ(fields["cost"].as_uint64_t(), 5u);
  EXPECT_EQ(fields["reply"].as_string(), "_INBOX.x.1");
  EXPECT_EQ(fields["task"].as_string(), "score");
  // Defaults are left out: no deadline, truncate, normalize, lora, payload.
  EXPECT_EQ(fields.size(), 6u);
  EXPECT_EQ(message.substr(header_bytes), "\x81\xa4text\xa1" "a");
}

TEST(WorkMessage, ReadsWhatAnotherCodecWritesAndSkipsWhatItDoesNotKnow) {
  const std::string message =
      Packed({{"v", uint64_t{1}},
              {"request", std::string("r-9")},
              {"reply", std::string("_INBOX.y.9")},
              {"item", uint64_t{4}},
              {"cost", uint64_t{0}},  // read as 1: nothing costs nothing
              {"task", std::string("generate")},
              {"deadline", uint64_t{1234}},
              {"from_the_future", std::string("ignored")}},
             "tail");
  WorkHeader h;
  std::string_view body;
  ASSERT_TRUE(ReadWork(message, &h, &body).ok());
  EXPECT_EQ(h.request_id, "r-9");
  EXPECT_EQ(h.item, 4u);
  EXPECT_EQ(h.cost, 1u);
  EXPECT_EQ(h.task, Task::kGenerate);
  EXPECT_EQ(h.deadline_unix_ms, 1234);
  EXPECT_EQ(body, "tail");
}

TEST(WorkMessage, RefusesWhatNobodyCanAnswerOrRead) {
  auto error = [](const std::string& message) {
    WorkHeader h;
    std::string_view body;
    return ReadWork(message, &h, &body).message();
  };
  EXPECT_EQ(error(Packed({{"v", uint64_t{1}}, {"request", std::string("r")}}, "")),
            "work: no request id or reply subject (nobody to answer)");
  EXPECT_EQ(error(Packed({{"v", uint64_t{2}}, {"request", std::string("r")}, {"reply", std::string("x")}}, "")),
            "work.v: version 2; this process reads version 1");
  EXPECT_EQ(error(Packed({{"v", uint64_t{1}}, {"item", std::string("3")}}, "")),
            "work.item: expected a non-negative integer, got a string");
  EXPECT_EQ(error(Packed({{"v", uint64_t{1}}, {"task", std::string("paint")}}, "")), "work.task: unknown task 'paint'");
  EXPECT_EQ(error(Packed({{"v", uint64_t{1}}, {"item", int64_t{-1}}}, "")), "work.item: -1 is out of range");
  EXPECT_EQ(error(Packed({{"v", uint64_t{1}}, {"item", uint64_t{1} << 32}}, "")),
            "work.item: 4294967296 is out of range");
  EXPECT_EQ(error("{\"json\": 1}"), "work: expected a map, got an integer");
  EXPECT_EQ(error(""), "work: expected a map, got nothing (truncated)");
}

TEST(ReplyMessage, RoundTripsAResultInPartsAndAChunk) {
  ReplyHeader h;
  h.item = 3;
  h.worker = "host-1-abcd";
  h.attempt = 2;
  h.tokens = 17;
  h.truncated = true;
  h.cold_start = true;
  h.queue_us = 1500;
  h.inference_us = 820;
  h.part = 1;
  h.parts = 3;
  std::string message;
  AppendReplyHeader(h, &message);
  message += "result";
  ReplyHeader back;
  std::string_view body;
  ASSERT_TRUE(ReadReply(message, &back, &body).ok());
  EXPECT_EQ(back.item, 3u);
  EXPECT_EQ(back.worker, "host-1-abcd");
  EXPECT_EQ(back.attempt, 2u);
  EXPECT_EQ(back.error, Code::kOk);
  EXPECT_EQ(back.tokens, 17u);
  EXPECT_TRUE(back.truncated);
  EXPECT_TRUE(back.cold_start);
  EXPECT_EQ(back.queue_us, 1500);
  EXPECT_EQ(back.inference_us, 820);
  EXPECT_EQ(back.part, 1u);
  EXPECT_EQ(back.parts, 3u);
  EXPECT_EQ(body, "result");

  ReplyHeader chunk;
  chunk.seq = 5;
  chunk.final = true;
  message.clear();
  AppendReplyHeader(chunk, &message);
  ASSERT_TRUE(ReadReply(message, &back, &body).ok());
  EXPECT_EQ(back.seq, 5u);
  EXPECT_TRUE(back.final);
  EXPECT_EQ(back.parts, 0u);
  EXPECT_TRUE(body.empty());
}

TEST(ReplyMessage, AnErrorCarriesItsCodeAndMessage) {
  std::string message;
  AppendErrorReply(2, "w", 1, Status(Code::kPayloadTooLarge, "too big"), &message);
  size_t header_bytes = 0;
  auto fields = Unpacked(message, &header_bytes);
  EXPECT_EQ(fields["error"].as_string(), "PAYLOAD_TOO_LARGE");
  EXPECT_EQ(message.substr(header_bytes), "too big");
  ReplyHeader h;
  std::string_view body;
  ASSERT_TRUE(ReadReply(message, &h, &body).ok());
  EXPECT_EQ(h.error, Code::kPayloadTooLarge);
  EXPECT_EQ(h.item, 2u);
  EXPECT_EQ(body, "too big");
  // A code this process does not know is still an error.
  ASSERT_TRUE(ReadReply(Packed({{"v", uint64_t{1}}, {"error", std::string("NEWER_CODE")}}, "x"), &h, &body).ok());
  EXPECT_EQ(h.error, Code::kInternal);
}

}  // namespace
}  // namespace shoal::wire
