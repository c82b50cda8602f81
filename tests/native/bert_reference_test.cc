// The native BERT-family engine against an independent reference forward
// pass (tests/reference/bert_reference.py: float64 torch tensor operations,
// its own safetensors reader) on the seeded random-weight models that
// scripts/make-test-models writes (the ctest fixture make_test_models).
// Sequences of mixed lengths run as one packed batch here and one by one
// there, so packing and attention isolation are checked too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "catalog/model_spec.h"
#include "runtime/native/models/bert.h"
#include "runtime/native/models/cpu_encoder.h"
#include "runtime/native/native_runtime.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;

struct Inputs {
  std::vector<std::vector<int32_t>> ids, type_ids;
};

// Seeded sequences: lengths from 1 to the model's limit, token types 0 then
// 1 (a pair) where the model has two.
Inputs MakeInputs(const EncoderConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Inputs in;
  for (size_t len : {size_t{1}, size_t{2}, size_t{5}, size_t{17}, size_t{64}, size_t{c.max_tokens()}}) {
    std::vector<int32_t> ids(len), types(len, 0);
    // Real token ids; the pad id never comes out of a tokenizer.
    for (auto& id : ids) {
      do id = static_cast<int32_t>(rng() % c.vocab_size); while (id == c.pad_token_id);
    }
    if (c.type_vocab_size > 1) {
      for (size_t j = len / 2; j < len; ++j) types[j] = 1;
    }
    in.ids.push_back(std::move(ids));
    in.type_ids.push_back(std::move(types));
  }
  return in;
}

