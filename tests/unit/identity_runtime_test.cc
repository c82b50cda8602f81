#include "runtime/identity/identity_runtime.h"
#include "runtime/registry/registry.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace shoal {
namespace {

std::unique_ptr<Model> Load(const std::string& extra = "identity: {dim: 16}") {
  auto spec = ModelSpec::Parse("id: t\nruntime: identity\nmax_input_tokens: 4\n" + extra);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  auto model = FindRuntime("identity")->Load(*ModelConfig::FromSpec(*spec), LoadContext{});
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return std::move(model).value();
}

TEST(IdentityRuntime, DeterministicNormalizedVectorsThatDependOnTheText) {
  auto m = Load();
  std::vector<EncodeInput> in = {{"hello world"}, {"hello  world "}, {"hello there"}};
  std::vector<EncodeOutput> out(3);
  ASSERT_TRUE(m->Encode(in, out).ok());
  for (auto& o : out) {
    ASSERT_TRUE(o.status.ok());
    ASSERT_EQ(o.dense.size(), 16u);
    double n = 0;
    for (float x : o.dense) n += x * x;
    EXPECT_NEAR(n, 1.0, 1e-5);
  }
  EXPECT_EQ(out[0].dense, out[1].dense) << "same tokens, same vector";
  EXPECT_NE(out[0].dense, out[2].dense);
  EXPECT_EQ(out[0].tokens, 2u);
  EXPECT_EQ(out[0].dense, IdentityVector(IdentityTokens("hello world"), 16, true));
}

TEST(IdentityRuntime, TooLongIsAnErrorUnlessTruncating) {
  auto m = Load();
  std::vector<EncodeInput> in = {{"a b c d e f", false}, {"a b c d e f", true}, {"a b c d", false}};
  std::vector<EncodeOutput> out(3);
  ASSERT_TRUE(m->Encode(in, out).ok());
  EXPECT_EQ(out[0].status.code(), Code::kInvalidInput);
  EXPECT_NE(out[0].status.message().find("6 tokens, over the model's limit of 4"), std::string::npos);
  ASSERT_TRUE(out[1].status.ok());
  EXPECT_EQ(out[1].tokens, 4u);
  EXPECT_EQ(out[1].dense, out[2].dense) << "truncated to the first 4 tokens";
}

TEST(IdentityRuntime, UnnormalizedVectorsKeepTheirScale) {
  auto m = Load();
  std::vector<EncodeInput> in = {{"x", false, false}};
  std::vector<EncodeOutput> out(1);
  ASSERT_TRUE(m->Encode(in, out).ok());
  double n = 0;
  for (float x : out[0].dense) n += x * x;
  EXPECT_GT(std::abs(n - 1.0), 1e-3);
}

TEST(IdentityRuntime, FailOnFailsOnlyTheInputsThatContainIt) {
  auto m = Load("identity: {dim: 16, fail_on: boom}");
  std::vector<EncodeInput> in = {{"fine"}, {"it goes boom here"}, {"also fine"}};
  std::vector<EncodeOutput> out(3);
  ASSERT_TRUE(m->Encode(in, out).ok()) << "the batch runs; the item fails";
  EXPECT_TRUE(out[0].status.ok());
  EXPECT_EQ(out[1].status.code(), Code::kInferenceError);
  EXPECT_NE(out[1].status.message().find("fail_on"), std::string::npos) << out[1].status.message();
  EXPECT_TRUE(out[2].status.ok());
  EXPECT_EQ(out[2].dense, IdentityVector(IdentityTokens("also fine"), 16, true));

  auto spec = ModelSpec::Parse("id: t\nruntime: identity\nidentity: {fail_on: 3}\n");
  ASSERT_TRUE(spec.ok());
  auto bad = FindRuntime("identity")->Load(*ModelConfig::FromSpec(*spec), LoadContext{});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("identity.fail_on"), std::string::npos);
}

