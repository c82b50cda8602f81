#include "catalog/model_spec.h"

#include "common/utf8.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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
  EXPECT_EQ(spec->task, Task::kEncode);
  EXPECT_EQ(spec->pool, "default");
  EXPECT_EQ(spec->max_input_tokens, 128u);
  EXPECT_EQ(spec->batching.max_batch_tokens, 4096u);
  EXPECT_EQ(spec->batching.max_batch_requests, 16u);
  EXPECT_EQ(spec->batching.max_batch_wait_ms, 2u);
  EXPECT_EQ(spec->queue.ack_wait_ms, 2000u);
  EXPECT_EQ(spec->queue.max_deliver, 3u);
  EXPECT_EQ(nlohmann::json::parse(spec->runtime_options_json)["dim"], 8);
}

// A profile is text the catalog keeps as JSON: bytes that are no UTF-8
// (a description in Latin-1, say) are refused, naming the byte, not carried
// to a record whose JSON cannot be written.
TEST(ModelSpec, AProfileThatIsNotUtf8IsRefused) {
  const Status s = ModelSpec::Parse("id: t/x\nruntime: identity\ndescription: \"caf\xe9\"\nidentity: {dim: 8}\n").status();
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_EQ(s.message(), "model spec: not valid UTF-8 (byte 43)");
  EXPECT_TRUE(ModelSpec::Parse("id: t/x\nruntime: identity\ndescription: \"caf\xc3\xa9\"\nidentity: {dim: 8}\n").ok());
}

TEST(Utf8, TheFirstByteThatStartsNoCharacterIsFound) {
  EXPECT_EQ(FirstInvalidUtf8("plain, caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x90\x9f"), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8("ab\x9c"), 2u);              // a continuation byte alone
  EXPECT_EQ(FirstInvalidUtf8("a\xc0\xafz"), 1u);          // an overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("\xed\xa0\x80"), 0u);        // a surrogate
  EXPECT_EQ(FirstInvalidUtf8("\xf4\x90\x80\x80"), 0u);    // past U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8("ok\xe2\x82"), 2u);           // cut short
  EXPECT_EQ(FirstInvalidUtf8("\xff"), 0u);
}

TEST(ModelSpec, JsonRoundTripIsStable) {
  auto spec = ModelSpec::Parse(kProfile);
  ASSERT_TRUE(spec.ok());
  auto again = ModelSpec::Parse(spec->ToJson());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->ToJson(), spec->ToJson());
  EXPECT_EQ(again->description, "a test");
}

TEST(ModelSpec, ProcessSaysWhereTheModelRunsAndTravelsInJson) {
  auto plain = ModelSpec::Parse(kProfile);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->process, RuntimeProcess::kDefault);
  EXPECT_EQ(nlohmann::json::parse(plain->ToJson()).count("process"), 0u);
  for (auto [name, want] : {std::pair{"worker", RuntimeProcess::kWorker}, std::pair{"shared", RuntimeProcess::kShared},
                            std::pair{"own", RuntimeProcess::kOwn}}) {
    auto spec = ModelSpec::Parse(std::string(kProfile) + "process: " + name + "\n");
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->process, want);
    auto again = ModelSpec::Parse(spec->ToJson());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->process, want);
  }
  auto bad = ModelSpec::Parse(std::string(kProfile) + "process: elsewhere\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "process: 'elsewhere' is none of worker, shared, own");
}

