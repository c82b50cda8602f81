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

TEST(ModelSpec, AdaptiveBatchingIsOffUnlessGiven) {
  auto spec = ModelSpec::Parse(kProfile);
  ASSERT_TRUE(spec.ok());
  EXPECT_FALSE(spec->batching.adaptive.enabled);
  EXPECT_EQ(nlohmann::json::parse(spec->ToJson())["batching"].count("adaptive"), 0u);
}

TEST(ModelSpec, ParsesAdaptiveBatchingAndCarriesItInJson) {
  auto spec = ModelSpec::Parse(
      "id: m\nruntime: identity\n"
      "batching: {max_batch_requests: 8, adaptive: {target_ms: 30, min_wait_ms: 1, max_wait_ms: 12}}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const AdaptiveBatchingSpec& a = spec->batching.adaptive;
  EXPECT_TRUE(a.enabled);
  EXPECT_EQ(a.target_ms, 30u);
  EXPECT_EQ(a.min_wait_ms, 1u);
  EXPECT_EQ(a.max_wait_ms, 12u);

  auto again = ModelSpec::Parse(spec->ToJson());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->batching.adaptive.enabled);
  EXPECT_EQ(again->batching.adaptive.target_ms, 30u);
  EXPECT_EQ(again->batching.adaptive.min_wait_ms, 1u);
  EXPECT_EQ(again->batching.adaptive.max_wait_ms, 12u);
  EXPECT_EQ(again->ToJson(), spec->ToJson());

  // An empty mapping turns it on with the defaults.
  auto defaults = ModelSpec::Parse("id: m\nruntime: identity\nbatching: {adaptive: {}}\n");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_TRUE(defaults->batching.adaptive.enabled);
  EXPECT_EQ(defaults->batching.adaptive.target_ms, 50u);
  EXPECT_EQ(defaults->batching.adaptive.min_wait_ms, 0u);
  EXPECT_EQ(defaults->batching.adaptive.max_wait_ms, 20u);
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
      {"id: m\nruntime: identity\nbatching: {adaptive: 5}", "batching.adaptive: expected a mapping"},
      {"id: m\nruntime: identity\nbatching: {adaptive: {target_ms: 0}}", "batching.adaptive.target_ms: at least 1"},
      {"id: m\nruntime: identity\nbatching: {adaptive: {min_wait_ms: 30, max_wait_ms: 20}}",
       "batching.adaptive.min_wait_ms: must not exceed max_wait_ms"},
      {"id: m\nruntime: identity\nbatching: {adaptive: {max_wait_ms: 10001}}",
       "batching.adaptive.max_wait_ms: at most 10000"},
      {"id: m\nruntime: identity\nbatching: {adaptive: {target_ms: -3}}",
       "batching.adaptive.target_ms: expected a non-negative integer"},
      {"id: m\nruntime: identity\nbatching: {adaptive: {traget_ms: 3}}",
       "batching.adaptive: unknown field 'traget_ms'"},
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
