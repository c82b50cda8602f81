// Agreement with the JS reference (@energetic-ai/embeddings 0.2.0 on TF.js
// wasm): tests/reference/use_lite_reference.mjs embeds every sentence of the
// corpus one per embed() call; Shoal must produce identical token ids and a
// cosine ≥ 0.9999 per sentence. Runs the whole corpus as ONE packed batch on
// 2 threads, so batching is checked against the JS too. Prints the minimum
// cosine and the maximum absolute difference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "runtime/native/use_lite/use_lite.h"
#include "use_lite_dist.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;

const std::string kScript = SHOAL_USE_LITE_REFERENCE_SCRIPT;
const std::string kCorpus = SHOAL_USE_LITE_CORPUS;

// Runs `command` and returns its stdout; nullopt if it could not run or
// exited non-zero (its stderr goes to the test log).
std::optional<std::string> Capture(const std::string& command) {
  std::FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  int status = ::pclose(pipe);
  if (status != 0) return std::nullopt;
  return out;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

TEST(UseLiteReference, MatchesJsOnTheCorpus) {
  if (!fs::exists(kDist + "/model.json")) GTEST_SKIP() << "no USE-Lite package at " << kDist;
  if (std::system("command -v node >/dev/null 2>&1") != 0) GTEST_SKIP() << "node is not on PATH";
  const fs::path node_modules = fs::path(kDist).parent_path().parent_path().parent_path();
  if (!fs::exists(node_modules / "@energetic-ai/embeddings") ||
      !fs::exists(node_modules / "@energetic-ai/core"))
    GTEST_SKIP() << "the JS reference (@energetic-ai/embeddings, core) is not installed";

  std::vector<std::string> corpus;
  {
    std::ifstream in(kCorpus);
    ASSERT_TRUE(in) << kCorpus;
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      corpus.push_back(nlohmann::json::parse(line).get<std::string>());
    }
  }
  ASSERT_GE(corpus.size(), 26u);

  std::optional<std::string> out = Capture("node " + Quote(kScript) + " " + Quote(kCorpus));
  ASSERT_TRUE(out.has_value()) << "the reference script failed";
  std::vector<std::vector<int32_t>> js_ids;
  std::vector<std::vector<float>> js_vecs;
  size_t pos = 0;
  while (pos < out->size()) {
    size_t end = out->find('\n', pos);
    if (end == std::string::npos) end = out->size();
    if (end > pos) {
      nlohmann::json j = nlohmann::json::parse(out->substr(pos, end - pos));
      js_ids.push_back(j["ids"].get<std::vector<int32_t>>());
      js_vecs.push_back(j["embedding"].get<std::vector<float>>());
    }
    pos = end + 1;
  }
  ASSERT_EQ(js_ids.size(), corpus.size());

  auto model = UseLite::Load(kDist);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::vector<std::vector<int32_t>> ids;
  for (size_t i = 0; i < corpus.size(); ++i) {
    ids.push_back((*model)->Tokenize(corpus[i]));
    EXPECT_EQ(ids.back(), js_ids[i]) << "token ids differ for line " << i + 1 << ": " << corpus[i];
  }
  std::vector<float> vecs(corpus.size() * UseLite::kDim);
  ASSERT_TRUE((*model)->Embed(ids, true, vecs.data(), 2).ok());

  double min_cos = 1;
  float max_abs = 0;
  size_t worst = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    ASSERT_EQ(js_vecs[i].size(), UseLite::kDim);
    const float* a = &vecs[i * UseLite::kDim];
    const float* b = js_vecs[i].data();
    double dot = 0, na = 0, nb = 0;
    for (size_t k = 0; k < UseLite::kDim; ++k) {
      dot += double(a[k]) * b[k];
      na += double(a[k]) * a[k];
      nb += double(b[k]) * b[k];
      max_abs = std::max(max_abs, std::abs(a[k] - b[k]));
    }
    double cos = dot / std::sqrt(na * nb);
    EXPECT_GE(cos, 0.9999) << "line " << i + 1 << ": " << corpus[i];
    if (cos < min_cos) min_cos = cos, worst = i;
  }
  std::printf(
      "USE-Lite vs JS reference: %zu sentences, min cosine %.12f (line %zu), max |diff| %.3g\n",
      corpus.size(), min_cos, worst + 1, max_abs);
  RecordProperty("min_cosine", std::to_string(min_cos));
  RecordProperty("max_abs_diff", std::to_string(max_abs));
  EXPECT_LE(max_abs, 1e-4f);
}

}  // namespace
}  // namespace shoal::native