// Runs the Python reference; one output vector per input.
std::vector<std::vector<double>> Reference(const std::string& model_dir, const Inputs& in) {
  const fs::path tmp = fs::temp_directory_path() / ("shoal-ref-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  nlohmann::json j;
  for (size_t s = 0; s < in.ids.size(); ++s) {
    j["inputs"].push_back({{"ids", in.ids[s]}, {"type_ids", in.type_ids[s]}});
  }
  std::ofstream(tmp / "in.json") << j.dump();
  const std::string cmd = std::string("/usr/bin/python3 ") + SHOAL_BERT_REFERENCE + " " + model_dir + " " +
                          (tmp / "in.json").string() + " " + (tmp / "out.json").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<std::vector<double>> out;
  std::ifstream f(tmp / "out.json");
  if (f) out = nlohmann::json::parse(f).at("outputs").get<std::vector<std::vector<double>>>();
  fs::remove_all(tmp);
  return out;
}

struct Diff {
  double max_abs = 0;
  double min_cosine = 1;
  double mean_cosine = 1;  // over the sequences, where width > 1
};

Diff Compare(const std::vector<float>& got, size_t width, const std::vector<std::vector<double>>& want) {
  Diff d;
  double cosine_sum = 0;
  for (size_t s = 0; s < want.size(); ++s) {
    double dot = 0, ng = 0, nw = 0;
    for (size_t k = 0; k < width; ++k) {
      const double g = got[s * width + k], w = want[s][k];
      d.max_abs = std::max(d.max_abs, std::abs(g - w));
      dot += g * w, ng += g * g, nw += w * w;
    }
    if (width > 1) d.min_cosine = std::min(d.min_cosine, dot / std::sqrt(ng * nw));
    cosine_sum += width > 1 ? dot / std::sqrt(ng * nw) : 1.0;
  }
  if (!want.empty()) d.mean_cosine = cosine_sum / static_cast<double>(want.size());
  return d;
}

// Runs the engine on `in` as one batch: pooled vectors or logits.
std::vector<float> RunEngine(const EncoderNetwork& bert, const PoolingConfig& pooling, const Inputs& in,
                             int threads) {
  std::vector<TokenSequence> seqs;
  for (size_t s = 0; s < in.ids.size(); ++s) seqs.push_back({in.ids[s], in.type_ids[s]});
  const auto& c = bert.config();
  const size_t width = bert.has_classifier() ? c.num_labels : c.hidden_size;
  std::vector<float> out(seqs.size() * width);
  Status st = bert.has_classifier() ? bert.Classify(seqs, out.data(), threads)
                                    : bert.Embed(seqs, pooling.pooling, pooling.normalize, out.data(), threads);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

class BertReference : public ::testing::TestWithParam<const char*> {};

TEST_P(BertReference, Fp32MatchesTheReference) {
  const std::string dir = std::string(SHOAL_TEST_MODELS) + "/" + GetParam();
  auto config = LoadEncoderConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto pooling = LoadPoolingConfig(dir);
  ASSERT_TRUE(pooling.ok()) << pooling.status().ToString();
  auto bert = LoadCpuEncoder(dir, *config, cpu::Precision::kF32);
  ASSERT_TRUE(bert.ok()) << bert.status().ToString();

  const Inputs in = MakeInputs(*config, 1234);
  const auto want = Reference(dir, in);
  ASSERT_EQ(want.size(), in.ids.size());
  const size_t width = (*bert)->has_classifier() ? config->num_labels : config->hidden_size;
  for (int threads : {1, 2}) {
    const Diff d = Compare(RunEngine(**bert, *pooling, in, threads), width, want);
    EXPECT_LE(d.max_abs, 1e-4) << GetParam() << " on " << threads << " thread(s)";
    std::printf("%s fp32 (%d thread%s): max |diff| %.2e over %zu sequences\n", GetParam(), threads,
                threads > 1 ? "s" : "", d.max_abs, in.ids.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Models, BertReference,
                         ::testing::Values("bert-tiny-mean", "bert-tiny-cls-bf16", "bert-tiny-f16", "roberta-tiny", "xlmr-tiny",
                                           "cross-encoder-tiny", "roberta-cross-encoder-tiny", "modernbert-tiny",
                                           "modernbert-reranker-tiny", "deberta-v3-tiny",
                                           "deberta-v3-classifier-tiny", "jina-v2-tiny", "jina-reranker-tiny",
                                           "distilbert-tiny", "distilbert-classifier-tiny", "mpnet-tiny",
                                           "mpnet-cross-encoder-tiny", "electra-tiny", "electra-cross-encoder-tiny"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

// A lower precision's stated bound against the float64 reference, on the
// seeded encoders of each family (bf16 and int8 below).
struct Bound {
  double max_abs, min_cosine, mean_cosine;
};
void ExpectWithin(cpu::Precision precision, const char* label, const Bound& bound) {
  for (const char* name : {"bert-tiny-mean", "cross-encoder-tiny", "modernbert-tiny", "deberta-v3-classifier-tiny"}) {
    const std::string dir = std::string(SHOAL_TEST_MODELS) + "/" + name;
    auto config = LoadEncoderConfig(dir);
    ASSERT_TRUE(config.ok());
    auto pooling = LoadPoolingConfig(dir);
    auto bert = LoadCpuEncoder(dir, *config, precision);
    ASSERT_TRUE(bert.ok()) << bert.status().ToString();
    const Inputs in = MakeInputs(*config, 99);
    const auto want = Reference(dir, in);
    ASSERT_EQ(want.size(), in.ids.size());
    const size_t width = (*bert)->has_classifier() ? config->num_labels : config->hidden_size;
    const Diff d = Compare(RunEngine(**bert, *pooling, in, 2), width, want);
    std::printf("%s %s: max |diff| %.2e, mean cosine %.6f, min cosine %.6f\n", name, label, d.max_abs,
                d.mean_cosine, d.min_cosine);
    EXPECT_LE(d.max_abs, bound.max_abs) << name;
    EXPECT_GE(d.min_cosine, bound.min_cosine) << name;
    EXPECT_GE(d.mean_cosine, bound.mean_cosine) << name;
  }
}

// bf16 weights and GEMMs: each product rounds its inputs to 8 significant
// bits (measured here: 5e-4 on unit vectors, 1.3e-3 on logits). The stated
// bound: within 5e-3 per component and cosine ≥ 0.9995 to the reference.
TEST(BertBf16, StaysWithinTheStatedBound) {
  ExpectWithin(cpu::Precision::kBF16, "bf16", {.max_abs = 5e-3, .min_cosine = 0.9995, .mean_cosine = 0.9995});
}

// int8 dense layers (per-channel weight scales, per-token activation
// scales; kernels.h): the bound a quantized variant must meet against its
// f32 version to be admitted (docs/evaluations.md), mean cosine ≥ 0.995 and
// min ≥ 0.98 (measured ≥ 0.9999), and within 2e-2 per component (measured
// ≤ 9e-3, a cross-encoder's one logit).
TEST(BertInt8, StaysWithinTheStatedBound) {
  ExpectWithin(cpu::Precision::kInt8, "int8", {.max_abs = 2e-2, .min_cosine = 0.98, .mean_cosine = 0.995});
}

// ModernBERT's layer layout and rope thetas, from transformers 4.48's keys
// (modernbert-tiny) and 5's (modernbert-reranker-tiny) alike; what it cannot
// run is refused naming the key.
TEST(ModernBertConfig, BothConfigFormatsAndTheRefusals) {
  for (const char* name : {"modernbert-tiny", "modernbert-reranker-tiny"}) {
    auto c = LoadEncoderConfig(std::string(SHOAL_TEST_MODELS) + "/" + name);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_TRUE(c->is_modernbert());
    EXPECT_EQ(c->modernbert.global_layers, (std::vector<bool>{true, false, false, true})) << name;
    EXPECT_EQ(c->modernbert.local_window, 8u);
    EXPECT_EQ(c->modernbert.global_rope_theta, 160000.0);
    EXPECT_EQ(c->modernbert.local_rope_theta, 10000.0);
    EXPECT_EQ(c->type_vocab_size, 0u);
    EXPECT_EQ(c->layer_norm_eps, 1e-5f);
  }
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("shoal-modernbert-config-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const nlohmann::json base =
      nlohmann::json::parse(std::ifstream(std::string(SHOAL_TEST_MODELS) + "/modernbert-tiny/config.json"));
  for (const auto& [key, value, says] :
       {std::tuple{"local_attention", nlohmann::json(1), "local_attention must be at least 2"},
        {"layer_types", nlohmann::json({"full_attention"}), "one type per layer"},
        {"layer_types", nlohmann::json({"full_attention", "chunked_attention", "full_attention", "full_attention"}),
         "'chunked_attention' is not supported"},
        {"rope_scaling", nlohmann::json({{"rope_type", "yarn"}, {"factor", 4.0}}), "rope_scaling is not supported"},
        {"classifier_pooling", nlohmann::json("max"), "classifier_pooling 'max'"},
        {"hidden_activation", nlohmann::json("swish"), "hidden_activation 'swish'"}}) {
    nlohmann::json config = base;
    config[key] = value;
    std::ofstream(dir / "config.json") << config.dump();
    auto c = LoadEncoderConfig(dir.string());
    ASSERT_FALSE(c.ok()) << key;
    EXPECT_NE(c.status().message().find(says), std::string::npos) << c.status().ToString();
  }
  fs::remove_all(dir);
}

// DeBERTa-v2/v3's relative rows: transformers' log buckets (the values are
// make_log_bucket_position's, worked out by hand from its formula), and
// what Shoal does not run refused by name.
TEST(DebertaV2Config, RelativeRowsAreTheLogBucketsAndTheRefusals) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("shoal-deberta-config-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const nlohmann::json base = {
      {"model_type", "deberta-v2"}, {"architectures", {"DebertaV2Model"}}, {"hidden_size", 64},
      {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"intermediate_size", 96}, {"hidden_act", "gelu"},
      {"vocab_size", 100}, {"max_position_embeddings", 512}, {"type_vocab_size", 0},
      {"position_biased_input", false}, {"relative_attention", true}, {"max_relative_positions", -1},
      {"position_buckets", 256}, {"norm_rel_ebd", "layer_norm"}, {"share_att_key", true},
      {"pos_att_type", {"p2c", "c2p"}}, {"layer_norm_eps", 1e-7}};
  std::ofstream(dir / "config.json") << base.dump();
  auto c = LoadEncoderConfig(dir.string());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const DebertaV2Config& d = c->deberta;
  EXPECT_TRUE(c->is_deberta_v2());
  EXPECT_TRUE(d.c2p && d.p2c);
  EXPECT_EQ(d.span(), 256u);
  EXPECT_EQ(d.max_relative_positions, 512u);
  for (const auto& [r, row] : {std::pair{0, 256}, {5, 261}, {-5, 251}, {127, 383}, {128, 384}, {129, 385},
                               {200, 425}, {-200, 87}, {511, 511}, {600, 511}, {-600, 0}}) {
    EXPECT_EQ(d.RelativeRow(r), row) << "distance " << r;
  }
  for (const auto& [key, value, says] :
       {std::tuple{"conv_kernel_size", nlohmann::json(3), "conv_kernel_size"},
        {"pos_att_type", nlohmann::json({"p2c", "p2p"}), "pos_att_type p2p"},
        {"share_att_key", nlohmann::json(false), "share_att_key false"},
        {"embedding_size", nlohmann::json(128), "embedding_size"},
        {"model_type", nlohmann::json("deberta"), "DeBERTa v1"},
        {"model_type", nlohmann::json("albert"), "model_type 'albert' is not an encoder the native runtime runs"}}) {
    nlohmann::json config = base;
    config[key] = value;
    std::ofstream(dir / "config.json") << config.dump();
    auto bad = LoadEncoderConfig(dir.string());
    ASSERT_FALSE(bad.ok()) << key;
    EXPECT_NE(bad.status().message().find(says), std::string::npos) << bad.status().ToString();
  }
  fs::remove_all(dir);
}

// MPNet's buckets as transformers' relative_position_bucket gives them
// (float32 torch, 32 buckets, max distance 128), at every switch of bucket
// and the powers of two where a float log one ulp low would fall short;
// the config's other names for its sizes and what it refuses.
TEST(MpnetConfig, BucketsAndTheConfig) {
  const std::vector<std::pair<int64_t, int32_t>> want = {
      {0, 0},    {-1, 1},   {1, 17},   {-7, 7},   {7, 23},    {-8, 8},    {8, 24},    {-11, 8},  {-12, 9},
      {-15, 9},  {-16, 10}, {16, 26},  {-22, 10}, {-23, 11},  {-31, 11},  {-32, 12},  {32, 28},  {-45, 12},
      {-46, 13}, {-63, 13}, {-64, 14}, {64, 30},  {-90, 14},  {-91, 15},  {-128, 15}, {128, 31}, {-511, 15},
      {511, 31}};
  for (const auto& [distance, bucket] : want) EXPECT_EQ(MpnetBucket(distance), bucket) << "distance " << distance;

  auto c = LoadEncoderConfig(std::string(SHOAL_TEST_MODELS) + "/mpnet-tiny");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->is_mpnet());
  EXPECT_EQ(c->type_vocab_size, 0u);
  EXPECT_EQ(c->max_tokens(), c->max_position_embeddings - 2) << "RoBERTa's positions after the pad";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("shoal-mpnet-config-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  nlohmann::json config =
      nlohmann::json::parse(std::ifstream(std::string(SHOAL_TEST_MODELS) + "/mpnet-tiny/config.json"));
  config["relative_attention_num_buckets"] = 64;
  std::ofstream(dir / "config.json") << config.dump();
  auto refused = LoadEncoderConfig(dir.string());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("relative_attention_num_buckets 64 is not supported"), std::string::npos)
      << refused.status().ToString();
  fs::remove_all(dir);
}

// ALiBi's slopes: the paper's geometric series for a power of two, else
// the power of two below's then every other one of the next's.
TEST(JinaBertConfig, AlibiSlopesAndTheFeedForwards) {
  EXPECT_EQ(AlibiSlopes(4), (std::vector<float>{0.25f, 0.0625f, 0.015625f, 0.00390625f}));
  EXPECT_EQ(AlibiSlopes(6), (std::vector<float>{0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f}));
  const std::vector<float> twelve = AlibiSlopes(12);
  ASSERT_EQ(twelve.size(), 12u);
  EXPECT_FLOAT_EQ(twelve[0], std::pow(2.0f, -1.0f));
  EXPECT_FLOAT_EQ(twelve[8], std::pow(2.0f, -0.5f));  // 16 heads' first

  auto c = LoadEncoderConfig(std::string(SHOAL_TEST_MODELS) + "/jina-v2-tiny");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->is_jina_bert());
  EXPECT_TRUE(c->jina.geglu);
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("shoal-jina-config-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const nlohmann::json base =
      nlohmann::json::parse(std::ifstream(std::string(SHOAL_TEST_MODELS) + "/jina-v2-tiny/config.json"));
  for (const auto& [key, value, says] :
       {std::tuple{"feed_forward_type", nlohmann::json("reglu"), "feed_forward_type 'reglu'"},
        {"model_type", nlohmann::json("roberta"), "position_embedding_type 'alibi'"},
        {"auto_map", nlohmann::json({{"AutoModel", "jinaai/jina-bert-v2-qk-post-norm--modeling_bert.JinaBertModel"}}),
         "qk-post-norm"}}) {
    nlohmann::json config = base;
    config[key] = value;
    std::ofstream(dir / "config.json") << config.dump();
    auto bad = LoadEncoderConfig(dir.string());
    ASSERT_FALSE(bad.ok()) << key;
    EXPECT_NE(bad.status().message().find(says), std::string::npos) << bad.status().ToString();
  }
  nlohmann::json bert = base;
  bert.erase("position_embedding_type");
  std::ofstream(dir / "config.json") << bert.dump();
  auto plain = LoadEncoderConfig(dir.string());
  ASSERT_FALSE(plain.ok()) << "geglu without ALiBi";
  EXPECT_NE(plain.status().message().find("without ALiBi"), std::string::npos) << plain.status().ToString();
  fs::remove_all(dir);
}

TEST(BertErrors, BadInputsAndBrokenModelsAreClearErrors) {
  const std::string dir = std::string(SHOAL_TEST_MODELS) + "/bert-tiny-mean";
  auto config = LoadEncoderConfig(dir);
  ASSERT_TRUE(config.ok());
  auto bert = Bert::Load(dir, *config, cpu::Precision::kF32);
  ASSERT_TRUE(bert.ok());
  std::vector<float> out(config->hidden_size);
  const std::vector<int32_t> bad_id = {101, static_cast<int32_t>(config->vocab_size), 102};
  TokenSequence seq{bad_id, {}};
  Status s = (*bert)->Embed({&seq, 1}, Pooling::kMean, true, out.data(), 1);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("outside the model's vocabulary"), std::string::npos) << s.ToString();

  // A config that disagrees with the weights.
  EncoderConfig wrong = *config;
  wrong.hidden_size *= 2;
  auto broken = Bert::Load(dir, wrong, cpu::Precision::kF32);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("has shape"), std::string::npos) << broken.status().ToString();
}

// The runtime path: profile → NativeRuntime → tokenizer → engine, including
// the limit and truncation, and tasks a model does not have.
TEST(NativeRuntime, EncodesScoresAndTokenizesThroughTheRuntimeInterface) {
  NativeRuntime runtime;
  auto spec = ModelSpec::Parse(std::string("id: t/bert\nruntime: native\nmax_input_tokens: 8\npath: ") +
                               SHOAL_TEST_MODELS + "/bert-tiny-mean\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto model = runtime.Load(*ModelConfig::FromSpec(*spec), LoadContext{2});
  ASSERT_TRUE(model.ok()) << model.status().ToString();

  const std::string long_text = "the river runs past the old mill and into the town where people stop";
  std::vector<EncodeInput> in = {{"the river"}, {long_text, false}, {long_text, true}};
  std::vector<EncodeOutput> out(in.size());
  ASSERT_TRUE((*model)->Encode(in, out).ok());
  ASSERT_TRUE(out[0].status.ok()) << out[0].status.ToString();
  EXPECT_EQ(out[0].dense.size(), 64u);
  EXPECT_EQ(out[0].tokens, 4u) << "[CLS] the river [SEP]";
  EXPECT_FALSE(out[0].truncated);
  EXPECT_EQ(out[1].status.code(), Code::kInvalidInput);
  EXPECT_NE(out[1].status.message().find("limit of 8"), std::string::npos) << out[1].status.ToString();
  ASSERT_TRUE(out[2].status.ok());
  EXPECT_TRUE(out[2].truncated);
  EXPECT_EQ(out[2].tokens, 8u);

  std::vector<TokenizeInput> tin = {{"the river", true}};
  std::vector<TokenizeOutput> tout(1);
  ASSERT_TRUE((*model)->Tokenize(tin, tout).ok());
  ASSERT_EQ(tout[0].tokens.size(), 4u);
  EXPECT_EQ(tout[0].tokens[0].text, "[CLS]");
  EXPECT_TRUE(tout[0].tokens[0].special);
  EXPECT_FALSE(tout[0].tokens[0].has_offsets);
  EXPECT_EQ(tout[0].tokens[2].text, "river");
  EXPECT_EQ(tout[0].tokens[2].start, 4u);
  EXPECT_EQ(tout[0].tokens[2].stop, 9u);

  std::vector<ScoreInput> sin = {{"a", "b"}};
  std::vector<ScoreOutput> sout(1);
  ASSERT_TRUE((*model)->Score(sin, sout).ok());
  EXPECT_EQ(sout[0].status.code(), Code::kInvalidInput) << "an embedder does not score";

  // A cross-encoder registered for the wrong task is refused at load.
  auto wrong = ModelSpec::Parse(std::string("id: t/ce\nruntime: native\npath: ") + SHOAL_TEST_MODELS +
                                "/cross-encoder-tiny\n");
  ASSERT_TRUE(wrong.ok());
  auto refused = runtime.Load(*ModelConfig::FromSpec(*wrong), LoadContext{1});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("task: score"), std::string::npos) << refused.status().ToString();
}

TEST(NativeRuntime, CrossEncoderScoresPairs) {
  NativeRuntime runtime;
  auto spec = ModelSpec::Parse(std::string("id: t/ce\nruntime: native\ntask: score\npath: ") + SHOAL_TEST_MODELS +
                               "/cross-encoder-tiny\n");
  ASSERT_TRUE(spec.ok());
  auto model = runtime.Load(*ModelConfig::FromSpec(*spec), LoadContext{1});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::vector<ScoreInput> in = {{"where is the mill", "the river runs past the old mill"},
                                {"where is the mill", "fish move as one body"}};
  std::vector<ScoreOutput> out(2);
  ASSERT_TRUE((*model)->Score(in, out).ok());
  for (const auto& o : out) {
    ASSERT_TRUE(o.status.ok()) << o.status.ToString();
    ASSERT_EQ(o.logits.size(), 1u);
    EXPECT_TRUE(std::isfinite(o.logits[0]));
  }
  EXPECT_NE(out[0].logits[0], out[1].logits[0]);
  // Scoring one pair alone gives what it got in the batch.
  std::vector<ScoreOutput> one(1);
  ASSERT_TRUE((*model)->Score({in.data() + 1, 1}, one).ok());
  EXPECT_NEAR(one[0].logits[0], out[1].logits[0], 1e-5);
}

// native.device: cpu (the default) or cuda[:N]. In a build without CUDA, or
// on a machine without the GPU, asking for one is a load error that says
// why; with both, the GPU encoder answers what the CPU one does, within the
// bf16 bound (tests/cuda/ checks it against transformers).
TEST(NativeRuntime, TheDeviceOptionPicksTheBackendOrSaysWhyNot) {
  NativeRuntime runtime;
  auto load = [&](const std::string& model, const std::string& native) {
    auto spec = ModelSpec::Parse("id: t/dev\nruntime: native\npath: " + std::string(SHOAL_TEST_MODELS) + "/" + model +
                                 "\nnative: " + native + "\n");
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    return runtime.Load(*ModelConfig::FromSpec(*spec), LoadContext{1});
  };
  for (const char* bad : {"{device: gpu}", "{device: 'cuda:'}", "{device: 'cuda:-1'}", "{device: 'cuda:1x'}",
                          "{device: 3}"}) {
    auto m = load("bert-tiny-mean", bad);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_NE(m.status().message().find("expected cpu, cuda or cuda:N"), std::string::npos) << m.status().ToString();
  }
  auto f32 = load("bert-tiny-mean", "{device: cuda, precision: f32}");
  ASSERT_FALSE(f32.ok());
  EXPECT_NE(f32.status().message().find("bf16"), std::string::npos) << f32.status().ToString();
  auto decoder = load("llama-tiny", "{device: cuda}");
  ASSERT_FALSE(decoder.ok());
  EXPECT_NE(decoder.status().message().find("BERT-family encoders"), std::string::npos)
      << decoder.status().ToString();
  auto modernbert = load("modernbert-tiny", "{device: cuda}");
  ASSERT_FALSE(modernbert.ok());
  EXPECT_NE(modernbert.status().message().find("ModernBERT; it runs on the CPU"), std::string::npos)
      << modernbert.status().ToString();

  auto cpu = load("bert-tiny-mean", "{device: cpu}");
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  auto gpu = load("bert-tiny-mean", "{device: cuda}");
#if !SHOAL_WITH_CUDA
  ASSERT_FALSE(gpu.ok());
  EXPECT_NE(gpu.status().message().find("built without CUDA"), std::string::npos) << gpu.status().ToString();
#else
  if (!gpu.ok()) {  // built with CUDA, run where there is no GPU
    EXPECT_NE(gpu.status().message().find("usable GPU"), std::string::npos) << gpu.status().ToString();
    GTEST_SKIP() << "no GPU: " << gpu.status().ToString();
  }
  std::vector<EncodeInput> in = {{"the river runs past the old mill"}, {"fish"}};
  std::vector<EncodeOutput> on_cpu(2), on_gpu(2);
  ASSERT_TRUE((*cpu)->Encode(in, on_cpu).ok());
  ASSERT_TRUE((*gpu)->Encode(in, on_gpu).ok());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(on_gpu[i].status.ok()) << on_gpu[i].status.ToString();
    ASSERT_EQ(on_gpu[i].dense.size(), on_cpu[i].dense.size());
    double dot = 0;
    for (size_t k = 0; k < on_cpu[i].dense.size(); ++k) dot += on_cpu[i].dense[k] * on_gpu[i].dense[k];
    EXPECT_GT(dot, 0.999) << "cosine of unit vectors, input " << i;
  }
#endif
}

}  // namespace
}  // namespace shoal::native
