// LoRA adapters in the native runtime (lora/lora_adapter.h) against the
// independent references with each adapter merged into the base's weights
// (tests/reference/bert_reference.py and decoder_reference.py, per-input
// "lora"; float64 torch, their own PEFT reader), on the seeded adapters that
// scripts/make-test-loras writes beside the test models.
//
// fp32 bound: as the base models' reference tests — encoders max |diff| ≤
// 1e-4 per component, decoders ≤ 1e-4 · (1 + max|logit|) — and a mixed
// batch equals each sequence run alone under its adapter within 1e-5
// (the same sums in another row order).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "catalog/model_spec.h"
#include "runtime/generator.h"
#include "runtime/native/lora/lora_registry.h"
#include "runtime/native/models/bert.h"
#include "runtime/native/models/cpu_encoder.h"
#include "runtime/native/native_runtime.h"
#include "runtime/registry/registry.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string ModelDir(const std::string& name) { return std::string(SHOAL_TEST_MODELS) + "/" + name; }
std::string LoraDir(const std::string& base, const std::string& name) {
  return std::string(SHOAL_TEST_MODELS) + "/loras/" + base + "/" + name;
}

// Runs a reference on `in`; `command` makes its command line from the IN.json
// and OUT.json paths. Returns OUT.json (not an object on failure).
// bert_reference.py MODEL_DIR IN OUT.
std::function<std::string(const std::string&, const std::string&)> BertReference(const std::string& dir) {
  return [dir](const std::string& in, const std::string& out) {
    return std::string("/usr/bin/python3 ") + SHOAL_BERT_REFERENCE + " " + dir + " " + in + " " + out;
  };
}

