#include "runtime/text_stream.h"

#include <gtest/gtest.h>

namespace shoal {
namespace {

TEST(TextStream, HoldsBackAPartialCharacterUntilItCompletes) {
  TextStream t({});
  // "é" is C3 A9; "€" is E2 82 AC, split over three tokens.
  EXPECT_EQ(t.Push("caf\xC3"), "caf");
  EXPECT_EQ(t.Push("\xA9 "), "\xC3\xA9 ");
  EXPECT_EQ(t.Push("\xE2"), "");
  EXPECT_EQ(t.Push("\x82"), "");
  EXPECT_EQ(t.Push("\xAC!"), "\xE2\x82\xAC!");
  EXPECT_EQ(t.Finish(), "");
}

TEST(TextStream, InvalidBytesBecomeReplacementCharacters) {
  TextStream t({});
  EXPECT_EQ(t.Push("a\x80" "b"), "a\xEF\xBF\xBD" "b");  // a stray continuation byte
  EXPECT_EQ(t.Push("\xC3" "x"), "\xEF\xBF\xBD" "x");    // a lead byte without its tail
  EXPECT_EQ(t.Push("\xE2\x82"), "");
  EXPECT_EQ(t.Finish(), "\xEF\xBF\xBD");  // cut off at the end
}

TEST(TextStream, StopsAtAStopStringAndLeavesItOut) {
  TextStream t({"</s>", "\n\n"});
  EXPECT_EQ(t.Push("Hello <"), "Hello ");  // "<" may begin "</s>"
  EXPECT_FALSE(t.stopped());
  EXPECT_EQ(t.Push("b>"), "<b>");  // it did not
  EXPECT_EQ(t.Push(" end</"), " end");
  EXPECT_EQ(t.Push("s> more"), "");
  EXPECT_TRUE(t.stopped());
  EXPECT_EQ(t.Push("ignored"), "");
  EXPECT_EQ(t.Finish(), "");
}

TEST(TextStream, AStopStringInsideOneTokenCutsIt) {
  TextStream t({"STOP"});
  EXPECT_EQ(t.Push("abcSTOPdef"), "abc");
  EXPECT_TRUE(t.stopped());
}

TEST(TextStream, AHeldBackPrefixThatNeverCompletesIsTextAfterAll) {
  TextStream t({"###"});
  EXPECT_EQ(t.Push("a ##"), "a ");
  EXPECT_EQ(t.Finish(), "##");
}

}  // namespace
}  // namespace shoal