TEST(ModelSpec, MatryoshkaDimensionsAndPromptsTravelInJson) {
  auto spec = ModelSpec::Parse(std::string(kProfile) +
                               "matryoshka_dimensions: [768, 256, 64]\n"
                               "prompts: {query: \"query: \", document: \"passage: \"}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->matryoshka_dimensions, (std::vector<uint32_t>{768, 256, 64}));
  ASSERT_NE(spec->FindPrompt("query"), nullptr);
  EXPECT_EQ(*spec->FindPrompt("query"), "query: ");
  EXPECT_EQ(spec->FindPrompt("clustering"), nullptr);
  auto again = ModelSpec::Parse(spec->ToJson());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->matryoshka_dimensions, spec->matryoshka_dimensions);
  EXPECT_EQ(*again->FindPrompt("document"), "passage: ");
  EXPECT_EQ(again->ToJson(), spec->ToJson());

  for (const auto& [extra, want] : std::vector<std::pair<std::string, std::string>>{
           {"matryoshka_dimensions: 64\n", "matryoshka_dimensions: expected a list of positive integers"},
           {"matryoshka_dimensions: [64, 0]\n", "matryoshka_dimensions: expected a list of positive integers, got 0"},
           {"matryoshka_dimensions: [64, 64]\n", "matryoshka_dimensions: 64 twice"},
           {"prompts: [a]\n", "prompts: expected a mapping of names to texts"},
           {"prompts: {query: 3}\n", "prompts.query: expected a string"}}) {
    auto bad = ModelSpec::Parse(std::string(kProfile) + extra);
    ASSERT_FALSE(bad.ok()) << extra;
    EXPECT_EQ(bad.status().message(), want);
  }
}

TEST(ModelSpec, OutputsTravelInJsonAndDenseIsTheDefault) {
  auto plain = ModelSpec::Parse(kProfile);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->encode_outputs(), static_cast<OutputKinds>(OutputKind::kDense));
  EXPECT_EQ(plain->ToJson().find("outputs"), std::string::npos);

  auto spec = ModelSpec::Parse(std::string(kProfile) + "outputs: [sparse, dense, sparse]\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->encode_outputs(), static_cast<OutputKinds>(OutputKind::kDense) |
                                        static_cast<OutputKinds>(OutputKind::kSparse));
  EXPECT_EQ(DefaultOutput(spec->encode_outputs()), OutputKind::kDense);
  auto again = ModelSpec::Parse(spec->ToJson());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->outputs, spec->outputs);
  EXPECT_EQ(DefaultOutput(static_cast<OutputKinds>(OutputKind::kMultivector)), OutputKind::kMultivector);

  for (const auto& [extra, want] : std::vector<std::pair<std::string, std::string>>{
           {"outputs: dense\n", "outputs: expected a list of dense, sparse, multivector"},
           {"outputs: []\n", "outputs: expected a list of dense, sparse, multivector"},
           {"outputs: [dense, colbert]\n", "outputs: \"colbert\" is none of dense, sparse, multivector"}}) {
    auto bad = ModelSpec::Parse(std::string(kProfile) + extra);
    ASSERT_FALSE(bad.ok()) << extra;
    EXPECT_EQ(bad.status().message(), want);
  }
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

TEST(ModelSpec, ParsesLorasAndCarriesThemInJson) {
  auto spec = ModelSpec::Parse(
      "id: m\nruntime: identity\nloras:\n"
      "  - {name: support-v2, path: /adapters/support-v2, memory_bytes: 1572864}\n"
      "  - name: Legal_1.b\n    path: /adapters/legal\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->loras.size(), 2u);
  EXPECT_EQ(spec->loras[0].name, "support-v2");
  EXPECT_EQ(spec->loras[0].path, "/adapters/support-v2");
  EXPECT_EQ(spec->loras[0].memory_bytes, 1572864u);
  EXPECT_EQ(spec->loras[1].name, "Legal_1.b");
  EXPECT_EQ(spec->loras[1].memory_bytes, 0u) << "not measured yet";
  ASSERT_NE(spec->FindLora("Legal_1.b"), nullptr);
  EXPECT_EQ(spec->FindLora("Legal_1.b")->path, "/adapters/legal");
  EXPECT_EQ(spec->FindLora("legal_1.b"), nullptr) << "names are case-sensitive";

  const auto j = nlohmann::json::parse(spec->ToJson());
  ASSERT_EQ(j["loras"].size(), 2u);
  EXPECT_EQ(j["loras"][0], (nlohmann::json{{"name", "support-v2"}, {"path", "/adapters/support-v2"},
                                           {"memory_bytes", 1572864}}));
  auto again = ModelSpec::Parse(spec->ToJson());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->ToJson(), spec->ToJson());
  ASSERT_EQ(again->loras.size(), 2u);
  EXPECT_EQ(again->loras[1].path, "/adapters/legal");

  // A spec without adapters writes none (the stored form of existing models
  // does not change); an empty list or null is none.
  EXPECT_EQ(nlohmann::json::parse(ModelSpec::Parse(kProfile)->ToJson()).count("loras"), 0u);
  EXPECT_TRUE(ModelSpec::Parse("id: m\nruntime: identity\nloras: []\n")->loras.empty());
  EXPECT_TRUE(ModelSpec::Parse("id: m\nruntime: identity\nloras:\n")->loras.empty());
}