TEST(IdentityRuntime, AdaptersAnswerTheirOwnVectorsAndUnknownOnesFail) {
  auto m = Load();
  const std::vector<LoraConfig> loras = {{.name = "alpha", .path = "/a"}, {.name = "beta", .path = "/b"}};
  ASSERT_TRUE(m->UpdateLoras(loras).ok());
  std::vector<EncodeInput> in = {{.text = "hello world"},
                                 {.text = "hello world", .lora = "alpha"},
                                 {.text = "hello world", .lora = "beta"},
                                 {.text = "hello world", .lora = "gamma"},
                                 {.text = "hello world", .lora = "alpha"}};
  std::vector<EncodeOutput> out(in.size());
  ASSERT_TRUE(m->Encode(in, out).ok()) << "adapters mix in one batch";
  const auto tokens = IdentityTokens("hello world");
  EXPECT_EQ(out[0].dense, IdentityVector(tokens, 16, true));
  EXPECT_EQ(out[1].dense, IdentityVector(tokens, 16, true, "alpha"));
  EXPECT_EQ(out[2].dense, IdentityVector(tokens, 16, true, "beta"));
  EXPECT_NE(out[1].dense, out[0].dense);
  EXPECT_NE(out[1].dense, out[2].dense);
  EXPECT_EQ(out[1].dense, out[4].dense) << "deterministic";
  EXPECT_EQ(out[3].status.code(), Code::kModelNotFound);
  EXPECT_NE(out[3].status.message().find("has no LoRA 'gamma'"), std::string::npos) << out[3].status.message();
  double n = 0;
  for (float x : out[1].dense) n += x * x;
  EXPECT_NEAR(n, 1.0, 1e-5) << "normalized like the base";

  // A new list replaces the old one.
  ASSERT_TRUE(m->UpdateLoras(std::vector<LoraConfig>{{.name = "beta", .path = "/b"}}).ok());
  std::vector<EncodeOutput> again(2);
  std::vector<EncodeInput> in2 = {{.text = "x", .lora = "alpha"}, {.text = "x", .lora = "beta"}};
  ASSERT_TRUE(m->Encode(in2, again).ok());
  EXPECT_EQ(again[0].status.code(), Code::kModelNotFound);
  EXPECT_TRUE(again[1].status.ok());
}

TEST(IdentityRuntime, CheckLoraWantsAPeftDirectory) {
  const auto dir = std::filesystem::temp_directory_path() / ("shoal-identity-lora-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto base = ModelSpec::Parse("id: t\nruntime: identity\n");
  ASSERT_TRUE(base.ok());
  Runtime* rt = FindRuntime("identity");
  auto missing = rt->CheckLora(*ModelConfig::FromSpec(*base), {.name = "a", .path = dir.string()});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kInvalidInput);
  EXPECT_NE(missing.status().message().find("adapter_config.json"), std::string::npos);
  auto nowhere = rt->CheckLora(*ModelConfig::FromSpec(*base), {.name = "a", .path = (dir / "nope").string()});
  ASSERT_FALSE(nowhere.ok());
  EXPECT_NE(nowhere.status().message().find("not a directory"), std::string::npos);
  std::ofstream(dir / "adapter_config.json") << "{}";
  auto ok = rt->CheckLora(*ModelConfig::FromSpec(*base), {.name = "a", .path = dir.string()});
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, kIdentityLoraBytes);
}

TEST(IdentityRuntime, RejectsBadOptions) {
  auto spec = ModelSpec::Parse("id: t\nruntime: identity\nidentity: {dims: 3}\n");
  ASSERT_TRUE(spec.ok());
  auto model = FindRuntime("identity")->Load(*ModelConfig::FromSpec(*spec), LoadContext{});
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("unknown option 'dims'"), std::string::npos);
  EXPECT_EQ(FindRuntime("no-such-runtime"), nullptr);
}

}  // namespace
}  // namespace shoal
