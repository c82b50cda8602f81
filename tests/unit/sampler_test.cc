#include "runtime/sampler.h"
#include "runtime/logit_adjustments.h"

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

TEST(Sampler, SequenceSeedIsStableAndDiffersPerOutput) {
  EXPECT_EQ(SequenceSeed(std::nullopt, "gw-1-7", 0), SequenceSeed(std::nullopt, "gw-1-7", 0));
  EXPECT_NE(SequenceSeed(std::nullopt, "gw-1-7", 0), SequenceSeed(std::nullopt, "gw-1-8", 0));
  // The request's own seed is used as it is for its first output; the
  // others (n > 1) differ from it and from each other.
  EXPECT_EQ(SequenceSeed(42, "gw-1-7", 0), 42u);
  EXPECT_EQ(SequenceSeed(42, "gw-1-8", 0), 42u);
  EXPECT_NE(SequenceSeed(42, "gw-1-7", 1), 42u);
  EXPECT_NE(SequenceSeed(42, "gw-1-7", 1), SequenceSeed(42, "gw-1-7", 2));
  EXPECT_EQ(SequenceSeed(42, "gw-1-7", 1), SequenceSeed(42, "gw-1-9", 1));
}

}  // namespace
}  // namespace shoal::worker

namespace shoal {

// The adjustments as OpenAI and vLLM define them, computed by hand.
TEST(TokenPenalties, AdjustAsDefined) {
  const std::vector<int32_t> prompt = {1, 2};
  TokenPenalties p({.presence_penalty = 0.5f, .frequency_penalty = 0.25f, .repetition_penalty = 2.0f,
                    .logit_bias = {{4, 10.0f}}, .min_tokens = 2},
                   prompt);
  p.Add(3);
  p.Add(3);
  p.Add(0);
  // Counts: 3 twice, 0 once. Seen: 1, 2 (prompt), 3, 0.
  std::vector<float> logits = {1.0f, -1.0f, 4.0f, 2.0f, 0.5f, 3.0f};
  p.Apply(logits.data(), logits.size(), /*generated=*/3, {5});
  EXPECT_FLOAT_EQ(logits[0], (1.0f - 0.25f - 0.5f) / 2);  // counted once, then repeated: positive, so divided
  EXPECT_FLOAT_EQ(logits[1], -1.0f * 2);                  // prompt only: negative, so multiplied
  EXPECT_FLOAT_EQ(logits[2], 4.0f / 2);
  EXPECT_FLOAT_EQ(logits[3], (2.0f - 2 * 0.25f - 0.5f) / 2);
  EXPECT_FLOAT_EQ(logits[4], 10.5f);  // biased, never seen
  EXPECT_FLOAT_EQ(logits[5], 3.0f);   // a stop token, past min_tokens
  // Before min_tokens, the stop tokens are refused.
  std::vector<float> early(6, 0.0f);
  p.Apply(early.data(), early.size(), /*generated=*/1, {5});
  EXPECT_TRUE(std::isinf(early[5]) && early[5] < 0);
}

}  // namespace shoal
