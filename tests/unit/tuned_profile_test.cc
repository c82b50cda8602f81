// The `tuned:` section of a model profile: which entry applies, over what,
// and that the profile travels whole (ToJson keeps the profile's own values
// and every class's entry, so each machine applies its own).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/hardware.h"
#include "catalog/model_spec.h"

namespace shoal {
namespace {

using nlohmann::json;

constexpr const char* kProfile = R"(
id: m
runtime: native
path: /models/m
batching: {max_batch_tokens: 8192, max_batch_requests: 64, max_batch_wait_ms: 0}
native: {precision: f32, pooling: mean}
threads: 1
tuned:
  cpu-x86_64-avx512bf16-2c:
    batching: {max_batch_tokens: 4096, max_batch_requests: 32}
    native: {precision: bf16}
    threads: 2
    evidence: {knee_rps: 812.4, date: "2026-11-30"}
  cpu-x86_64-avx2-8c:
    batching: {max_batch_wait_ms: 5}
    future_field: whatever   # another class: not checked
)";

TEST(TunedProfile, TheEntryOfTheHardwareClassAppliesOverTheProfile) {
  auto spec = ModelSpec::Parse(kProfile, "cpu-x86_64-avx512bf16-2c");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->tuned.applied_class, "cpu-x86_64-avx512bf16-2c");
  // Batching: the fields the entry names replace the profile's; the others stay.
  EXPECT_EQ(spec->batching.max_batch_tokens, 4096u);
  EXPECT_EQ(spec->batching.max_batch_requests, 32u);
  EXPECT_EQ(spec->batching.max_batch_wait_ms, 0u);
  // Runtime options merge key by key, the entry winning.
  EXPECT_EQ(json::parse(spec->runtime_options_json),
            json::parse(R"({"precision": "bf16", "pooling": "mean"})"));
  EXPECT_EQ(spec->threads, 2u);
}

TEST(TunedProfile, OtherClassesAndNoClassLeaveTheProfilesOwnValues) {
  for (const char* hw : {"", "cpu-aarch64-neon-4c"}) {
    auto spec = ModelSpec::Parse(kProfile, hw);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->tuned.applied_class, "");
    EXPECT_EQ(spec->batching.max_batch_tokens, 8192u);
    EXPECT_EQ(spec->batching.max_batch_requests, 64u);
    EXPECT_EQ(json::parse(spec->runtime_options_json)["precision"], "f32");
    EXPECT_EQ(spec->threads, 1u);
    EXPECT_FALSE(spec->tuned.json.empty()) << "kept for ToJson";
  }
  auto avx2 = ModelSpec::Parse(kProfile, "cpu-x86_64-avx2-8c");
  EXPECT_FALSE(avx2.ok()) << "the applied entry is checked field by field";
}

TEST(TunedProfile, ToJsonCarriesTheProfileNotOneMachinesView) {
  auto here = ModelSpec::Parse(kProfile, "cpu-x86_64-avx512bf16-2c");
  ASSERT_TRUE(here.ok());
  const json j = json::parse(here->ToJson());
  EXPECT_EQ(j["batching"]["max_batch_requests"], 64)
      << "the profile's own value, not the applied one";
  EXPECT_EQ(j["native"]["precision"], "f32");
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["tuned"]["cpu-x86_64-avx512bf16-2c"]["threads"], 2);
  EXPECT_EQ(j["tuned"]["cpu-x86_64-avx2-8c"]["future_field"], "whatever");

  // Round trip on the same class: the same spec, the same JSON.
  auto again = ModelSpec::Parse(here->ToJson(), "cpu-x86_64-avx512bf16-2c");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->ToJson(), here->ToJson());
  EXPECT_EQ(again->batching.max_batch_requests, 32u);
  EXPECT_EQ(again->threads, 2u);

  // Another machine reads the same JSON and gets the profile's own values.
  auto there = ModelSpec::Parse(here->ToJson(), "cpu-aarch64-neon-4c");
  ASSERT_TRUE(there.ok());
  EXPECT_EQ(there->batching.max_batch_requests, 64u);
  EXPECT_EQ(there->threads, 1u);
}

