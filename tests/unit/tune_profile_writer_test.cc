// Writing a tuned entry into a profile as text: only the `tuned:` block
// changes, the rest of the file stays byte for byte, the block stays last,
// and a re-run replaces only its own hardware class's entry.
#include "tune/profile_writer.h"

#include <gtest/gtest.h>

#include "catalog/model_spec.h"

namespace shoal::tune {
namespace {

using ojson = nlohmann::ordered_json;

constexpr const char* kProfile = R"(# A profile with comments.
id: shoal/sample   # trailing comment
runtime: native
path: ../weights
batching:
  max_batch_tokens: 8192   # the untuned default
  max_batch_requests: 64
  max_batch_wait_ms: 0
native:
  precision: f32
)";

ojson Entry(int requests, const std::string& precision = "bf16") {
  ojson e;
  e["batching"] = {
      {"max_batch_tokens", 4096}, {"max_batch_requests", requests}, {"max_batch_wait_ms", 2}};
  e["native"] = {{"precision", precision}};
  e["threads"] = 2;
  e["evidence"] = {{"knee_rps", 812.4},
                   {"default_knee_rps", 455.1},
                   {"tuned_over_default", 1.785},
                   {"date", "2026-11-30"},
                   {"hardware", "AMD EPYC, 2 cores, 24 GiB"},
                   {"shoal", "0.1.0"}};
  return e;
}

TEST(TuneProfileWriter, FormatsAnEntry) {
  EXPECT_EQ(FormatTunedEntry("cpu-x86_64-avx2-4c", Entry(32)),
            "  cpu-x86_64-avx2-4c:\n"
            "    batching: {max_batch_tokens: 4096, max_batch_requests: 32, max_batch_wait_ms: 2}\n"
            "    native: {precision: bf16}\n"
            "    threads: 2\n"
            "    evidence:\n"
            "      knee_rps: 812.4\n"
            "      default_knee_rps: 455.1\n"
            "      tuned_over_default: 1.785\n"
            "      date: \"2026-11-30\"\n"
            "      hardware: \"AMD EPYC, 2 cores, 24 GiB\"\n"
            "      shoal: \"0.1.0\"\n");
}

TEST(TuneProfileWriter, AppendsABlockAndKeepsTheFileBeforeIt) {
  auto out = WriteTunedEntry(kProfile, "cpu-a", Entry(32));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->substr(0, std::string(kProfile).size()), kProfile);
  EXPECT_EQ(WithoutTunedBlock(*out).substr(0, std::string(kProfile).size()), kProfile);
  EXPECT_NE(out->find("\ntuned:\n  cpu-a:\n"), std::string::npos);

  // It parses, and applies on that class only.
  auto tuned = ModelSpec::Parse(*out, "cpu-a");
  ASSERT_TRUE(tuned.ok()) << tuned.status().ToString();
  EXPECT_EQ(tuned->batching.max_batch_requests, 32u);
  EXPECT_EQ(tuned->threads, 2u);
  auto other = ModelSpec::Parse(*out, "cpu-b");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->batching.max_batch_requests, 64u);
}

TEST(TuneProfileWriter, ARerunReplacesOnlyItsOwnClass) {
  auto first = WriteTunedEntry(kProfile, "cpu-a", Entry(32));
  ASSERT_TRUE(first.ok());
  auto second = WriteTunedEntry(*first, "cpu-b", Entry(8, "f32"));
  ASSERT_TRUE(second.ok());
  // cpu-b is appended after cpu-a, which is untouched.
  EXPECT_EQ(second->substr(0, first->size()), *first);

  auto third = WriteTunedEntry(*second, "cpu-a", Entry(16));
  ASSERT_TRUE(third.ok());
  // Only cpu-a's batching line changed.
  std::string expected = *second;
  const std::string old_line = "max_batch_requests: 32";
  expected.replace(expected.find(old_line), old_line.size(), "max_batch_requests: 16");
  EXPECT_EQ(*third, expected);

  // The same entry again: the same bytes.
  auto again = WriteTunedEntry(*third, "cpu-a", Entry(16));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *third);

  auto b = ModelSpec::Parse(*third, "cpu-b");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->batching.max_batch_requests, 8u);
}

TEST(TuneProfileWriter, KeepsOtherEntriesCommentsAndIndentation) {
  const std::string profile =
      std::string(kProfile) +
      "tuned:\n"
      "    # tuned on the big box\n"
      "    cpu-big:\n"
      "        batching: {max_batch_requests: 128}   # by hand, before the tool\n"
      "        evidence:\n"
      "            knee_rps: 9000\n"
      "\n"
      "    'cpu-a': {threads: 1}\n"
      "    cpu-z: {threads: 4}\n";
  auto out = WriteTunedEntry(profile, "cpu-a", Entry(32));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::string expected =
      std::string(kProfile) +
      "tuned:\n"
      "    # tuned on the big box\n"
      "    cpu-big:\n"
      "        batching: {max_batch_requests: 128}   # by hand, before the tool\n"
      "        evidence:\n"
      "            knee_rps: 9000\n"
      "\n" +
      FormatTunedEntry("cpu-a", Entry(32), 4) + "    cpu-z: {threads: 4}\n";
  EXPECT_EQ(*out, expected);
  auto spec = ModelSpec::Parse(*out, "cpu-big");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->batching.max_batch_requests, 128u);
}

TEST(TuneProfileWriter, MovesABlockFoundElsewhereToTheEnd) {
  const std::string before = "id: m\nruntime: identity\ntuned:\n  cpu-old: {threads: 1}\n";
  const std::string after = "# about pinning\npinned: true\n";
  auto out = WriteTunedEntry(before + after, "cpu-a", Entry(32));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "id: m\nruntime: identity\n" + after + "tuned:\n  cpu-old: {threads: 1}\n" +
                      FormatTunedEntry("cpu-a", Entry(32)));
  EXPECT_EQ(WithoutTunedBlock(*out), "id: m\nruntime: identity\n" + after);
}

TEST(TuneProfileWriter, HandlesAFileWithoutAFinalNewlineAndAnEmptyFlowBlock) {
  auto out = WriteTunedEntry("id: m\nruntime: identity", "cpu-a", Entry(4));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->rfind("id: m\nruntime: identity\n", 0), 0u);

  auto empty = WriteTunedEntry("id: m\nruntime: identity\ntuned: {}\n", "cpu-a", Entry(4));
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(*empty, "id: m\nruntime: identity\ntuned:\n" + FormatTunedEntry("cpu-a", Entry(4)));

  auto flow = WriteTunedEntry("id: m\nruntime: identity\ntuned: {cpu-b: {threads: 1}}\n", "cpu-a",
                              Entry(4));
  EXPECT_FALSE(flow.ok());
}

}  // namespace
}  // namespace shoal::tune
