// A model directory → the spec that registers it: its shoal.yaml, or what
// config.json implies. (Whether the files load is the runtime's test.)
#include "admin/model_directory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <tuple>

#include "common/ids.h"

namespace shoal::admin {
namespace {

namespace fs = std::filesystem;

class ModelDirectory : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("shoal-model-dir-" + RandomToken(8));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path Dir(const std::string& name, std::initializer_list<std::pair<std::string, std::string>> files) {
    const fs::path d = root_ / name;
    fs::create_directories(d);
    for (const auto& [file, text] : files) std::ofstream(d / file) << text;
    return d;
  }

  fs::path root_;
};

TEST_F(ModelDirectory, AnEmbedderIsInferredFromConfigJson) {
  const auto d = Dir("bge-small", {{"config.json", R"({"architectures": ["BertModel"], "hidden_size": 8})"}});
  auto spec = SpecFromDirectory(d.string());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->id, "bge-small");
  EXPECT_EQ(spec->runtime, "native");
  EXPECT_EQ(spec->task, Task::kEncode);
  EXPECT_EQ(spec->path, fs::canonical(d).string());
  EXPECT_FALSE(spec->pinned);
}

// A causal LM generates, unless sentence-transformers saved it: then it is a
// decoder embedder (Qwen3-Embedding).
TEST_F(ModelDirectory, ACausalLmGeneratesUnlessSentenceTransformersSavedIt) {
  const auto gen = Dir("qwen3", {{"config.json", R"({"architectures": ["Qwen3ForCausalLM"]})"}});
  auto g = SpecFromDirectory(gen.string());
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->task, Task::kGenerate);
  const auto emb = Dir("qwen3-embedding", {{"config.json", R"({"architectures": ["Qwen3ForCausalLM"]})"},
                                           {"modules.json", "[]"}});
  auto e = SpecFromDirectory(emb.string());
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->task, Task::kEncode);
}

TEST_F(ModelDirectory, AnEmbeddersPromptsComeFromSentenceTransformersConfig) {
  const auto d = Dir("e5", {{"config.json", R"({"architectures": ["XLMRobertaModel"]})"},
                            {"config_sentence_transformers.json",
                             R"({"prompts": {"query": "query: ", "passage": "passage: ", "none": ""},)"
                             R"( "default_prompt_name": null})"}});
  auto spec = SpecFromDirectory(d.string());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_NE(spec->FindPrompt("query"), nullptr);
  EXPECT_EQ(*spec->FindPrompt("query"), "query: ");
  EXPECT_EQ(*spec->FindPrompt("passage"), "passage: ");
  EXPECT_EQ(spec->FindPrompt("none"), nullptr);  // an empty prompt is no prompt

  const auto bad = Dir("bad", {{"config.json", R"({"architectures": ["BertModel"]})"},
                               {"config_sentence_transformers.json", R"({"prompts": {"query": 3}})"}});
  auto refused = SpecFromDirectory(bad.string());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("prompts.query: expected a string"), std::string::npos);
}

// sentence-transformers' SparseEncoder files say sparse; PyLate's, a vector
// per token; the others, dense (left unset).
TEST_F(ModelDirectory, SpladeAndColbertFilesSayTheOutput) {
  const auto splade = Dir("splade", {{"config.json", R"({"architectures": ["BertForMaskedLM"]})"},
                                     {"modules.json",
                                      R"([{"type": "sentence_transformers.sparse_encoder.models.MLMTransformer"},)"
                                      R"( {"type": "sentence_transformers.sparse_encoder.models.SpladePooling"}])"}});
  auto s = SpecFromDirectory(splade.string());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->task, Task::kEncode);
  EXPECT_EQ(s->encode_outputs(), static_cast<OutputKinds>(OutputKind::kSparse));
  const auto colbert = Dir("colbert", {{"config.json", R"({"architectures": ["BertModel"]})"},
                                       {"modules.json",
                                        R"([{"type": "sentence_transformers.models.Transformer"},)"
                                        R"( {"type": "pylate.models.Dense.Dense"}])"}});
  auto c = SpecFromDirectory(colbert.string());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->encode_outputs(), static_cast<OutputKinds>(OutputKind::kMultivector));
  const auto dense = Dir("bge", {{"config.json", R"({"architectures": ["BertModel"]})"},
                                 {"modules.json", R"([{"type": "sentence_transformers.models.Pooling"}])"}});
  auto d = SpecFromDirectory(dense.string());
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->outputs, 0);
}