TEST(TunedProfile, WithoutTunedIsTheProfilesOwnValues) {
  auto spec = ModelSpec::Parse(kProfile, "cpu-x86_64-avx512bf16-2c");
  ASSERT_TRUE(spec.ok());
  const ModelSpec base = spec->WithoutTuned();
  EXPECT_EQ(base.batching.max_batch_requests, 64u);
  EXPECT_EQ(base.threads, 1u);
  EXPECT_TRUE(base.tuned.json.empty());
  EXPECT_EQ(json::parse(base.ToJson()).count("tuned"), 0u);
  // Changing a field of the untuned spec shows in its JSON.
  ModelSpec changed = base;
  changed.batching.max_batch_requests = 8;
  EXPECT_EQ(json::parse(changed.ToJson())["batching"]["max_batch_requests"], 8);
}

TEST(TunedProfile, ThreadsWithoutATunedSection) {
  auto spec = ModelSpec::Parse("id: m\nruntime: identity\nthreads: 3\n", "");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->threads, 3u);
  EXPECT_EQ(json::parse(spec->ToJson())["threads"], 3);
  auto none = ModelSpec::Parse("id: m\nruntime: identity\n", "");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->threads, 0u);
  EXPECT_EQ(json::parse(none->ToJson()).count("threads"), 0u) << "absent stays absent";
}

TEST(TunedProfile, BadSectionsAreRefused) {
  const char* bad[] = {
      "id: m\nruntime: identity\ntuned: 3\n",
      "id: m\nruntime: identity\ntuned: {Not A Class: {}}\n",
      "id: m\nruntime: identity\ntuned: {cpu-a: 3}\n",
      "id: m\nruntime: identity\ntuned: {cpu-a: {batching: {adaptive: {}}}}\n",
      "id: m\nruntime: identity\ntuned: {cpu-a: {batching: {max_batch_requests: 0}}}\n",
      "id: m\nruntime: identity\ntuned: {cpu-a: {threads: -1}}\n",
      "id: m\nruntime: identity\ntuned: {cpu-a: {native: {precision: bf16}}}\n",  // not its runtime
      "id: m\nruntime: identity\ntuned: {cpu-a: {evidence: 3}}\n",
  };
  for (const char* text : bad) EXPECT_FALSE(ModelSpec::Parse(text, "cpu-a").ok()) << text;
  // An empty `tuned:` is no section.
  EXPECT_TRUE(ModelSpec::Parse("id: m\nruntime: identity\ntuned:\n", "cpu-a").ok());
}

TEST(TunedProfile, ParseWithoutAClassUsesThisMachines) {
  const std::string profile = std::string("id: m\nruntime: identity\ntuned:\n  ") +
                              CurrentHardwareClass() + ": {batching: {max_batch_requests: 7}}\n";
  auto spec = ModelSpec::Parse(profile);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->batching.max_batch_requests, 7u);
}

TEST(HardwareClass, KeysFromCpuFlags) {
  EXPECT_EQ(IsaLevel("x86_64", "fpu sse2 avx avx2 fma avx512f avx512_bf16 avx512bw"), "avx512bf16");
  EXPECT_EQ(IsaLevel("x86_64", "fpu avx2 fma avx512f avx512bw"), "avx512");
  EXPECT_EQ(IsaLevel("x86_64", "fpu avx2 fma"), "avx2");
  EXPECT_EQ(IsaLevel("x86_64", "fpu sse2"), "base");
  EXPECT_EQ(IsaLevel("x86_64", "avx512f avx512_bf16 amx_bf16 amx_tile"), "amx");
  EXPECT_EQ(IsaLevel("x86_64", "avx512_bf16"), "base") << "bf16 without avx512f is not the level";
  EXPECT_EQ(IsaLevel("aarch64", "fp asimd sve"), "sve");
  EXPECT_EQ(CpuHardwareClass("x86_64", "avx512bf16", 2), "cpu-x86_64-avx512bf16-2c");
  EXPECT_EQ(CudaHardwareClass(9, 0), "cuda-sm90");
  EXPECT_TRUE(IsHardwareClass("cpu-x86_64-avx512bf16-2c"));
  EXPECT_FALSE(IsHardwareClass("CPU x86"));
  EXPECT_FALSE(IsHardwareClass(""));
}

TEST(HardwareClass, ThisMachineHasAClassAndADescription) {
  const HardwareInfo& hw = ThisHardware();
  EXPECT_TRUE(IsHardwareClass(hw.hardware_class)) << hw.hardware_class;
  EXPECT_EQ(hw.hardware_class.rfind("cpu-", 0), 0u);
  EXPECT_GE(hw.cores, 1);
  EXPECT_NE(hw.Description().find("core"), std::string::npos) << hw.Description();
}

}  // namespace
}  // namespace shoal
