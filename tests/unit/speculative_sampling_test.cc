// Speculative decoding's pieces that need no model: the acceptance rule
// (Sampler::Verify) keeps the target's distribution exactly — tested
// statistically, with a seeded stream so the test is deterministic — and
// prompt lookup (NgramDrafter) proposes what followed the sequence's latest
// n-gram.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "runtime/sampler.h"
#include "worker/ngram_drafter.h"

namespace shoal {
namespace {

const std::vector<float> kLogits = {1.0f, 2.5f, 0.2f, 2.0f, -1.0f, 1.7f};

// Runs `trials` draft-and-verify rounds: a draft drawn from `q` (or always
// `certain` when q is empty), checked by a sampler of `config`; the share
// of each token it emits, and the share of drafts kept.
std::vector<double> Emitted(const SamplingConfig& config, const std::vector<float>& q, int32_t certain, int trials,
                            double* kept_share) {
  Sampler target(config, 11);
  Sampler draft({.temperature = 1.0f}, 12);
  std::vector<double> share(kLogits.size(), 0.0);
  int kept = 0;
  for (int i = 0; i < trials; ++i) {
    const int32_t d = q.empty() ? certain : draft.DrawFrom(q);
    bool accepted = false;
    const int32_t t = target.Verify(kLogits.data(), kLogits.size(), d, q, &accepted);
    if (accepted) {
      EXPECT_EQ(t, d);
      ++kept;
    }
    share[t] += 1.0 / trials;
  }
  *kept_share = static_cast<double>(kept) / trials;
  return share;
}

// Each share within 5 standard errors of its probability.
void ExpectDistribution(const std::vector<double>& share, const std::vector<float>& p, int trials) {
  for (size_t i = 0; i < p.size(); ++i) {
    const double pi = p[i];
    const double se = std::sqrt(std::max(1e-12, pi * (1 - pi) / trials));
    EXPECT_NEAR(share[i], p[i], 5 * se + 1e-9) << "token " << i;
  }
}

TEST(SpeculativeSampling, ADraftModelsProposalsLeaveTheTargetsDistributionAsItIs) {
  const SamplingConfig config{.temperature = 0.9f};
  Sampler probe(config, 1);
  std::vector<float> p;
  probe.Distribution(kLogits.data(), kLogits.size(), &p);
  // A draft that favours other tokens than the target does.
  const std::vector<float> q = {0.05f, 0.1f, 0.4f, 0.05f, 0.3f, 0.1f};
  const int trials = 200000;
  double kept = 0;
  ExpectDistribution(Emitted(config, q, -1, trials, &kept), p, trials);
  // Kept as often as the rule says: the sum over tokens of min(p, q).
  double overlap = 0;
  for (size_t i = 0; i < p.size(); ++i) overlap += std::min(p[i], q[i]);
  EXPECT_NEAR(kept, overlap, 0.01);
}

TEST(SpeculativeSampling, ACertainDraftIsKeptWithTheTargetsProbabilityOfIt) {
  const SamplingConfig config{.temperature = 1.0f};
  Sampler probe(config, 1);
  std::vector<float> p;
  probe.Distribution(kLogits.data(), kLogits.size(), &p);
  const int trials = 200000;
  double kept = 0;
  ExpectDistribution(Emitted(config, {}, 3, trials, &kept), p, trials);
  EXPECT_NEAR(kept, p[3], 0.01);
}

TEST(SpeculativeSampling, TruncationIsPartOfTheDistributionKept) {
  // top-k 3: tokens 1, 3 and 5 alone; top-p then trims within them.
  for (const SamplingConfig& config : {SamplingConfig{.temperature = 1.0f, .top_p = 1.0f, .top_k = 3},
                                       SamplingConfig{.temperature = 0.7f, .top_p = 0.8f, .top_k = 0}}) {
    Sampler probe(config, 1);
    std::vector<float> p;
    probe.Distribution(kLogits.data(), kLogits.size(), &p);
    EXPECT_EQ(p[0], 0.0f);
    EXPECT_EQ(p[4], 0.0f);
    const std::vector<float> q = {0.3f, 0.1f, 0.2f, 0.1f, 0.2f, 0.1f};  // much of it outside the nucleus
    const int trials = 200000;
    double kept = 0;
    ExpectDistribution(Emitted(config, q, -1, trials, &kept), p, trials);
  }
}

TEST(SpeculativeSampling, GreedyKeepsADraftOnlyWhenItIsTheArgmax) {
  Sampler greedy({.temperature = 0.0f}, 1);
  bool accepted = false;
  EXPECT_EQ(greedy.Verify(kLogits.data(), kLogits.size(), 1, {}, &accepted), 1);
  EXPECT_TRUE(accepted);
  EXPECT_EQ(greedy.Verify(kLogits.data(), kLogits.size(), 3, {}, &accepted), 1);
  EXPECT_FALSE(accepted);
}

std::vector<int32_t> Lookup(const std::vector<int32_t>& tokens, uint32_t k) {
  worker::NgramDrafter drafter;
  worker::DraftState state;
  SamplingConfig sampling;
  std::vector<worker::DraftAsk> asks(1);
  asks[0].tokens = tokens;
  asks[0].sampling = &sampling;
  asks[0].state = &state;
  asks[0].k = k;
  EXPECT_TRUE(drafter.Propose(asks, 1).ok());
  return asks[0].proposed;
}

TEST(PromptLookup, ProposesWhatFollowedTheLatestEarlierOccurrenceOfTheLongestSuffix) {
  // "7 8 9" occurred twice before; the later one was followed by 4 5 6.
  EXPECT_EQ(Lookup({7, 8, 9, 1, 2, 3, 7, 8, 9, 4, 5, 6, 0, 7, 8, 9}, 3), (std::vector<int32_t>{4, 5, 6}));
  // At most k, and no further than the sequence goes.
  EXPECT_EQ(Lookup({7, 8, 9, 4, 5, 6, 0, 7, 8, 9}, 2), (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(Lookup({1, 2, 3, 1, 2}, 8), (std::vector<int32_t>{3, 1, 2}));
  // A shorter n-gram when the longest has no earlier occurrence.
  EXPECT_EQ(Lookup({5, 6, 1, 2, 9, 6}, 2), (std::vector<int32_t>{1, 2}));
  // Nothing to copy: no drafts.
  EXPECT_TRUE(Lookup({1, 2, 3, 4}, 4).empty());
  EXPECT_TRUE(Lookup({1}, 4).empty());
}

TEST(PromptLookup, DraftLengthFollowsTheAcceptanceRate) {
  EXPECT_EQ(worker::DraftLength(0.0, 8), 0u);  // not worth checking (but probed now and then)
  EXPECT_EQ(worker::DraftLength(0.29, 8), 0u);
  EXPECT_EQ(worker::DraftLength(0.35, 8), 1u);
  EXPECT_EQ(worker::DraftLength(0.5, 8), 1u);
  EXPECT_EQ(worker::DraftLength(0.75, 8), 3u);
  EXPECT_EQ(worker::DraftLength(0.95, 8), 8u);
  EXPECT_EQ(worker::DraftLength(1.0, 4), 4u);
}

}  // namespace
}  // namespace shoal
