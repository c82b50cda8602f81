#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "worker/sequence_engine.h"

namespace shoal::worker {
namespace {

SamplingConfig Params(float temperature, float top_p = 1.0f, int32_t top_k = 0) {
  return {.temperature = temperature, .top_p = top_p, .top_k = top_k};
}

TEST(Sampler, GreedyTakesTheLargestLogitAndReportsItsLogProbability) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 1.0f};
  Sampler s(Params(0), 1);
  float lp = 0;
  EXPECT_EQ(s.Next(logits.data(), logits.size(), &lp), 1);
  double z = 0;
  for (float l : logits) z += std::exp(l);
  EXPECT_NEAR(lp, 2.0 - std::log(z), 1e-6);
}

TEST(Sampler, TheSameSeedGivesTheSameTokens) {
  std::vector<float> logits(1000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i)) * 3;
  Sampler a(Params(1.0f, 0.9f), 42), b(Params(1.0f, 0.9f), 42), c(Params(1.0f, 0.9f), 43);
  int differ = 0;
  for (int i = 0; i < 50; ++i) {
    const int32_t x = a.Next(logits.data(), logits.size(), nullptr);
    EXPECT_EQ(x, b.Next(logits.data(), logits.size(), nullptr));
    differ += x != c.Next(logits.data(), logits.size(), nullptr);
  }
  EXPECT_GT(differ, 0);
}

TEST(Sampler, TopKAndTopPKeepOnlyTheHead) {
  // Probabilities ∝ 8, 4, 2, 1, 1 (logits log of those).
  const std::vector<float> logits = {std::log(8.f), std::log(4.f), std::log(2.f), 0.f, 0.f};
  Sampler top_k(Params(1.0f, 1.0f, 2), 7);
  Sampler top_p(Params(1.0f, 0.7f), 7);  // 8/16 = .5 < .7 ≤ 12/16: tokens 0 and 1
  std::map<int32_t, int> seen_k, seen_p;
  for (int i = 0; i < 2000; ++i) {
    ++seen_k[top_k.Next(logits.data(), logits.size(), nullptr)];
    ++seen_p[top_p.Next(logits.data(), logits.size(), nullptr)];
  }
  for (const auto& seen : {seen_k, seen_p}) {
    EXPECT_EQ(seen.size(), 2u);
    // 2:1 between the two kept, within sampling noise.
    EXPECT_NEAR(static_cast<double>(seen.at(0)) / 2000, 2.0 / 3, 0.05);
  }
}

TEST(Sampler, TemperatureSharpensTheDistribution) {
  const std::vector<float> logits = {1.0f, 0.0f};
  Sampler cold(Params(0.1f), 3), warm(Params(1.0f), 3);
  int cold_top = 0, warm_top = 0;
  for (int i = 0; i < 2000; ++i) {
    cold_top += cold.Next(logits.data(), 2, nullptr) == 0;
    warm_top += warm.Next(logits.data(), 2, nullptr) == 0;
  }
  EXPECT_GT(cold_top, 1990);                                        // e^10 : 1
  EXPECT_NEAR(warm_top / 2000.0, std::exp(1.0) / (std::exp(1.0) + 1), 0.04);  // ≈ .73
}

TEST(Sampler, SeedFromRequestIdIsStable) {
  EXPECT_EQ(SeedFromRequestId("gw-1-7"), SeedFromRequestId("gw-1-7"));
  EXPECT_NE(SeedFromRequestId("gw-1-7"), SeedFromRequestId("gw-1-8"));
}

}  // namespace
}  // namespace shoal::worker