// A profile says what it says; what it leaves unsaid of an encoder (its
// outputs, its prompts) comes from the directory's files, in a shoal.yaml
// and in a profile file naming the directory alike.
TEST_F(ModelDirectory, WhatAProfileLeavesUnsaidComesFromTheFiles) {
  const auto d = Dir("splade-v3", {{"config.json", R"({"architectures": ["BertForMaskedLM"]})"},
                                   {"modules.json", R"([{"type": "sentence_transformers.sparse_encoder.models.SpladePooling"}])"},
                                   {"config_sentence_transformers.json", R"({"prompts": {"query": "q: "}})"},
                                   {"shoal.yaml", "id: team/splade\nruntime: native\npinned: true\n"}});
  auto in_dir = SpecFromDirectory(d.string());
  ASSERT_TRUE(in_dir.ok()) << in_dir.status().ToString();
  EXPECT_EQ(in_dir->encode_outputs(), static_cast<OutputKinds>(OutputKind::kSparse));
  ASSERT_EQ(in_dir->prompts.size(), 1u);
  EXPECT_EQ(in_dir->prompts[0].second, "q: ");
  EXPECT_TRUE(in_dir->pinned);

  const auto profiles = Dir("profiles", {{"said.yaml", "id: team/said\nruntime: native\noutputs: [dense]\n"
                                                       "prompts: {query: \"search: \"}\npath: " + d.string() + "\n"},
                                         {"unsaid.yaml", "id: team/unsaid\nruntime: native\npath: " + d.string() + "\n"}});
  auto said = SpecFromPath((profiles / "said.yaml").string());
  ASSERT_TRUE(said.ok()) << said.status().ToString();
  EXPECT_EQ(said->encode_outputs(), static_cast<OutputKinds>(OutputKind::kDense));
  EXPECT_EQ(said->prompts[0].second, "search: ");
  auto unsaid = SpecFromPath((profiles / "unsaid.yaml").string());
  ASSERT_TRUE(unsaid.ok()) << unsaid.status().ToString();
  EXPECT_EQ(unsaid->encode_outputs(), static_cast<OutputKinds>(OutputKind::kSparse));
}

TEST_F(ModelDirectory, ASequenceClassifierIsACrossEncoder) {
  const auto d = Dir("rerank", {{"config.json", R"({"architectures": ["XLMRobertaForSequenceClassification"]})"}});
  auto spec = SpecFromDirectory(d.string(), "org/rerank-v2");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->id, "org/rerank-v2");
  EXPECT_EQ(spec->task, Task::kScore);
}

TEST_F(ModelDirectory, ClassifiersOfSeveralLabelsAndTokenClassifiersExtract) {
  const std::pair<const char*, Task> cases[] = {
      {R"({"architectures": ["BertForTokenClassification"], "id2label": {"0": "O", "1": "B-PER"}})", Task::kExtract},
      {R"({"architectures": ["RobertaForSequenceClassification"],
           "id2label": {"0": "negative", "1": "neutral", "2": "positive"}})", Task::kExtract},
      {R"({"architectures": ["BertForSequenceClassification"], "num_labels": 2})", Task::kExtract},
      {R"({"architectures": ["BertForSequenceClassification"], "id2label": {"0": "toxic"},
           "problem_type": "multi_label_classification"})", Task::kExtract},
      {R"({"architectures": ["BertForSequenceClassification"], "id2label": {"0": "LABEL_0"}})", Task::kScore},
  };
  int n = 0;
  for (const auto& [config, task] : cases) {
    const auto d = Dir("classifier-" + std::to_string(n++), {{"config.json", config}});
    auto spec = SpecFromDirectory(d.string(), "org/classifier");
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->task, task) << config;
  }
}

// transformers runs what the native runtime does not: the pytorch runtime's.
TEST_F(ModelDirectory, ACheckpointOfAModelTypeNativeDoesNotRunGoesToPytorch) {
  const std::tuple<const char*, const char*, Task> cases[] = {
      {R"({"model_type": "bert", "architectures": ["BertModel"]})", "native", Task::kEncode},
      {R"({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]})", "native", Task::kGenerate},
      {R"({"model_type": "albert", "architectures": ["AlbertModel"]})", "pytorch", Task::kEncode},
      {R"({"model_type": "deberta", "architectures": ["DebertaForSequenceClassification"]})", "pytorch",
       Task::kScore},
  };
  int n = 0;
  for (const auto& [config, runtime, task] : cases) {
    for (const char* weights : {"model.safetensors", "pytorch_model.bin"}) {
      const auto d = Dir("checkpoint-" + std::to_string(n++), {{"config.json", config}, {weights, "x"}});
      auto spec = SpecFromDirectory(d.string());
      ASSERT_TRUE(spec.ok()) << spec.status().ToString();
      EXPECT_EQ(spec->runtime, runtime) << config << " " << weights;
      EXPECT_EQ(spec->task, task) << config;
    }
  }
}