TEST(ModelSpec, LorasSurviveWithoutTuned) {
  auto spec = ModelSpec::Parse(
      "id: m\nruntime: identity\nloras: [{name: a, path: /a}]\n"
      "tuned: {cpu-test-1c: {batching: {max_batch_requests: 4}}}\n",
      "cpu-test-1c");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->batching.max_batch_requests, 4u);
  const ModelSpec base = spec->WithoutTuned();
  ASSERT_EQ(base.loras.size(), 1u);
  EXPECT_EQ(base.loras[0].name, "a");
}

TEST(ModelSpec, LoraPathsAreRelativeToTheProfileFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("shoal-lora-spec-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "profiles");
  const auto file = dir / "profiles" / "m.yaml";
  std::ofstream(file) << "id: m\nruntime: identity\npath: ../weights\n"
                         "loras: [{name: a, path: ../adapters/a}, {name: b, path: /abs/b}]\n";
  auto spec = ModelSpec::LoadFile(file.string());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->path, (dir / "weights").string());
  ASSERT_EQ(spec->loras.size(), 2u);
  EXPECT_EQ(spec->loras[0].path, (dir / "adapters" / "a").string());
  EXPECT_EQ(spec->loras[1].path, "/abs/b");
}

TEST(ModelSpec, RejectsBrokenLorasClearly) {
  const std::pair<std::string, std::string> cases[] = {
      {"loras: 3", "loras: expected a list"},
      {"loras: {name: a, path: /a}", "loras: expected a list"},
      {"loras: [a]", "loras[0]: expected a mapping"},
      {"loras: [{path: /a}]", "loras[0].name: expected a string"},
      {"loras: [{name: 7, path: /a}]", "loras[0].name: expected a string"},
      {"loras: [{name: '', path: /a}]", "loras[0].name: LoRA name must be 1 to 64 characters"},
      {"loras: [{name: " + std::string(65, 'x') + ", path: /a}]", "1 to 64 characters"},
      {"loras: [{name: 'a b', path: /a}]", "may hold only [A-Za-z0-9._-]"},
      {"loras: [{name: 'a:b', path: /a}]", "may hold only [A-Za-z0-9._-]"},
      {"loras: [{name: a/b, path: /a}]", "may hold only [A-Za-z0-9._-]"},
      {"loras: [{name: a}]", "loras[0].path: expected the adapter's directory"},
      {"loras: [{name: a, path: ''}]", "loras[0].path: expected the adapter's directory"},
      {"loras: [{name: a, path: /a, memory_bytes: -1}]", "loras[0].memory_bytes: expected a non-negative integer"},
      {"loras: [{name: a, path: /a, rank: 8}]", "loras[0].rank: unknown field"},
      {"loras: [{name: a, path: /a}, {name: a, path: /b}]", "loras[1].name: 'a' is given twice"},
  };
  for (const auto& [text, want] : cases) {
    auto spec = ModelSpec::Parse("id: m\nruntime: identity\n" + text + "\n");
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), Code::kInvalidInput);
    EXPECT_NE(spec.status().message().find(want), std::string::npos) << text << " -> " << spec.status().message();
  }
  EXPECT_TRUE(ValidateLoraName(std::string(64, 'x')).ok());
  EXPECT_TRUE(ValidateLoraName("A-z_0.9").ok());
}

