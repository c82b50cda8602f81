#include "gateway/stalled_pools.h"

#include <gtest/gtest.h>

namespace shoal::gateway {
namespace {

TEST(StalledPools, APoolIsStalledFromItsFirstMarkUntilItsClear) {
  StalledPools pools;
  EXPECT_TRUE(pools.empty());
  EXPECT_FALSE(pools.Contains("default"));
  EXPECT_FALSE(pools.Clear("default")) << "nothing to clear";

  EXPECT_TRUE(pools.Mark("default"));
  EXPECT_FALSE(pools.Mark("default")) << "a second lane's mark changes nothing";
  EXPECT_TRUE(pools.Mark("gpu"));
  EXPECT_FALSE(pools.empty());
  EXPECT_TRUE(pools.Contains("default"));
  EXPECT_TRUE(pools.Contains("gpu"));
  EXPECT_FALSE(pools.Contains("cpu"));

  EXPECT_TRUE(pools.Clear("default"));
  EXPECT_FALSE(pools.Clear("default"));
  EXPECT_FALSE(pools.Contains("default"));
  EXPECT_TRUE(pools.Contains("gpu"));
  EXPECT_TRUE(pools.Clear("gpu"));
  EXPECT_TRUE(pools.empty());
}

}  // namespace
}  // namespace shoal::gateway