json Reference(const std::function<std::string(const std::string&, const std::string&)>& command, const json& in) {
  const fs::path tmp = fs::temp_directory_path() / ("shoal-lora-ref-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  std::ofstream(tmp / "in.json") << in.dump();
  const std::string cmd = command((tmp / "in.json").string(), (tmp / "out.json").string());
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(tmp / "out.json");
  json out = json::parse(f, nullptr, false);
  fs::remove_all(tmp);
  return out;
}

std::vector<int32_t> RandomIds(std::mt19937& rng, size_t len, uint32_t vocab, int32_t pad) {
  std::vector<int32_t> ids(len);
  for (auto& id : ids) {
    do id = static_cast<int32_t>(rng() % vocab); while (id == pad);
  }
  return ids;
}

class LoraEncoder : public ::testing::TestWithParam<std::string> {};

// The base and eight adapters in one packed batch, interleaved so that runs
// of one adapter are split, against the reference; then each alone.
TEST_P(LoraEncoder, AMixedBatchOfEightAdaptersMatchesTheMergedReference) {
  const std::string base = GetParam(), dir = ModelDir(base);
  auto config = LoadEncoderConfig(dir);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto bert = LoadCpuEncoder(dir, *config, cpu::Precision::kF32);
  ASSERT_TRUE(bert.ok()) << bert.status().ToString();
  ASSERT_NE((*bert)->lora_targets(), nullptr);
  auto pooling = LoadPoolingConfig(dir);
  ASSERT_TRUE(pooling.ok());

  std::vector<std::unique_ptr<LoraAdapter>> adapters;
  for (int a = 0; a < 8; ++a) {
    auto adapter = LoraAdapter::Load(LoraDir(base, "a" + std::to_string(a)), *(*bert)->lora_targets());
    ASSERT_TRUE(adapter.ok()) << "a" << a << ": " << adapter.status().ToString();
    adapters.push_back(std::move(adapter).value());
  }
  // Sequence s runs adapter order[s] (-1: the base).
  const std::vector<int> order = {3, -1, 0, 7, 3, 5, 1, 6, 2, 4, -1};
  std::mt19937 rng(5);
  std::vector<std::vector<int32_t>> ids;
  std::vector<TokenSequence> seqs;
  json in;
  for (size_t s = 0; s < order.size(); ++s) {
    ids.push_back(RandomIds(rng, 1 + (s * 37) % config->max_tokens(), config->vocab_size, config->pad_token_id));
  }
  for (size_t s = 0; s < order.size(); ++s) {
    const LoraAdapter* a = order[s] < 0 ? nullptr : adapters[order[s]].get();
    seqs.push_back({ids[s], {}, a});
    json item = {{"ids", ids[s]}};
    item["lora"] = order[s] < 0 ? json(nullptr) : json(LoraDir(base, "a" + std::to_string(order[s])));
    in["inputs"].push_back(item);
  }
  const size_t H = config->hidden_size;
  std::vector<float> got(seqs.size() * H);
  ASSERT_TRUE((*bert)->Embed(seqs, pooling->pooling, pooling->normalize, got.data(), 2).ok());

  const json out = Reference(BertReference(dir), in);
  ASSERT_TRUE(out.is_object());
  const auto want = out.at("outputs").get<std::vector<std::vector<double>>>();
  ASSERT_EQ(want.size(), seqs.size());
  double worst = 0, moved = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (size_t k = 0; k < H; ++k) worst = std::max(worst, std::abs(got[s * H + k] - want[s][k]));
  }
  // The adapters do change the output (a test of a no-op would pass too).
  for (size_t k = 0; k < H; ++k) moved = std::max<double>(moved, std::abs(got[0 * H + k] - got[1 * H + k]));
  std::printf("%s: mixed batch of 8 adapters + base, max |diff| %.2e against the merged reference\n",
              base.c_str(), worst);
  EXPECT_LE(worst, 1e-4);
  EXPECT_GT(moved, 1e-3);

  for (size_t s = 0; s < seqs.size(); ++s) {
    std::vector<float> alone(H);
    ASSERT_TRUE((*bert)->Embed(std::span(&seqs[s], 1), pooling->pooling, pooling->normalize, alone.data(), 1).ok());
    for (size_t k = 0; k < H; ++k) EXPECT_NEAR(alone[k], got[s * H + k], 1e-5) << "sequence " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, LoraEncoder, ::testing::Values("bert-tiny-mean", "roberta-tiny", "distilbert-tiny",
                                                                    "mpnet-tiny", "modernbert-tiny"));

// A cross-encoder's adapter may bring its own classifier (modules_to_save).
TEST(LoraCrossEncoder, AdaptersWithAndWithoutTheirOwnHeadMatchTheReference) {
  const std::string base = "cross-encoder-tiny", dir = ModelDir(base);
  auto config = LoadEncoderConfig(dir);
  ASSERT_TRUE(config.ok());
  auto bert = Bert::Load(dir, *config, cpu::Precision::kF32);
  ASSERT_TRUE(bert.ok());
  auto head = LoraAdapter::Load(LoraDir(base, "head"), *(*bert)->lora_targets());
  auto plain = LoraAdapter::Load(LoraDir(base, "plain"), *(*bert)->lora_targets());
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_TRUE((*head)->replaces_any());
  EXPECT_FALSE((*plain)->replaces_any());
  std::mt19937 rng(9);
  std::vector<std::vector<int32_t>> ids;
  for (size_t len : {12, 30, 7}) ids.push_back(RandomIds(rng, len, config->vocab_size, config->pad_token_id));
  const std::vector<const LoraAdapter*> which = {head->get(), nullptr, plain->get()};
  std::vector<TokenSequence> seqs;
  json in;
  const std::vector<json> dirs = {LoraDir(base, "head"), nullptr, LoraDir(base, "plain")};
  for (size_t s = 0; s < ids.size(); ++s) {
    seqs.push_back({ids[s], {}, which[s]});
    in["inputs"].push_back({{"ids", ids[s]}, {"lora", dirs[s]}});
  }
  std::vector<float> got(seqs.size() * config->num_labels);
  ASSERT_TRUE((*bert)->Classify(seqs, got.data(), 2).ok());
  const json out = Reference(BertReference(dir), in);
  ASSERT_TRUE(out.is_object());
  const auto want = out.at("outputs").get<std::vector<std::vector<double>>>();
  for (size_t s = 0; s < seqs.size(); ++s) {
    for (size_t k = 0; k < config->num_labels; ++k) {
      EXPECT_NEAR(got[s * config->num_labels + k], want[s][k], 1e-4) << "sequence " << s;
    }
  }
}

// A token classifier's adapter with its own classifier: every token's
// logits, a sequence under it beside one of the base in one batch.
TEST(LoraTokenClassifier, AnAdapterWithItsOwnHeadMatchesTheReference) {
  const std::string base = "bert-ner-tiny", dir = ModelDir(base);
  auto config = LoadEncoderConfig(dir);
  ASSERT_TRUE(config.ok());
  auto bert = Bert::Load(dir, *config, cpu::Precision::kF32);
  ASSERT_TRUE(bert.ok());
  auto head = LoraAdapter::Load(LoraDir(base, "head"), *(*bert)->lora_targets());
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_TRUE((*head)->replaces_any());
  std::mt19937 rng(11);
  std::vector<std::vector<int32_t>> ids;
  for (size_t len : {9, 21}) ids.push_back(RandomIds(rng, len, config->vocab_size, config->pad_token_id));
  const std::vector<TokenSequence> seqs = {{ids[0], {}, head->get()}, {ids[1], {}, nullptr}};
  json in;
  in["inputs"].push_back({{"ids", ids[0]}, {"lora", LoraDir(base, "head")}});
  in["inputs"].push_back({{"ids", ids[1]}, {"lora", nullptr}});
  const size_t L = config->num_labels;
  std::vector<float> got((ids[0].size() + ids[1].size()) * L);
  ASSERT_TRUE((*bert)->ClassifyTokens(seqs, got.data(), 2).ok());
  const json out = Reference(BertReference(dir), in);
  ASSERT_TRUE(out.is_object());
  const auto want = out.at("outputs").get<std::vector<std::vector<double>>>();
  size_t row = 0;
  for (size_t s = 0; s < ids.size(); ++s) {
    ASSERT_EQ(want[s].size(), ids[s].size() * L);
    for (size_t k = 0; k < want[s].size(); ++k) EXPECT_NEAR(got[row * L + k], want[s][k], 1e-4) << "sequence " << s;
    row += ids[s].size();
  }
  // The adapter's head moved its sequence's logits away from the base's.
  const TokenSequence base_only{ids[0], {}, nullptr};
  std::vector<float> plain(ids[0].size() * L);
  ASSERT_TRUE((*bert)->ClassifyTokens(std::span(&base_only, 1), plain.data(), 1).ok());
  double moved = 0;
  for (size_t k = 0; k < plain.size(); ++k) moved = std::max(moved, std::abs(static_cast<double>(plain[k] - got[k])));
  EXPECT_GT(moved, 1e-2);
}

class LoraDecoder : public ::testing::TestWithParam<std::string> {};

// A prefill of the base and eight adapters in one step, through the Model
// interface (adapters by name, as the worker names them), against the
// reference's logits at every prompt's last position; then each alone.
TEST_P(LoraDecoder, AMixedStepOfEightAdaptersMatchesTheMergedReference) {
  const std::string base = GetParam(), dir = ModelDir(base);
  auto spec = ModelSpec::Parse("id: t/" + base + "\nruntime: native\ntask: generate\npath: " + dir +
                               "\nnative: {max_context: 64, kv_cache_tokens: 1024, kv_block_tokens: 8}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto model = FindRuntime("native")->Load(*ModelConfig::FromSpec(*spec), LoadContext{2});
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  std::vector<LoraConfig> loras;
  for (int a = 0; a < 8; ++a) loras.push_back({"a" + std::to_string(a), LoraDir(base, "a" + std::to_string(a))});
  ASSERT_TRUE((*model)->UpdateLoras(loras).ok());
  Generator* gen = (*model)->generator();
  const size_t vocab = gen->info().vocab_size;

  const std::vector<int> order = {2, -1, 5, 0, 7, 1, 3, 6, 4};
  std::mt19937 rng(3);
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> names;
  json in;
  for (size_t s = 0; s < order.size(); ++s) {
    std::vector<int32_t> p(3 + s * 3);
    for (auto& t : p) t = static_cast<int32_t>(rng() % std::min<size_t>(vocab, 400));
    prompts.push_back(p);
    names.push_back(order[s] < 0 ? "" : "a" + std::to_string(order[s]));
    in["prompts"].push_back({{"ids", p}, {"lora", order[s] < 0 ? json(nullptr) : json(LoraDir(base, names[s]))}});
  }
  in["new_tokens"] = 1;
  const uint32_t per = gen->info().max_context / gen->info().kv_block_tokens;
  std::vector<std::vector<int32_t>> tables(prompts.size());
  std::vector<SequenceChunk> chunks;
  for (size_t s = 0; s < prompts.size(); ++s) {
    for (uint32_t b = 0; b < per; ++b) tables[s].push_back(static_cast<int32_t>(s * per + b));
    SequenceChunk c{prompts[s], 0, tables[s], true};
    c.lora = names[s];
    chunks.push_back(c);
  }
  std::vector<float> got(prompts.size() * vocab);
  ASSERT_TRUE(gen->Forward(chunks, got.data(), 2).ok());

  const json out = Reference(
      [&](const std::string& in_path, const std::string& out_path) {
        return std::string("/usr/bin/python3 ") + SHOAL_DECODER_REFERENCE + " forward " + dir + " --input " +
               in_path + " --output " + out_path;
      },
      in);
  ASSERT_TRUE(out.is_object());
  const auto logits = out.at("logits").get<std::vector<std::vector<std::vector<double>>>>();
  double worst = 0;
  for (size_t s = 0; s < prompts.size(); ++s) {
    const auto& want = logits[s].back();
    double max_ref = 0, err = 0;
    for (size_t v = 0; v < vocab; ++v) {
      max_ref = std::max(max_ref, std::abs(want[v]));
      err = std::max(err, std::abs(got[s * vocab + v] - want[v]));
    }
    worst = std::max(worst, err / (1 + max_ref));
  }
  std::printf("%s: mixed step of 8 adapters + base, worst logit error %.2e relative\n", base.c_str(), worst);
  EXPECT_LE(worst, 1e-4);

  // Alone, each sequence gives what it gave in the mixed step, up to the
  // order of the GEMM's sums: oneDNN's kernels for one row and for eight
  // (and on one thread and two) add in another order on an AVX2 CPU
  // (1.5e-5 on logits up to 9), so the bound is relative to the row's
  // largest logit, as above, and ten times tighter.
  std::vector<float> alone(vocab);
  for (size_t s = 0; s < prompts.size(); ++s) {
    ASSERT_TRUE(gen->Forward({&chunks[s], 1}, alone.data(), 1).ok());
    float scale = 0;
    for (float x : alone) scale = std::max(scale, std::abs(x));
    for (size_t v = 0; v < vocab; ++v) {
      ASSERT_NEAR(alone[v], got[s * vocab + v], 1e-5 * (1 + scale)) << "prompt " << s;
    }
  }
  SequenceChunk unknown{prompts[0], 0, tables[0], true};
  unknown.lora = "nope";
  EXPECT_EQ(gen->Forward({&unknown, 1}, alone.data(), 1).code(), Code::kModelNotFound);
}

INSTANTIATE_TEST_SUITE_P(Models, LoraDecoder, ::testing::Values("llama-tiny", "qwen3-tiny"));

// Registration's check: each adapter of one fault is refused, saying why.
TEST(LoraRegistration, RefusesWhatTheRuntimeDoesNotRunAndSaysWhy) {
  NativeRuntime runtime;
  auto base = ModelSpec::Parse("id: t/b\nruntime: native\npath: " + ModelDir("bert-tiny-mean") + "\n");
  ASSERT_TRUE(base.ok());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bad-dora", "DoRA"},
      {"bad-bias", "bias"},
      {"bad-shape", "does not fit"},
      {"bad-rank", "rank 8"},
      {"bad-target", "nonexistent_proj"},
      {"bad-missing", "adapter_model.safetensors"},
      {"bad-config", "JSON"},
      {"bad-peft-type", "PREFIX_TUNING"},
  };
  for (const auto& [name, says] : cases) {
    auto r = runtime.CheckLora(*ModelConfig::FromSpec(*base), {name, LoraDir("bert-tiny-mean", name)});
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.status().code(), Code::kInvalidInput) << name;
    EXPECT_NE(r.status().message().find(says), std::string::npos) << name << ": " << r.status().ToString();
  }
  auto decoder_adapter = runtime.CheckLora(*ModelConfig::FromSpec(*base), {"x", LoraDir("llama-tiny", "a0")});
  ASSERT_FALSE(decoder_adapter.ok());
  EXPECT_NE(decoder_adapter.status().message().find("q_proj"), std::string::npos)
      << decoder_adapter.status().ToString();
  auto nowhere = runtime.CheckLora(*ModelConfig::FromSpec(*base), {"x", "/nonexistent"});
  EXPECT_FALSE(nowhere.ok());

  auto good = runtime.CheckLora(*ModelConfig::FromSpec(*base), {"a4", LoraDir("bert-tiny-mean", "a4")});
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_GT(*good, 0u);
  auto decoder = ModelSpec::Parse("id: t/d\nruntime: native\ntask: generate\npath: " + ModelDir("qwen3-tiny") + "\n");
  ASSERT_TRUE(decoder.ok());
  EXPECT_TRUE(runtime.CheckLora(*ModelConfig::FromSpec(*decoder), {"a5", LoraDir("qwen3-tiny", "a5")}).ok());
}