TEST(ModelSpec, SpeculativeSurvivesTheRoundTrip) {
  auto spec = ModelSpec::Parse("id: m\nruntime: native\ntask: generate\nspeculative: {draft: org/small, k: 6}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->speculative.draft, "org/small");
  EXPECT_EQ(spec->speculative.k, 6u);
  auto again = ModelSpec::Parse(spec->ToJson());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->speculative.draft, "org/small");
  EXPECT_EQ(again->speculative.k, 6u);
  auto ngram = ModelSpec::Parse("id: m\nruntime: native\ntask: generate\nspeculative: {draft: ngram}\n");
  ASSERT_TRUE(ngram.ok());
  EXPECT_TRUE(ngram->speculative.ngram());
  EXPECT_EQ(ngram->speculative.k, 4u);
  auto none = ModelSpec::Parse("id: m\nruntime: native\ntask: generate\n");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->speculative.enabled());
  EXPECT_EQ(none->ToJson().find("speculative"), std::string::npos);
}

TEST(ModelSpec, RejectsBrokenSpeculationClearly) {
  const std::pair<std::string, std::string> cases[] = {
      {"task: generate\nspeculative: ngram", "speculative: expected a mapping"},
      {"task: generate\nspeculative: {k: 4}", "speculative.draft: missing"},
      {"task: generate\nspeculative: {draft: ngram, k: 0}", "speculative.k: 0 is out of range (1..16)"},
      {"task: generate\nspeculative: {draft: ngram, k: 17}", "out of range"},
      {"task: generate\nspeculative: {draft: ngram, depth: 2}", "speculative: unknown field 'depth'"},
      {"task: generate\nspeculative: {draft: 'a b'}", "model id"},
      {"task: generate\nspeculative: {draft: m}", "cannot draft for itself"},
      {"task: encode\nspeculative: {draft: ngram}", "only a generator"},
  };
  for (const auto& [text, want] : cases) {
    auto spec = ModelSpec::Parse("id: m\nruntime: native\n" + text + "\n");
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), Code::kInvalidInput);
    EXPECT_NE(spec.status().message().find(want), std::string::npos) << text << " -> " << spec.status().message();
  }
}

TEST(ModelSpec, AModelRefSplitsOnTheFirstColon) {
  auto plain = SplitModelRef("org/embed-v1.5");
  EXPECT_EQ(plain.base, "org/embed-v1.5");
  EXPECT_TRUE(plain.lora.empty());
  EXPECT_FALSE(plain.has_colon);
  auto lora = SplitModelRef("org/embed-v1.5:support-v2");
  EXPECT_EQ(lora.base, "org/embed-v1.5");
  EXPECT_EQ(lora.lora, "support-v2");
  EXPECT_TRUE(lora.has_colon);
  auto empty = SplitModelRef("m:");
  EXPECT_EQ(empty.base, "m");
  EXPECT_TRUE(empty.lora.empty());
  EXPECT_TRUE(empty.has_colon);
  EXPECT_EQ(SplitModelRef("m:a:b").lora, "a:b") << "the rest is the name (and not a valid one)";
}

TEST(ModelSpec, BundledProfilesParse) {
  auto specs = LoadModelProfiles(std::string(SHOAL_SOURCE_DIR) + "/models");
  ASSERT_TRUE(specs.ok()) << specs.status().ToString();
  ASSERT_FALSE(specs->empty());
}

}  // namespace
}  // namespace shoal
