// The CUDA encoder (models/bert_cuda.h), with each of its kernel choices,
// against transformers' BertModel / RobertaModel / *ForSequenceClassification
// in fp32 on the same GPU
// (tests/reference/torch_bert_gpu.py), on the seeded models of
// scripts/make-test-models: the tiny ones (head_dim 16) and, when present,
// bert-base (head_dim 64, lengths up to 512) and minilm-l6 (head_dim 32).
//
// The bound: bf16 weights and activations with fp32 accumulation, against the
// fp32 reference. Each output must have cosine ≥ 0.999 to the reference, and
// its largest elementwise error must be within 2× the error of the same
// model run by transformers in bf16 (SDPA), or 1 % of the output's scale,
// whichever is larger: no worse than the peer at the same precision.
//
// Paths: SHOAL_TEST_MODELS and SHOAL_TORCH_BERT (the environment wins over
// the build's defaults, so a build carried to a GPU machine still finds
// them); SHOAL_TORCH_PYTHON names the interpreter with torch and
// transformers (default python3).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "runtime/native/kernels/cuda/device_memory.h"
#include "runtime/native/models/bert_cuda.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string ModelDir(const std::string& name) { return Env("SHOAL_TEST_MODELS", SHOAL_TEST_MODELS) + "/" + name; }

struct Batch {
  std::vector<std::vector<int32_t>> ids, type_ids;
  std::vector<TokenSequence> seqs() const {
    std::vector<TokenSequence> s;
    for (size_t i = 0; i < ids.size(); ++i) s.push_back({ids[i], type_ids[i]});
    return s;
  }
};

// Seeded sequences of the given lengths; token types 0 then 1 (a pair) where
// the model has two; never the pad id (no tokenizer produces it).
Batch MakeBatch(const EncoderConfig& c, const std::vector<size_t>& lengths, uint32_t seed) {
  std::mt19937 rng(seed);
  Batch b;
  for (size_t len : lengths) {
    len = std::min<size_t>(len, c.max_tokens());
    std::vector<int32_t> ids(len), types(len, 0);
    for (auto& id : ids) {
      do id = static_cast<int32_t>(rng() % c.vocab_size); while (id == c.pad_token_id);
    }
    if (c.type_vocab_size > 1) {
      for (size_t j = len / 2; j < len; ++j) types[j] = 1;
    }
    b.ids.push_back(std::move(ids));
    b.type_ids.push_back(std::move(types));
  }
  return b;
}

using Outputs = std::vector<std::vector<double>>;