TEST_F(ModelDirectory, ItsShoalYamlIsTheProfileAndThePathDefaultsToTheDirectory) {
  const auto d = Dir("tuned", {{"config.json", R"({"architectures": ["BertForSequenceClassification"]})"},
                               {"shoal.yaml", "id: team/tuned\nruntime: native\ntask: encode\npinned: true\n"
                                              "batching: {max_batch_tokens: 512, max_batch_requests: 8}\n"}});
  auto spec = SpecFromDirectory(d.string());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->id, "team/tuned");
  EXPECT_EQ(spec->task, Task::kEncode);  // the profile wins over config.json
  EXPECT_TRUE(spec->pinned);
  EXPECT_EQ(spec->batching.max_batch_requests, 8u);
  EXPECT_EQ(spec->path, fs::canonical(d).string());
}

TEST_F(ModelDirectory, AShoalYamlNamingAnUpstreamIsAnUpstreamModel) {
  const auto d = Dir("vllm-qwen", {{"shoal.yaml", "id: team/qwen3\nruntime: upstream\ntask: generate\n"
                                                  "upstream: {base_url: 'http://10.0.0.7:8000/v1', model: Qwen/Qwen3-0.6B}\n"}});
  auto spec = SpecFromDirectory(d.string());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->runtime, "upstream");
  EXPECT_EQ(spec->task, Task::kGenerate);
  EXPECT_NE(spec->runtime_options_json.find("Qwen/Qwen3-0.6B"), std::string::npos) << spec->runtime_options_json;
}

TEST_F(ModelDirectory, WhatIsNotAModelIsRefusedWithTheReason) {
  const auto empty = Dir("empty", {});
  auto spec = SpecFromDirectory(empty.string());
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), Code::kInvalidInput);
  EXPECT_NE(spec.status().message().find("config.json"), std::string::npos) << spec.status().message();

  const auto garbled = Dir("garbled", {{"config.json", "{not json"}});
  spec = SpecFromDirectory(garbled.string());
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("not a JSON object"), std::string::npos) << spec.status().message();

  const auto ok = Dir("ok", {{"config.json", "{}"}});
  spec = SpecFromDirectory(ok.string(), "bad id with spaces");
  EXPECT_EQ(spec.status().code(), Code::kInvalidInput);

  spec = SpecFromPath((root_ / "missing").string());
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("does not exist"), std::string::npos);
}

// A GGUF header holding `keys` string metadata (and no tensors).
std::string Gguf(std::initializer_list<std::pair<std::string, std::string>> keys) {
  std::string out = "GGUF";
  auto u32 = [&](uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
  auto u64 = [&](uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); };
  auto str = [&](const std::string& s) {
    u64(s.size());
    out += s;
  };
  u32(3);
  u64(0);
  u64(keys.size() + 1);
  str("general.alignment");  // a key of another type before the one read
  u32(4);                    // uint32
  u32(32);
  for (const auto& [k, v] : keys) {
    str(k);
    u32(8);  // string
    str(v);
  }
  return out;
}

TEST_F(ModelDirectory, AGgufGoesToLlamaCppAndItsArchitectureSaysTheTask) {
  const auto gen = Dir("qwen-gguf", {{"qwen-Q4_K_M.gguf", Gguf({{"general.architecture", "qwen3"}})}});
  auto spec = SpecFromDirectory(gen.string());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->runtime, "llamacpp");
  EXPECT_EQ(spec->task, Task::kGenerate);
  const auto emb = Dir("nomic-gguf", {{"nomic.f16.gguf", Gguf({{"general.architecture", "nomic-bert"}})}});
  spec = SpecFromDirectory(emb.string());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->task, Task::kEncode);
  // Weights of Shoal's own formats come first.
  const auto both = Dir("both", {{"model.safetensors", "x"}, {"config.json", R"({"architectures": ["BertModel"]})"},
                                 {"m.gguf", Gguf({{"general.architecture", "llama"}})}});
  EXPECT_EQ(SpecFromDirectory(both.string())->runtime, "native");
  // Not a GGUF, or no architecture: refused, saying so.
  const auto junk = Dir("junk", {{"model.gguf", "GGML not really"}});
  EXPECT_NE(SpecFromDirectory(junk.string()).status().message().find("not a GGUF"), std::string::npos);
  const auto none = Dir("none", {{"model.gguf", Gguf({{"general.name", "x"}})}});
  EXPECT_NE(SpecFromDirectory(none.string()).status().message().find("general.architecture"), std::string::npos);
}

TEST_F(ModelDirectory, APathToAProfileFileReadsTheProfile) {
  const auto d = Dir("profiles", {{"identity.yaml", "id: shoal/identity\nruntime: identity\n"}});
  auto spec = SpecFromPath((d / "identity.yaml").string(), "renamed");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->id, "renamed");
  EXPECT_EQ(spec->runtime, "identity");
}

}  // namespace
}  // namespace shoal::admin
