// The runtime contract's own parts (runtime/): a runtime of another version
// is refused by the registry, a profile's runtime section arrives typed and
// an option nobody reads is refused, and a model's config carries only what
// a runtime needs.
#include <gtest/gtest.h>

#include "runtime/model_config.h"
#include "runtime/registry/registry.h"
#include "runtime/runtime.h"
#include "runtime/runtime_options.h"

namespace shoal {
namespace {

class VersionedRuntime final : public Runtime {
 public:
  explicit VersionedRuntime(int version, std::string name = "versioned") : version_(version), name_(name) {}
  std::string_view name() const override { return name_; }
  int api_version() const override { return version_; }
  std::vector<Task> tasks() const override { return {Task::kEncode}; }
  Result<std::unique_ptr<Model>> Load(const ModelConfig&, const LoadContext&) override {
    return InvalidInput("not a real runtime");
  }

 private:
  int version_;
  std::string name_;
};

TEST(RuntimeRegistry, RefusesARuntimeOfAnotherVersion) {
  RuntimeRegistry r;
  const Status old = r.Register(std::make_unique<VersionedRuntime>(kRuntimeApiVersion - 1));
  EXPECT_EQ(old.code(), Code::kInvalidInput);
  EXPECT_EQ(old.message(), "runtime 'versioned' implements version " + std::to_string(kRuntimeApiVersion - 1) +
                               " of the runtime contract; this Shoal speaks version " +
                               std::to_string(kRuntimeApiVersion));
  EXPECT_EQ(r.Find("versioned"), nullptr);
  EXPECT_TRUE(r.Register(std::make_unique<VersionedRuntime>(kRuntimeApiVersion)).ok());
  EXPECT_NE(r.Find("versioned"), nullptr);
  EXPECT_FALSE(r.Register(std::make_unique<VersionedRuntime>(kRuntimeApiVersion)).ok()) << "the name is taken";
}

TEST(RuntimeRegistry, TheBuiltInsSpeakThisVersion) {
  for (const char* name : {"identity", "native"}) {
    Runtime* r = FindRuntime(name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_EQ(r->api_version(), kRuntimeApiVersion) << name;
  }
  EXPECT_EQ(FindRuntime("nope"), nullptr);
}

TEST(RuntimeOptions, ArriveTypedAndWhatNobodyReadsIsRefused) {
  auto o = RuntimeOptions::FromJson("native", R"({"precision":"bf16","max_context":1024,"fast":true})");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  OptionReader read(*o);
  std::string precision = "f32";
  ASSERT_TRUE(read.OneOf("precision", {"f32", "bf16"}, &precision).ok());
  EXPECT_EQ(precision, "bf16");
  uint32_t context = 0;
  ASSERT_TRUE(read.Count("max_context", 0, 4096, &context).ok());
  EXPECT_EQ(context, 1024u);
  uint32_t absent = 7;
  ASSERT_TRUE(read.Count("kv_block_tokens", 1, 64, &absent).ok());
  EXPECT_EQ(absent, 7u) << "an absent option keeps its default";
  EXPECT_EQ(read.Finish().message(), "native: unknown option 'fast'");
  bool fast = false;
  ASSERT_TRUE(read.Bool("fast", &fast).ok());
  EXPECT_TRUE(fast);
  EXPECT_TRUE(read.Finish().ok());
}

TEST(RuntimeOptions, WrongTypesAndRangesNameTheOption) {
  auto o = RuntimeOptions::FromJson("identity", R"({"dim":0,"fail_on":3,"precision":"f16"})");
  ASSERT_TRUE(o.ok());
  OptionReader read(*o);
  uint32_t dim = 384;
  EXPECT_EQ(read.Count("dim", 1, 65536, &dim).message(), "identity.dim: expected a whole number from 1 to 65536");
  std::string fail_on;
  EXPECT_EQ(read.String("fail_on", &fail_on).message(), "identity.fail_on: expected a string");
  std::string precision = "f32";
  EXPECT_EQ(read.OneOf("precision", {"f32", "bf16"}, &precision).message(),
            "identity.precision: expected one of f32, bf16");
  EXPECT_EQ(RuntimeOptions::FromJson("native", R"({"pooling":{"kind":"cls"}})").status().message(),
            "native.pooling: expected a value (a boolean, number or string)");
  EXPECT_EQ(RuntimeOptions::FromJson("native", "[1]").status().message(), "native: expected a mapping of options");
}

TEST(ModelConfig, CarriesWhatTheRuntimeNeedsAndItsSection) {
  auto spec = ModelSpec::Parse(R"(
id: org/m
runtime: identity
task: score
pool: gpu
max_input_tokens: 256
batching: {max_batch_tokens: 4096, max_batch_requests: 16}
identity: {dim: 8}
)");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto c = ModelConfig::FromSpec(*spec);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->id, "org/m");
  EXPECT_EQ(c->task, Task::kScore);
  EXPECT_EQ(c->max_input_tokens, 256u);
  EXPECT_EQ(c->max_batch_tokens, 4096u);
  EXPECT_EQ(c->max_batch_requests, 16u);
  EXPECT_EQ(c->options.section(), "identity");
  ASSERT_EQ(c->options.values().size(), 1u);
  EXPECT_EQ(std::get<int64_t>(c->options.values().at("dim")), 8);
}

}  // namespace
}  // namespace shoal