// transformers' output for each sequence in fp32 and in bf16, from one run
// of the script (importing torch costs seconds).
struct Reference {
  Outputs f32, bf16;
};
Reference Transformers(const std::string& dir, const Batch& b) {
  const fs::path tmp = fs::temp_directory_path() / ("shoal-cuda-ref-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  nlohmann::json j;
  for (size_t s = 0; s < b.ids.size(); ++s) j["inputs"].push_back({{"ids", b.ids[s]}, {"type_ids", b.type_ids[s]}});
  std::ofstream(tmp / "in.json") << j.dump();
  const std::string cmd = Env("SHOAL_TORCH_PYTHON", "python3") + " " + Env("SHOAL_TORCH_BERT", SHOAL_TORCH_BERT) +
                          " " + dir + " " + (tmp / "in.json").string() + " " + (tmp / "out.json").string() +
                          " --dtype f32,bf16";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  Reference r;
  std::ifstream f(tmp / "out.json");
  if (f) {
    const auto j_out = nlohmann::json::parse(f).at("by_dtype");
    r.f32 = j_out.at("f32").get<Outputs>();
    r.bf16 = j_out.at("bf16").get<Outputs>();
  }
  fs::remove_all(tmp);
  return r;
}

struct Error {
  double max_abs = 0;     // largest |got − want| over all outputs
  double scale = 0;       // largest |want|
  double min_cosine = 1;
};

Error Compare(const float* got, size_t width, const Outputs& want) {
  Error e;
  for (size_t s = 0; s < want.size(); ++s) {
    double dot = 0, ng = 0, nw = 0;
    for (size_t k = 0; k < width; ++k) {
      const double g = got[s * width + k], w = want[s][k];
      e.max_abs = std::max(e.max_abs, std::abs(g - w));
      e.scale = std::max(e.scale, std::abs(w));
      dot += g * w, ng += g * g, nw += w * w;
    }
    if (width > 1) e.min_cosine = std::min(e.min_cosine, dot / std::sqrt(ng * nw + 1e-30));
  }
  return e;
}

std::vector<float> Flatten(const Outputs& v) {
  std::vector<float> f;
  for (const auto& row : v) f.insert(f.end(), row.begin(), row.end());
  return f;
}

class CudaBertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda::DeviceCount() == 0) GTEST_SKIP() << "no CUDA GPU visible to this process";
  }

  std::unique_ptr<CudaBert> Load(const std::string& name, CudaKernelChoice kernels = {}) {
    const std::string dir = ModelDir(name);
    auto config = LoadEncoderConfig(dir);
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    if (!config.ok()) return nullptr;
    auto m = CudaBert::Load(dir, *config, 0, 4096, {}, kernels);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }

  // Runs the model on one packed batch of `lengths` with each kernel choice
  // (the serving one and the A/B's others), and checks each against
  // transformers.
  void ExpectMatchesTransformers(const std::string& name, const std::vector<size_t>& lengths) {
    auto config = LoadEncoderConfig(ModelDir(name));
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    const Batch b = MakeBatch(*config, lengths, 7);
    const auto seqs = b.seqs();
    const Reference ref = Transformers(ModelDir(name), b);
    const Outputs& want = ref.f32;
    const Outputs& peer = ref.bf16;
    ASSERT_EQ(want.size(), seqs.size());
    ASSERT_EQ(peer.size(), seqs.size());
    for (const CudaKernelChoice kernels :
         {CudaKernelChoice{false, false}, CudaKernelChoice{true, false}, CudaKernelChoice{true, true}}) {
      const std::string label = std::string(kernels.register_attention ? "register" : "staged") + " attention, " +
                                (kernels.activation_in_gemm ? "activation in the GEMM" : "separate activation");
      SCOPED_TRACE(label);
      auto m = Load(name, kernels);
      ASSERT_NE(m, nullptr);
      const EncoderConfig& c = m->config();
      const size_t width = m->has_classifier() ? c.num_labels : c.hidden_size;
      std::vector<float> got(seqs.size() * width);
      if (m->has_classifier()) {
        ASSERT_TRUE(m->Classify(seqs, got.data(), 1).ok());
      } else {
        auto pooling = LoadPoolingConfig(ModelDir(name));
        ASSERT_TRUE(pooling.ok());
        ASSERT_TRUE(m->Embed(seqs, pooling->pooling, pooling->normalize, got.data(), 1).ok());
      }
      const Error ours = Compare(got.data(), width, want);
      const Error theirs = Compare(Flatten(peer).data(), width, want);
      const double bound = std::max(2 * theirs.max_abs, 0.01 * ours.scale);
      std::printf("%s (%s): max |err| %.3g (transformers bf16: %.3g; bound %.3g), scale %.3g, min cosine %.6f\n",
                  name.c_str(), label.c_str(), ours.max_abs, theirs.max_abs, bound, ours.scale, ours.min_cosine);
      EXPECT_LE(ours.max_abs, bound);
      if (width > 1) {
        EXPECT_GE(ours.min_cosine, 0.999);
      }
    }
  }
};

TEST_F(CudaBertTest, EmbeddingsMatchTransformersOnTinyModels) {
  // Lengths around the attention kernel's 64-row tiles, packed in one batch.
  const std::vector<size_t> lengths = {1, 2, 15, 63, 64, 65, 100, 128};
  for (const char* name : {"bert-tiny-mean", "roberta-tiny", "bert-tiny-f16"}) {
    SCOPED_TRACE(name);
    ExpectMatchesTransformers(name, lengths);
  }
}

TEST_F(CudaBertTest, CrossEncoderLogitsMatchTransformers) {
  for (const char* name : {"cross-encoder-tiny", "roberta-cross-encoder-tiny"}) {
    SCOPED_TRACE(name);
    ExpectMatchesTransformers(name, {3, 17, 64, 90, 128});
  }
}

TEST_F(CudaBertTest, BertBaseShapesMatchTransformers) {
  // head_dim 64 and 32, up to 512 tokens: the benchmark's shapes.
  for (const char* name : {"bert-base", "minilm-l6"}) {
    if (!fs::exists(ModelDir(name))) {
      GTEST_SKIP() << name << " not generated (scripts/make-test-models --only " << name << ")";
    }
    SCOPED_TRACE(name);
    ExpectMatchesTransformers(name, {1, 33, 128, 129, 300, 512});
  }
}

TEST_F(CudaBertTest, APackedBatchEqualsEachSequenceAlone) {
  auto m = Load("bert-tiny-mean");
  ASSERT_NE(m, nullptr);
  const size_t H = m->config().hidden_size;
  const Batch b = MakeBatch(m->config(), {128, 1, 64, 65, 7, 127, 63, 2, 100, 33}, 11);
  const auto seqs = b.seqs();
  std::vector<float> together(seqs.size() * H);
  ASSERT_TRUE(m->Embed(seqs, Pooling::kMean, true, together.data(), 1).ok());
  for (size_t s = 0; s < seqs.size(); ++s) {
    std::vector<float> alone(H);
    ASSERT_TRUE(m->Embed(std::span(&seqs[s], 1), Pooling::kMean, true, alone.data(), 1).ok());
    for (size_t k = 0; k < H; ++k) {
      // GEMMs of other shapes may sum in another order: bf16-rounding apart.
      EXPECT_NEAR(together[s * H + k], alone[k], 1e-2) << "sequence " << s << " element " << k;
    }
  }
}