// Through the Model interface: adapters by name, unknown ones per item.
TEST(LoraModel, EncodesUnderAdaptersByNameAndForgetsUnregisteredOnes) {
  NativeRuntime runtime;
  auto spec = ModelSpec::Parse("id: t/b\nruntime: native\npath: " + ModelDir("bert-tiny-mean") + "\n");
  ASSERT_TRUE(spec.ok());
  auto model = runtime.Load(*ModelConfig::FromSpec(*spec), LoadContext{1});
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE((*model)->UpdateLoras(std::vector<LoraConfig>{{"a0", LoraDir("bert-tiny-mean", "a0")},
                                                          {"a5", LoraDir("bert-tiny-mean", "a5")}})
                  .ok());
  const std::string text = "the river runs past the old mill";
  std::vector<EncodeInput> in = {{.text = text, .lora = "a0"}, {.text = text}, {.text = text, .lora = "a5"},
                                 {.text = text, .lora = "nope"}};
  std::vector<EncodeOutput> out(in.size());
  ASSERT_TRUE((*model)->Encode(in, out).ok());
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(out[i].status.ok()) << i << ": " << out[i].status.ToString();
  EXPECT_EQ(out[3].status.code(), Code::kModelNotFound) << out[3].status.ToString();
  EXPECT_NE(out[0].dense, out[1].dense);
  EXPECT_NE(out[2].dense, out[1].dense);
  // What the base and a5 give in a batch of the two alone: the shape the
  // batch below runs in once a0 is unregistered (its item and "nope" fail
  // before the forward pass). Compared with that, not with `out`: a GEMM's
  // summation order may depend on the batch's row count (oneDNN's AVX2
  // kernels), so bits are promised per batch shape, not across shapes.
  std::vector<EncodeInput> pair = {in[1], in[2]};
  std::vector<EncodeOutput> pair_out(pair.size());
  ASSERT_TRUE((*model)->Encode(pair, pair_out).ok());

  ASSERT_TRUE((*model)->UpdateLoras(std::vector<LoraConfig>{{"a5", LoraDir("bert-tiny-mean", "a5")}}).ok());
  std::vector<EncodeOutput> again(in.size());
  ASSERT_TRUE((*model)->Encode(in, again).ok());
  EXPECT_EQ(again[0].status.code(), Code::kModelNotFound) << "a0 is no longer registered";
  EXPECT_EQ(again[1].dense, pair_out[0].dense);
  EXPECT_EQ(again[2].dense, pair_out[1].dense) << "a5 still runs as it did";
}

