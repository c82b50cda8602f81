#include "worker/cancelled_requests.h"

#include <gtest/gtest.h>

namespace shoal::worker {
namespace {

TEST(CancelledRequests, KeepsAnIdUntilItsDeadline) {
  CancelledRequests c;
  EXPECT_TRUE(c.AddNotice("gw-1-0-42 5000", 1000));
  EXPECT_TRUE(c.Contains("gw-1-0-42"));
  EXPECT_FALSE(c.Contains("gw-1-0-43"));
  c.Add("later", 9000, 6000);  // pruning happens as ids come in
  EXPECT_FALSE(c.Contains("gw-1-0-42")) << "past its deadline: an expired item is dropped anyway";
  EXPECT_TRUE(c.Contains("later"));
  c.Add("already-over", 5000, 6000);
  EXPECT_FALSE(c.Contains("already-over"));
}

TEST(CancelledRequests, MalformedNoticesAreRefused) {
  CancelledRequests c;
  for (const char* bad : {"", "no-deadline", " 5000", "id 50x0", "id "}) {
    EXPECT_FALSE(c.AddNotice(bad, 0)) << "'" << bad << "'";
  }
  EXPECT_EQ(c.size(), 0u);
}

TEST(CancelledRequests, IsBoundedAndDropsTheNearestDeadlineFirst) {
  CancelledRequests c(2);
  c.Add("a", 3000, 0);
  c.Add("b", 1000, 0);
  c.Add("c", 2000, 0);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_FALSE(c.Contains("b"));
  EXPECT_TRUE(c.Contains("a"));
  EXPECT_TRUE(c.Contains("c"));
}

}  // namespace
}  // namespace shoal::worker
