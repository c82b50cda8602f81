// The identity runtime's test knob for the tuning loop: items past
// `efficient_batch` cost `us_per_excess_item` each. Sleeps are never
// shorter than asked, so only lower bounds on time are checked.
#include <gtest/gtest.h>

#include <chrono>

#include "runtime/identity/identity_runtime.h"
#include "runtime/registry/registry.h"

namespace shoal {
namespace {

double EncodeMs(Model& m, size_t items) {
  std::vector<EncodeInput> in(items, EncodeInput{"a b"});
  std::vector<EncodeOutput> out(items);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(m.Encode(in, out).ok());
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

TEST(IdentityEfficientBatch, ItemsPastTheEfficientSizeCostExtra) {
  auto spec = ModelSpec::Parse(
      "id: t\nruntime: identity\nidentity: {dim: 4, us_per_batch: 1000, efficient_batch: 2, "
      "us_per_excess_item: 30000}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto model = FindRuntime("identity")->Load(*ModelConfig::FromSpec(*spec), LoadContext{});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_GE(EncodeMs(**model, 5), 1 + 3 * 30.0) << "three items past two";
  // Up to the efficient size only the batch's own cost (an upper bound
  // would be a timing test; this one just runs).
  EncodeMs(**model, 2);

  auto bad = ModelSpec::Parse("id: t\nruntime: identity\nidentity: {efficient_batch: -1}\n");
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(FindRuntime("identity")->Load(*ModelConfig::FromSpec(*bad), LoadContext{}).ok());
}

}  // namespace
}  // namespace shoal