// The registry keeps adapters within its budget, least recently used out.
TEST(LoraRegistry, KeepsTheRecentlyUsedWithinItsBudgetAndReloadsTheRest) {
  auto config = LoadEncoderConfig(ModelDir("bert-tiny-mean"));
  ASSERT_TRUE(config.ok());
  auto weights = SafeTensors::OpenDir(ModelDir("bert-tiny-mean"));
  ASSERT_TRUE(weights.ok());
  const LoraTargets targets = Bert::LoraTargetsOf(*config, **weights);
  auto one = LoraAdapter::Load(LoraDir("bert-tiny-mean", "a0"), targets);
  ASSERT_TRUE(one.ok());
  const size_t size = (*one)->memory_bytes();  // a0..a3 have the same shapes

  LoraRegistry registry(targets, size * 2 + size / 2);
  std::vector<LoraConfig> specs;
  for (int a = 0; a < 4; ++a) specs.push_back({"a" + std::to_string(a), LoraDir("bert-tiny-mean", "a" + std::to_string(a))});
  registry.Update(specs);
  auto a0 = registry.Get("a0");
  ASSERT_TRUE(a0.ok());
  ASSERT_TRUE(registry.Get("a1").ok());
  ASSERT_TRUE(registry.Get("a0").ok());  // a0 is now the more recent
  ASSERT_TRUE(registry.Get("a2").ok());  // over budget: a1 goes
  EXPECT_LE(registry.resident_bytes(), registry.budget_bytes());
  auto a0_again = registry.Get("a0");
  ASSERT_TRUE(a0_again.ok());
  EXPECT_EQ(a0_again->get(), a0->get()) << "a0 stayed";
  auto a1 = registry.Get("a1");
  ASSERT_TRUE(a1.ok());
  EXPECT_EQ((*a0)->memory_bytes(), size);  // still usable by whoever holds it
  EXPECT_EQ(registry.Get("a9").status().code(), Code::kModelNotFound);
  EXPECT_EQ(registry.Get("a3").ok(), true);
}