TEST_F(CudaBertTest, CallsFromSeveralThreadsAtOnceAgree) {
  auto m = Load("bert-tiny-mean");
  ASSERT_NE(m, nullptr);
  const size_t H = m->config().hidden_size;
  const Batch b = MakeBatch(m->config(), {40, 128, 5, 77}, 3);
  const auto seqs = b.seqs();
  std::vector<float> expected(seqs.size() * H);
  ASSERT_TRUE(m->Embed(seqs, Pooling::kCls, false, expected.data(), 1).ok());
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<float> got(seqs.size() * H);
      for (int i = 0; i < 25; ++i) {
        if (!m->Embed(seqs, Pooling::kCls, false, got.data(), 1).ok()) ++failures;
        for (size_t k = 0; k < got.size(); ++k) {
          if (std::abs(got[k] - expected[k]) > 1e-3f) ++mismatches;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GE(m->memory_bytes(), 0u);
}

TEST_F(CudaBertTest, BadInputsAreInvalidInputNotCrashes) {
  auto m = Load("bert-tiny-mean");
  ASSERT_NE(m, nullptr);
  const EncoderConfig& c = m->config();
  std::vector<float> out(c.hidden_size);
  const std::vector<int32_t> outside = {101, static_cast<int32_t>(c.vocab_size)};
  std::vector<TokenSequence> seqs = {{outside, {}}};
  EXPECT_EQ(m->Embed(seqs, Pooling::kCls, false, out.data(), 1).code(), Code::kInvalidInput);
  const std::vector<int32_t> too_long(c.max_tokens() + 1, 101);
  seqs = {{too_long, {}}};
  EXPECT_EQ(m->Embed(seqs, Pooling::kCls, false, out.data(), 1).code(), Code::kInvalidInput);
  const std::vector<int32_t> empty;
  seqs = {{empty, {}}};
  EXPECT_EQ(m->Embed(seqs, Pooling::kCls, false, out.data(), 1).code(), Code::kInvalidInput);
  EXPECT_EQ(m->Classify(seqs, out.data(), 1).code(), Code::kInvalidInput);  // no head
  // The model still serves after the rejections.
  const std::vector<int32_t> fine = {101, 102};
  seqs = {{fine, {}}};
  EXPECT_TRUE(m->Embed(seqs, Pooling::kCls, false, out.data(), 1).ok());
}

TEST_F(CudaBertTest, MemoryBytesIsWhatTheDeviceGaveUp) {
  size_t free_before = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_before, &total), cudaSuccess);
  auto m = Load("bert-tiny-mean");
  ASSERT_NE(m, nullptr);
  size_t free_after = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_after, &total), cudaSuccess);
  const size_t loaded = m->memory_bytes();
  // Weights (bf16) plus the first context, sized at load for 4096 tokens.
  const EncoderConfig& c = m->config();
  const size_t params = (static_cast<size_t>(c.vocab_size) + c.max_position_embeddings + c.type_vocab_size) *
                        c.hidden_size;
  EXPECT_GE(loaded, params * 2 + 4096 * c.hidden_size * 2);
  // The device lost at least what the model reports (allocations round up).
  EXPECT_GE(free_before - free_after, loaded * 9 / 10);
  // A batch over the reserve grows the context, and the count with it.
  const Batch b = MakeBatch(c, std::vector<size_t>(64, c.max_tokens()), 5);
  std::vector<float> out(b.ids.size() * c.hidden_size);
  ASSERT_TRUE(m->Embed(b.seqs(), Pooling::kCls, false, out.data(), 1).ok());
  EXPECT_GT(m->memory_bytes(), loaded);
  m.reset();
  size_t free_end = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_end, &total), cudaSuccess);
  EXPECT_GE(free_end + (size_t{64} << 20), free_before);  // all of it back, within the allocator's slack
}

TEST_F(CudaBertTest, NoSuchDeviceIsAnError) {
  auto config = LoadEncoderConfig(ModelDir("bert-tiny-mean"));
  ASSERT_TRUE(config.ok());
  auto m = CudaBert::Load(ModelDir("bert-tiny-mean"), *config, cuda::DeviceCount(), 16);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("GPU"), std::string::npos) << m.status().ToString();
}

}  // namespace
}  // namespace shoal::native
