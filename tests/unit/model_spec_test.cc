#include "common/model_spec.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace shoal {
namespace {

constexpr const char* kProfile = R"(
id: org/embed-v1.5
runtime: identity
description: "a test"
max_input_tokens: 128
batching:
  max_batch_tokens: 4096
  max_batch_requests: 16
  max_batch_wait_ms: 2
queue:
  ack_wait_ms: 2000
  max_deliver: 3
identity:
  dim: 8
)";

TEST(ModelSpec, ParsesAProfileWithDefaults) {
  auto spec = ModelSpec::Parse(kProfile);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->id, "org/embed-v1.5");
  EXPECT_EQ(spec->runtime, "identity");
  EXPECT_EQ(spec->task, "encode");
  EXPECT_EQ(spec->pool, "default");
  EXPECT_EQ(spec->max_input_tokens, 128u);
  EXPECT_EQ(spec->batching.max_batch_tokens, 4096u);
  EXPECT_EQ(spec->batching.max_batch_requests, 16u);
  EXPECT_EQ(spec->batching.max_batch_wait_ms, 2u);
  EXPECT_EQ(spec->queue.ack_wait_ms, 2000u);
  EXPECT_EQ(spec->queue.max_deliver, 3u);
  EXPECT_EQ(nlohmann::json::parse(spec->runtime_options_json)["dim"], 8);
}

TEST(ModelSpec, JsonRoundTripIsStable) {
  auto spec = ModelSpec::Parse(kProfile);
  ASSERT_TRUE(spec.ok());
  auto again = ModelSpec::Parse(spec->ToJson());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->ToJson(), spec->ToJson());
  EXPECT_EQ(again->description, "a test");
}

TEST(ModelSpec, QuotedNumbersStayStrings) {
  auto spec = ModelSpec::Parse("id: m\nruntime: identity\ndescription: \"42\"\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->description, "42");
}

TEST(ModelSpec, RejectsBrokenProfilesClearly) {
  const std::pair<std::string, std::string> cases[] = {
      {"runtime: identity", "model id must be"},
      {"id: m", "runtime: missing"},
      {"id: m\nruntime: identity\ntask: juggle", "task: 'juggle' is not supported"},
      {"id: m\nruntime: identity\npool: GPU", "pool name"},
      {"id: m\nruntime: identity\nmax_input_tokens: -1", "max_input_tokens: expected a non-negative integer"},
      {"id: m\nruntime: identity\nbatching: 3", "batching: expected a mapping"},
      {"id: m\nruntime: identity\nbatching: {max_batch_requests: 0}", "must be positive"},
      {"id: m\nruntime: identity\nqueue: {ack_wait_ms: 5}", "queue.ack_wait_ms"},
      {"id: m\nruntime: identity\ncolour: blue", "unknown field 'colour'"},
      {"id: [unclosed", "not valid YAML"},
      {"- a\n- b", "expected a mapping"},
  };
  for (const auto& [text, want] : cases) {
    auto spec = ModelSpec::Parse(text);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), Code::kInvalidInput);
    EXPECT_NE(spec.status().message().find(want), std::string::npos)
        << text << " -> " << spec.status().message();
  }
}

TEST(ModelSpec, BundledProfilesParse) {
  auto specs = LoadModelProfiles(std::string(SHOAL_SOURCE_DIR) + "/models");
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_FALSE(specs->empty());
}

}  // namespace
}  // namespace shoal