// Ready() loads in the background (the worker's way of never holding a
// batch for a first use); unknown and broken adapters are "ready" so that
// running them reports the error, once, without retrying the load.
TEST(LoraRegistry, ReadyLoadsInTheBackgroundAndRemembersFailures) {
  auto config = LoadEncoderConfig(ModelDir("bert-tiny-mean"));
  ASSERT_TRUE(config.ok());
  auto weights = SafeTensors::OpenDir(ModelDir("bert-tiny-mean"));
  ASSERT_TRUE(weights.ok());
  LoraRegistry registry(Bert::LoraTargetsOf(*config, **weights), size_t{1} << 30);
  registry.Update(std::vector<LoraConfig>{{"a0", LoraDir("bert-tiny-mean", "a0")},
                                        {"dora", LoraDir("bert-tiny-mean", "bad-dora")}});
  EXPECT_TRUE(registry.Ready("unknown"));
  EXPECT_FALSE(registry.Ready("a0")) << "not read yet: a background load starts";
  bool ready = false;
  for (int i = 0; i < 500 && !ready; ++i) {
    ready = registry.Ready("a0");
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(ready);
  EXPECT_GT(registry.resident_bytes(), 0u);
  ASSERT_TRUE(registry.Get("a0").ok());

  EXPECT_FALSE(registry.Ready("dora"));
  for (int i = 0; i < 500 && !registry.Ready("dora"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto failed = registry.Get("dora");
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("DoRA"), std::string::npos) << failed.status().ToString();
}

}  // namespace
}  // namespace shoal::native
