// UseLite: the reference values of /work/shared/notes/use-lite-forward.md
// §5 (JS output), empty sentences, the 128-token clip, batching (a packed
// batch of mixed lengths equals each sentence alone), threads, bad input.
#include "runtime/native/use_lite/use_lite.h"
#include "use_lite_dist.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace shoal::native {
namespace {

using Ids = std::vector<int32_t>;
using Vec = std::vector<float>;

constexpr size_t kDim = UseLite::kDim;

class UseLiteTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(kDist + "/model.json")) return;
    auto m = UseLite::Load(kDist);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(*m).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }
  void SetUp() override {
    if (model_ == nullptr) GTEST_SKIP() << "no USE-Lite package at " << kDist;
  }

  static std::vector<Vec> Embed(const std::vector<Ids>& batch, bool normalize = true,
                                int threads = 1) {
    Vec flat(batch.size() * kDim, NAN);
    Status s = model_->Embed(batch, normalize, flat.data(), threads);
    EXPECT_TRUE(s.ok()) << s.ToString();
    std::vector<Vec> rows;
    for (size_t b = 0; b < batch.size(); ++b)
      rows.emplace_back(flat.begin() + b * kDim, flat.begin() + (b + 1) * kDim);
    return rows;
  }
  static Vec EmbedOne(const Ids& ids, bool normalize = true) { return Embed({ids}, normalize)[0]; }

  static float MaxAbsDiff(const Vec& a, const Vec& b) {
    float d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
    return d;
  }

  // `n` ids cycling through ordinary vocabulary rows.
  static Ids Synthetic(size_t n, int32_t seed) {
    Ids ids(n);
    for (size_t j = 0; j < n; ++j)
      ids[j] = 6 + static_cast<int32_t>((seed * 7919 + j * 104729) % 7994);
    return ids;
  }

  static UseLite* model_;
};
UseLite* UseLiteTest::model_ = nullptr;

// §5: the JS reference's first four components.
TEST_F(UseLiteTest, ReferenceValues) {
  struct Case {
    std::string text;
    Ids ids;
    std::vector<float> head;
  };
  const std::vector<Case> cases = {
      {"hello world", {2002, 102, 311}, {-0.051497f, -0.054925f, -0.007691f, -0.049952f}},
      {"The quick brown fox jumps over the lazy dog.",
       {34, 2280, 3744, 1394, 152, 2009, 7, 132, 9, 6266, 959, 6},
       {-0.013534f, -0.042564f, 0.036843f, -0.005918f}},
      {":", {30, 57}, {-0.049740f, -0.048328f, 0.046080f, 0.010369f}},
      {"", {}, {0.002355f, -0.034875f, 0.013102f, -0.021176f}},
  };
  for (const Case& c : cases) {
    Ids ids = model_->Tokenize(c.text);
    EXPECT_EQ(ids, c.ids) << c.text;
    Vec v = EmbedOne(ids);
    for (size_t i = 0; i < 4; ++i)
      EXPECT_NEAR(v[i], c.head[i], 1e-5) << '"' << c.text << "\" [" << i << "]";
    double norm = 0;
    for (float x : v) norm += double(x) * x;
    EXPECT_NEAR(norm, 1.0, 1e-5);
  }
}

// An empty sentence is the L = 0 vector wherever it sits (the JS drops a
// trailing one and throws on [""]; Shoal does neither).
TEST_F(UseLiteTest, EmptySentenceAnywhereInTheBatch) {
  Vec alone = EmbedOne({});
  std::vector<Vec> rows = Embed({{}, model_->Tokenize("hello"), {}});
  EXPECT_LE(MaxAbsDiff(rows[0], alone), 1e-6f);
  EXPECT_LE(MaxAbsDiff(rows[2], alone), 1e-6f);
  EXPECT_NEAR(rows[0][0], 0.002355f, 1e-5);
  std::vector<Vec> all_empty = Embed({{}, {}});
  EXPECT_LE(MaxAbsDiff(all_empty[1], alone), 1e-6f);
}

