// The tuning space for a model: its dimensions, the baseline exactly on the
// grid, and a point made into the spec that is registered.
#include "tune/space.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace shoal::tune {
namespace {

ModelSpec Identity(const std::string& extra = "") {
  auto spec = ModelSpec::Parse(
      "id: m\nruntime: identity\nmax_input_tokens: 128\n"
      "batching: {max_batch_tokens: 8192, max_batch_requests: 48, max_batch_wait_ms: 3}\n" +
          extra,
      "");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return *spec;
}

const Dimension& Dim(const Space& s, const std::string& name) {
  for (const auto& d : s.dims) {
    if (d.name == name) return d;
  }
  static Dimension none;
  ADD_FAILURE() << "no dimension " << name;
  return none;
}

TEST(TuneSpace, TheStartIsTheBaselineAndItsValuesAreOnTheGrids) {
  auto space = BuildSpace(Identity(), 2);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  const Params start = space->At(space->start);
  EXPECT_EQ(start.max_batch_requests, 48u) << "off the powers of two, added to the grid";
  EXPECT_EQ(start.max_batch_tokens, 8192u);
  EXPECT_EQ(start.max_batch_wait_ms, 3u);
  EXPECT_EQ(start.threads, 2u) << "0 (the worker's share) is the cores";
  EXPECT_EQ(start.precision, "") << "the identity runtime has no precision";
  EXPECT_EQ(Dim(*space, "precision").values.size(), 1u);
  EXPECT_EQ(Dim(*space, "threads").values, (std::vector<double>{1, 2}));
  EXPECT_EQ(Dim(*space, "max_batch_tokens").values.front(), 512);
  EXPECT_EQ(Dim(*space, "max_batch_wait_ms").values, (std::vector<double>{0, 1, 2, 3, 5, 10, 20}));
}

TEST(TuneSpace, OnlyTheNamedParametersAreSwept) {
  auto space = BuildSpace(Identity(), 4, {"max_batch_requests"});
  ASSERT_TRUE(space.ok());
  for (const auto& d : space->dims) {
    if (d.name != "max_batch_requests") { EXPECT_EQ(d.values.size(), 1u) << d.name; }
  }
  EXPECT_GT(Dim(*space, "max_batch_requests").values.size(), 5u);
  EXPECT_FALSE(BuildSpace(Identity(), 4, {"colour"}).ok());
  EXPECT_FALSE(BuildSpace(Identity(), 4, {"precision"}).ok()) << "the identity runtime has none";
  EXPECT_FALSE(BuildSpace(Identity("batching: {adaptive: {}}\n"), 4, {"max_batch_wait_ms"}).ok());
}

TEST(TuneSpace, NativeHuggingFaceModelsHavePrecision) {
  const std::string dir = ::testing::TempDir() + "/tune-space-model";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << "{}";
  auto spec =
      ModelSpec::Parse("id: m\nruntime: native\npath: " + dir + "\nnative: {precision: f32}\n", "");
  ASSERT_TRUE(spec.ok());
  auto space = BuildSpace(*spec, 2);
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  EXPECT_EQ(space->precisions, (std::vector<std::string>{"f32", "bf16", "int8"}));
  EXPECT_EQ(Dim(*space, "precision").values.size(), 3u);
  auto gated = BuildSpace(*spec, 2, {}, {"int8", "f32"});
  ASSERT_TRUE(gated.ok());
  EXPECT_EQ(Dim(*gated, "precision").values, (std::vector<double>{0, 1})) << "int8 refused; f32 is the baseline";
  EXPECT_EQ(space->At(space->start).precision, "f32");
  EXPECT_FALSE(Dim(*space, "precision").ordered);

  Params p = space->At(space->start);
  p.precision = "bf16";
  p.threads = 1;
  p.max_batch_requests = 8;
  const ModelSpec s = WithParams(*spec, p);
  EXPECT_EQ(nlohmann::json::parse(s.runtime_options_json)["precision"], "bf16");
  EXPECT_EQ(s.threads, 1u);
  EXPECT_EQ(s.batching.max_batch_requests, 8u);
  EXPECT_EQ(ParamsOf(s, 2), p);
}

}  // namespace
}  // namespace shoal::tune
