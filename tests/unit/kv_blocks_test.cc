#include "worker/kv_blocks.h"

#include <gtest/gtest.h>

#include <numeric>

namespace shoal::worker {
namespace {

std::vector<int32_t> Tokens(int n, int first = 1) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(KvBlocks, GrowTakesBlocksAndReleaseReturnsThem) {
  KvBlocks b(4, 16);
  std::vector<int32_t> table;
  EXPECT_TRUE(b.Grow(&table, 17));
  EXPECT_EQ(table.size(), 2u);
  EXPECT_EQ(b.available(), 2u);
  EXPECT_TRUE(b.Grow(&table, 32));  // still two blocks
  EXPECT_EQ(table.size(), 2u);
  std::vector<int32_t> other;
  EXPECT_FALSE(b.Grow(&other, 48));  // needs 3, 2 left: nothing taken
  EXPECT_TRUE(other.empty());
  EXPECT_EQ(b.available(), 2u);
  b.Release(&table);
  EXPECT_TRUE(table.empty());
  EXPECT_EQ(b.available(), 4u);
}

TEST(KvBlocks, PublishedPrefixIsAdoptedAndLeavesOneTokenToCompute) {
  KvBlocks b(8, 4);
  const auto prompt = Tokens(10);
  std::vector<int32_t> first;
  ASSERT_TRUE(b.Grow(&first, 11));
  uint32_t published = 0;
  b.Publish(prompt, 10, first, &published);
  EXPECT_EQ(published, 2u);  // positions 0–7 are two full blocks
  // Same prompt again: both full blocks are reused.
  std::vector<int32_t> second;
  EXPECT_EQ(b.AdoptPrefix(prompt, &second), 8u);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[0], first[0]);
  EXPECT_EQ(second[1], first[1]);
  // A prompt of exactly 8 tokens may adopt only the first block: its last
  // token must still run to give logits.
  std::vector<int32_t> third;
  EXPECT_EQ(b.AdoptPrefix(Tokens(8), &third), 4u);
  // A different second block: only the first matches.
  auto diverging = Tokens(10);
  diverging[5] = 99;
  std::vector<int32_t> fourth;
  EXPECT_EQ(b.AdoptPrefix(diverging, &fourth), 4u);
  EXPECT_EQ(b.counters().hits, 4u);
}

TEST(KvBlocks, CachedBlocksSurviveReleaseUntilTheRoomIsNeeded) {
  KvBlocks b(3, 4);
  const auto prompt = Tokens(9);
  std::vector<int32_t> t;
  ASSERT_TRUE(b.Grow(&t, 9));
  uint32_t published = 0;
  b.Publish(prompt, 9, t, &published);
  b.Release(&t);
  EXPECT_EQ(b.available(), 3u);  // two cached, one free: all takeable
  std::vector<int32_t> again;
  EXPECT_EQ(b.AdoptPrefix(prompt, &again), 8u);
  b.Release(&again);
  // Another sequence needs every block: the cached ones are evicted.
  std::vector<int32_t> big;
  ASSERT_TRUE(b.Grow(&big, 12));
  b.Release(&big);
  std::vector<int32_t> after;
  EXPECT_EQ(b.AdoptPrefix(prompt, &after), 0u);
}

TEST(KvBlocks, SharedBlocksAreFreedOnlyByTheLastHolder) {
  KvBlocks b(4, 2);
  const auto prompt = Tokens(5);
  std::vector<int32_t> a;
  ASSERT_TRUE(b.Grow(&a, 6));
  uint32_t published = 0;
  b.Publish(prompt, 5, a, &published);
  std::vector<int32_t> c;
  EXPECT_EQ(b.AdoptPrefix(prompt, &c), 4u);
  ASSERT_TRUE(b.Grow(&c, 6));
  EXPECT_EQ(b.available(), 0u);  // 3 + 1 own block, 2 shared
  b.Release(&a);
  EXPECT_EQ(b.available(), 1u);  // only a's unshared block came back
  b.Release(&c);
  EXPECT_EQ(b.available(), 4u);
}

TEST(KvBlocks, EachAdapterHasItsOwnPrefixes) {
  KvBlocks b(8, 4);
  const auto prompt = Tokens(10);
  std::vector<int32_t> base;
  ASSERT_TRUE(b.Grow(&base, 11));
  uint32_t published = 0;
  b.Publish(prompt, 10, base, &published);
  // The same tokens under an adapter: other keys and values, nothing shared.
  std::vector<int32_t> under;
  EXPECT_EQ(b.AdoptPrefix(prompt, "alpha", &under), 0u);
  ASSERT_TRUE(b.Grow(&under, 11));
  uint32_t under_published = 0;
  b.Publish(prompt, "alpha", 10, under, &under_published);
  EXPECT_EQ(under_published, 2u);
  // Each finds its own.
  std::vector<int32_t> base_again, alpha_again, beta;
  EXPECT_EQ(b.AdoptPrefix(prompt, &base_again), 8u);
  EXPECT_EQ(base_again[0], base[0]);
  EXPECT_EQ(b.AdoptPrefix(prompt, "alpha", &alpha_again), 8u);
  EXPECT_EQ(alpha_again[0], under[0]);
  EXPECT_NE(alpha_again[0], base[0]);
  EXPECT_EQ(b.AdoptPrefix(prompt, "beta", &beta), 0u);
}

}  // namespace
}  // namespace shoal::worker