TEST_F(UseLiteTest, UnnormalizedIsTheTanhOutput) {
  Ids ids = model_->Tokenize("The quick brown fox jumps over the lazy dog.");
  Vec raw = EmbedOne(ids, false);
  Vec unit = EmbedOne(ids, true);
  double norm = 0;
  for (float x : raw) {
    EXPECT_LE(std::abs(x), 1.0f);
    norm += double(x) * x;
  }
  norm = std::sqrt(norm);
  EXPECT_GT(std::abs(norm - 1.0), 1e-3);  // really not normalized
  for (size_t i = 0; i < kDim; ++i) EXPECT_NEAR(raw[i] / norm, unit[i], 1e-6);
}

TEST_F(UseLiteTest, BatchOfMixedLengthsEqualsEachAlone) {
  std::vector<Ids> batch = {
      model_->Tokenize("hello world"),
      Synthetic(1, 1),
      {},
      Synthetic(128, 2),
      Synthetic(37, 3),
      Synthetic(200, 4) /* clipped */,
      model_->Tokenize(":"),
      Synthetic(64, 5),
      {},
      Synthetic(5, 6),
  };
  for (int threads : {1, 2}) {
    std::vector<Vec> rows = Embed(batch, true, threads);
    for (size_t b = 0; b < batch.size(); ++b)
      EXPECT_LE(MaxAbsDiff(rows[b], EmbedOne(batch[b])), 1e-5f)
          << "sentence " << b << ", " << threads << " threads";
  }
}

// More tokens than one packed chunk holds: the batch is split, same results.
TEST_F(UseLiteTest, LargeBatchSpansChunks) {
  std::vector<Ids> batch;
  for (int s = 0; s < 40; ++s) batch.push_back(Synthetic(s % 3 == 0 ? 128 : 90 + s, s));
  std::vector<Vec> rows = Embed(batch, true, 2);
  for (size_t b : {size_t{0}, size_t{17}, size_t{22}, size_t{39}})
    EXPECT_LE(MaxAbsDiff(rows[b], EmbedOne(batch[b])), 1e-5f) << "sentence " << b;
}

TEST_F(UseLiteTest, ClipsToTheFirst128Tokens) {
  Ids long_ids = Synthetic(300, 9);
  Ids head(long_ids.begin(), long_ids.begin() + UseLite::kMaxTokens);
  EXPECT_EQ(EmbedOne(long_ids), EmbedOne(head));
  // Tokenize itself does not clip.
  std::string text;
  for (int i = 0; i < 200; ++i) text += "word ";
  EXPECT_GT(model_->Tokenize(text).size(), UseLite::kMaxTokens);
}

TEST_F(UseLiteTest, ConcurrentCallsAgree) {
  std::vector<Ids> batch = {model_->Tokenize("concurrency is fine"), Synthetic(100, 3),
                            Synthetic(17, 4)};
  std::vector<Vec> expected = Embed(batch);
  std::vector<std::vector<Vec>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { got[t] = Embed(batch); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, expected);
}

TEST_F(UseLiteTest, BadIdsAreInvalidInput) {
  Vec out(2 * kDim);
  std::vector<Ids> negative = {{2002}, {5, -1}};
  Status s = model_->Embed(negative, true, out.data(), 1);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("sentence 1"), std::string::npos) << s.message();
  std::vector<Ids> too_big = {{8002}};
  EXPECT_EQ(model_->Embed(too_big, true, out.data(), 1).code(), Code::kInvalidInput);
  std::vector<Ids> edge = {{8001}};  // the table has 8002 rows; 8000, 8001 are unused but valid
  EXPECT_TRUE(model_->Embed(edge, true, out.data(), 1).ok());
  EXPECT_TRUE(model_->Embed({}, true, nullptr, 1).ok());  // nothing to do
}

TEST_F(UseLiteTest, PiecesAndMemory) {
  EXPECT_EQ(model_->Piece(311), "▁world");
  EXPECT_EQ(model_->Piece(9999), "");
  // ~27 MB of float32 weights plus the vocabulary.
  EXPECT_GT(model_->memory_bytes(), 20u << 20);
  EXPECT_LT(model_->memory_bytes(), 80u << 20);
}

TEST(UseLiteLoad, MissingDirectoryIsModelLoadFailed) {
  auto m = UseLite::Load("/nonexistent/use-lite");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kModelLoadFailed);
  EXPECT_NE(m.status().message().find("/nonexistent/use-lite/"), std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace shoal::native
