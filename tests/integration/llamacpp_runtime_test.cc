// The llamacpp runtime (src/runtime/llamacpp), in process, on the GGUF
// copies of the seeded test models (scripts/make-test-gguf), each checked
// against something independent of it:
//  - greedy tokens of llama-tiny F32 against the float64 reference
//    (tests/reference/decoder_reference.py) on the Hugging Face weights;
//  - bert-tiny-mean embeddings against the native runtime on the Hugging
//    Face directory (itself held to tests/reference/bert_reference.py);
//  - a chat prompt's length against Shoal's ChatTemplate rendering of the
//    Hugging Face tokenizer_config.json's template;
//  - continuous batching against each job alone; stop strings, max_tokens,
//    cancel, seeds, refusals and load failures against what the contract
//    says;
//  - JSON output (response_format) against a validator written here for
//    each schema, on sampled text of random weights (whatever the model
//    prefers, the grammar must hold it to the schema).
// Skips (with the reason) when the GGUF fixtures are missing. Synchronises
// on futures, never on sleeps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "catalog/model_spec.h"
#include "runtime/llamacpp/llamacpp_runtime.h"
#include "runtime/native/chat/chat_template.h"
#include "runtime/registry/registry.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Models() {
  const char* env = std::getenv("SHOAL_TEST_MODELS");
  return env && *env ? env : SHOAL_TEST_MODELS;
}

// What one job streamed, once it ended.
struct Outcome {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  GenerationUpdate final;
  size_t updates = 0;
};

// A job's updates gathered; `ended` resolves with them at its final update.
class Collector {
 public:
  StreamingGenerator::Sink Sink() {
    // The promises are kept outside the lock, and ended_ last: once it is
    // set the waiter may destroy this Collector (RunJob's returns), so the
    // sink must not touch it after, not even to unlock mu_.
    return [this](GenerationUpdate&& u) {
      bool first = false, final = u.final;
      Outcome done;
      {
        std::lock_guard lock(mu_);
        ++got_.updates;
        got_.text += u.text;
        got_.tokens.insert(got_.tokens.end(), u.token_ids.begin(), u.token_ids.end());
        got_.logprobs.insert(got_.logprobs.end(), u.logprobs.begin(), u.logprobs.end());
        first = !first_set_;
        first_set_ = true;
        if (final) {
          got_.final = std::move(u);
          done = std::move(got_);
        }
      }
      if (first) first_.set_value();
      if (final) ended_.set_value(std::move(done));
    };
  }
  std::future<void> first() { return first_.get_future(); }
  std::future<Outcome> ended() { return ended_.get_future(); }

 private:
  std::mutex mu_;
  Outcome got_;
  bool first_set_ = false;
  std::promise<void> first_;
  std::promise<Outcome> ended_;
};

Outcome Wait(std::future<Outcome> f) {
  EXPECT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready) << "the job never ended";
  return f.get();
}

Outcome RunJob(StreamingGenerator* gen, GenerationJob job) {
  Collector c;
  auto ended = c.ended();
  gen->Start(std::move(job), c.Sink());
  return Wait(std::move(ended));
}

GenerationJob Greedy(std::string prompt, uint32_t max_tokens) {
  GenerationJob job;
  job.prompt = std::move(prompt);
  job.max_tokens = max_tokens;
  job.sampling.temperature = 0;
  job.ignore_eos = true;
  return job;
}

ModelConfig Config(const std::string& dir, Task task) {
  ModelConfig c;
  c.id = "t/" + fs::path(dir).filename().string();
  c.task = task;
  c.path = dir;
  c.options = RuntimeOptions("llamacpp");
  return c;
}

class LlamaCpp : public ::testing::Test {
 protected:
  // The model in `name` (a directory of the test models), or a skip.
  std::unique_ptr<Model> Load(const std::string& name, Task task, ModelConfig* config_out = nullptr) {
    const std::string dir = Models() + "/" + name;
    if (!fs::exists(dir)) return nullptr;
    ModelConfig c = Config(dir, task);
    if (config_out) c = *config_out;
    auto m = runtime_.Load(c, LoadContext{.threads = 1});
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }

  std::vector<int32_t> Ids(Model& m, const std::string& text, bool add_special = true) {
    TokenizeInput in{text, add_special};
    TokenizeOutput out;
    EXPECT_TRUE(m.Tokenize({&in, 1}, {&out, 1}).ok());
    EXPECT_TRUE(out.status.ok()) << out.status.ToString();
    std::vector<int32_t> ids;
    for (const Token& t : out.tokens) ids.push_back(t.id);
    return ids;
  }

  llamacpp::LlamaCppRuntime runtime_;
};

#define SKIP_WITHOUT(dir)                                                                      \
  if (!fs::exists(Models() + "/" + (dir)))                                                     \
  GTEST_SKIP() << Models() << "/" << (dir) << " is missing (scripts/make-test-models, then " \
               << "scripts/make-test-gguf)"

// decoder_reference.py's greedy continuation of each prompt (float64 torch).
json Reference(const std::string& hf_dir, const std::vector<std::vector<int32_t>>& prompts, int new_tokens) {
  const fs::path tmp = fs::temp_directory_path() / ("shoal-llamacpp-ref-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  std::ofstream(tmp / "in.json") << json{{"prompts", prompts}, {"new_tokens", new_tokens}}.dump();
  const std::string cmd = std::string("/usr/bin/python3 ") + SHOAL_DECODER_REFERENCE + " forward " + hf_dir +
                          " --input " + (tmp / "in.json").string() + " --output " + (tmp / "out.json").string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(tmp / "out.json");
  json out = json::parse(f, nullptr, false);
  fs::remove_all(tmp);
  return out;
}

const std::vector<std::string> kPrompts = {"the river", "a school of small fish moves as one body",
                                           "fish", "the river runs past the old mill and into the town"};

TEST_F(LlamaCpp, GreedyF32EqualsTheFloat64Reference) {
  SKIP_WITHOUT("llama-tiny-gguf-f32");
  SKIP_WITHOUT("llama-tiny");
  auto m = Load("llama-tiny-gguf-f32", Task::kGenerate);
  ASSERT_TRUE(m && m->streaming_generator());
  constexpr int kNew = 12;
  std::vector<std::vector<int32_t>> prompts;
  for (const std::string& p : kPrompts) prompts.push_back(Ids(*m, p));
  const json ref = Reference(Models() + "/llama-tiny", prompts, kNew);
  ASSERT_TRUE(ref.is_object());
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    Outcome o = RunJob(m->streaming_generator(), Greedy(kPrompts[i], kNew));
    ASSERT_TRUE(o.final.status.ok()) << o.final.status.ToString();
    EXPECT_EQ(o.tokens, ref["greedy"][i].get<std::vector<int32_t>>()) << kPrompts[i];
    EXPECT_EQ(o.final.finish_reason, "length");
    EXPECT_EQ(o.final.prompt_tokens, prompts[i].size());
    EXPECT_EQ(o.final.completion_tokens, static_cast<uint32_t>(kNew));
  }
  std::printf("reference min greedy margin: %g\n", ref["min_margin"].get<double>());
}

TEST_F(LlamaCpp, ConcurrentJobsInOneBatchEqualEachAlone) {
  SKIP_WITHOUT("llama-tiny-gguf-f32");
  ModelConfig c = Config(Models() + "/llama-tiny-gguf-f32", Task::kGenerate);
  c.max_batch_tokens = 8;  // prompts prefill in chunks, beside the others' decoding
  c.max_batch_requests = 3;  // one more job than slots: it waits for one
  auto m = Load("llama-tiny-gguf-f32", Task::kGenerate, &c);
  ASSERT_TRUE(m);
  StreamingGenerator* gen = m->streaming_generator();
  std::vector<Outcome> alone;
  for (const std::string& p : kPrompts) alone.push_back(RunJob(gen, Greedy(p, 10)));
  std::vector<std::unique_ptr<Collector>> collectors;
  std::vector<std::future<Outcome>> ended;
  for (const std::string& p : kPrompts) {
    collectors.push_back(std::make_unique<Collector>());
    ended.push_back(collectors.back()->ended());
    gen->Start(Greedy(p, 10), collectors.back()->Sink());
  }
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    Outcome o = Wait(std::move(ended[i]));
    EXPECT_EQ(o.tokens, alone[i].tokens) << kPrompts[i];
    EXPECT_EQ(o.text, alone[i].text) << kPrompts[i];
  }
}

TEST_F(LlamaCpp, StopStringsCutTheTextAndMaxTokensEndsWithLength) {
  SKIP_WITHOUT("llama-tiny-gguf-f32");
  auto m = Load("llama-tiny-gguf-f32", Task::kGenerate);
  ASSERT_TRUE(m);
  StreamingGenerator* gen = m->streaming_generator();
  const Outcome full = RunJob(gen, Greedy("the river runs", 24));
  EXPECT_EQ(full.final.finish_reason, "length");
  EXPECT_EQ(full.tokens.size(), 24u);
  // A stop string from the middle of the greedy text (ASCII, so a cut there
  // falls between characters).
  size_t at = full.text.size() / 2;
  while (at < full.text.size() && static_cast<unsigned char>(full.text[at]) >= 0x80) ++at;
  ASSERT_LT(at + 2, full.text.size()) << full.text;
  const std::string stop = full.text.substr(at, 2);
  const size_t first = full.text.find(stop);
  GenerationJob job = Greedy("the river runs", 24);
  job.stop = {"never in this text \x01", stop};
  const Outcome cut = RunJob(gen, job);
  EXPECT_EQ(cut.final.finish_reason, "stop");
  EXPECT_EQ(cut.text, full.text.substr(0, first));
  EXPECT_LT(cut.tokens.size(), full.tokens.size());
}

TEST_F(LlamaCpp, CancelEndsTheJobCancelled) {
  SKIP_WITHOUT("llama-tiny-gguf-f32");
  ModelConfig c = Config(Models() + "/llama-tiny-gguf-f32", Task::kGenerate);
  c.options.Set("context", int64_t{4096});  // thousands of tokens to go when the cancel comes
  auto m = Load("llama-tiny-gguf-f32", Task::kGenerate, &c);
  ASSERT_TRUE(m);
  Collector col;
  auto first = col.first();
  auto ended = col.ended();
  const uint64_t h = m->streaming_generator()->Start(Greedy("fish", 0), col.Sink());
  first.wait();
  m->streaming_generator()->Cancel(h);
  const Outcome o = Wait(std::move(ended));
  EXPECT_TRUE(o.final.status.ok());
  EXPECT_EQ(o.final.finish_reason, "cancelled");
  EXPECT_LT(o.tokens.size(), 4000u);
  m->streaming_generator()->Cancel(h);  // ended: ignored
}

TEST_F(LlamaCpp, DestroyingTheModelEndsRunningJobsWithNoCapacity) {
  SKIP_WITHOUT("llama-tiny-gguf-f32");
  ModelConfig c = Config(Models() + "/llama-tiny-gguf-f32", Task::kGenerate);
  c.options.Set("context", int64_t{4096});
  auto m = Load("llama-tiny-gguf-f32", Task::kGenerate, &c);
  ASSERT_TRUE(m);
  Collector col;
  auto first = col.first();
  auto ended = col.ended();
  m->streaming_generator()->Start(Greedy("fish", 0), col.Sink());
  first.wait();
  m.reset();
  const Outcome o = Wait(std::move(ended));
  EXPECT_EQ(o.final.status.code(), Code::kNoCapacity) << o.final.status.ToString();
}

TEST_F(LlamaCpp, ASeedReproducesSampledText) {
  SKIP_WITHOUT("llama-tiny-gguf-f32");
  auto m = Load("llama-tiny-gguf-f32", Task::kGenerate);
  ASSERT_TRUE(m);
  auto sampled = [&](uint64_t seed) {
    GenerationJob job = Greedy("the river", 24);
    job.sampling = {.temperature = 1.0f, .top_p = 0.95f, .top_k = 50};
    job.seed = seed;
    job.logprobs = true;
    return RunJob(m->streaming_generator(), job);
  };
  const Outcome a = sampled(7), b = sampled(7), other = sampled(8);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.text, b.text);
  EXPECT_NE(a.tokens, other.tokens);
  ASSERT_EQ(a.logprobs.size(), a.tokens.size());
  for (float lp : a.logprobs) EXPECT_LE(lp, 0.0f);
}

TEST_F(LlamaCpp, QuantizedModelsGenerate) {
  SKIP_WITHOUT("llama-tiny-gguf-q8_0");
  for (const char* name : {"llama-tiny-gguf-f16", "llama-tiny-gguf-q8_0", "qwen3-tiny-gguf-q8_0"}) {
    if (!fs::exists(Models() + "/" + name)) continue;
    auto m = Load(name, Task::kGenerate);
    ASSERT_TRUE(m) << name;
    const Outcome o = RunJob(m->streaming_generator(), Greedy("the river", 8));
    EXPECT_TRUE(o.final.status.ok()) << name << ": " << o.final.status.ToString();
    EXPECT_EQ(o.tokens.size(), 8u) << name;
  }
}

TEST_F(LlamaCpp, ChatRendersTheGgufTemplate) {
  SKIP_WITHOUT("qwen3-tiny-gguf-f32");
  SKIP_WITHOUT("qwen3-tiny");
  auto m = Load("qwen3-tiny-gguf-f32", Task::kGenerate);
  ASSERT_TRUE(m);
  GenerationJob job = Greedy("", 4);
  job.chat = true;
  job.messages = {{"system", "be brief"}, {"user", "what moves the river?"}};
  job.chat_template_kwargs_json = R"({"enable_thinking": false})";
  const Outcome o = RunJob(m->streaming_generator(), job);
  ASSERT_TRUE(o.final.status.ok()) << o.final.status.ToString();
  // The Hugging Face directory's own template, rendered by Shoal's Jinja.
  auto chat = native::LoadChatConfig(Models() + "/qwen3-tiny/tokenizer_config.json");
  ASSERT_TRUE(chat.ok() && chat->chat_template) << chat.status().ToString();
  json vars = {{"messages", json::array({{{"role", "system"}, {"content", "be brief"}},
                                         {{"role", "user"}, {"content", "what moves the river?"}}})},
               {"add_generation_prompt", true},
               {"bos_token", chat->bos_token},
               {"eos_token", chat->eos_token},
               {"enable_thinking", false}};
  auto text = chat->chat_template->Render(vars);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("<think>"), std::string::npos) << *text;  // enable_thinking reached the template
  EXPECT_EQ(o.final.prompt_tokens, Ids(*m, *text, false).size()) << *text;
}

TEST_F(LlamaCpp, RefusesWhatItCannotRun) {
  SKIP_WITHOUT("llama-tiny-gguf-f32");
  ModelConfig c = Config(Models() + "/llama-tiny-gguf-f32", Task::kGenerate);
  c.options.Set("context", int64_t{64});
  auto m = Load("llama-tiny-gguf-f32", Task::kGenerate, &c);
  ASSERT_TRUE(m);
  StreamingGenerator* gen = m->streaming_generator();
  std::string long_prompt;
  for (int i = 0; i < 100; ++i) long_prompt += "the river ";
  const Outcome too_long = RunJob(gen, Greedy(long_prompt, 4));
  EXPECT_EQ(too_long.final.status.code(), Code::kInvalidInput) << too_long.final.status.ToString();
  GenerationJob lora = Greedy("fish", 4);
  lora.lora = "some-adapter";
  const Outcome with_lora = RunJob(gen, lora);
  EXPECT_EQ(with_lora.final.status.code(), Code::kInvalidInput);
  EXPECT_NE(with_lora.final.status.message().find("LoRA"), std::string::npos);
  // The context bounds the output: prompt + output stop at 64 positions.
  const Outcome full = RunJob(gen, Greedy("fish", 0));
  EXPECT_EQ(full.final.finish_reason, "length");
  EXPECT_EQ(full.final.prompt_tokens + full.final.completion_tokens, 64u);
  EXPECT_TRUE(m->UpdateLoras({}).ok());
  const LoraConfig adapter{"a", "/nowhere"};
  EXPECT_FALSE(m->UpdateLoras({&adapter, 1}).ok());
}

// --- JSON output ---

GenerationJob Formatted(OutputFormat::Kind kind, std::string schema, uint64_t seed) {
  GenerationJob job;
  job.prompt = "the river";
  job.sampling = {.temperature = 1.0f, .top_p = 1.0f, .top_k = 0};
  job.seed = seed;
  job.format = {.kind = kind, .schema_name = "t", .schema_json = std::move(schema)};
  return job;
}

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

TEST_F(LlamaCpp, AJsonSchemaHoldsSampledOutputToIt) {
  SKIP_WITHOUT("llama-tiny-gguf-f32");
  auto m = Load("llama-tiny-gguf-f32", Task::kGenerate);
  ASSERT_TRUE(m);
  const std::string schema = R"({"type": "object", "additionalProperties": false,
    "properties": {"answer": {"enum": ["yes", "no"]}, "count": {"type": "integer"},
                   "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3},
                   "note": {"type": ["string", "null"], "maxLength": 12},
                   "when": {"type": "string", "format": "date"}, "ok": {"type": "boolean"}},
    "required": ["answer", "count", "tags", "when"]})";
  const std::set<std::string> known = {"answer", "count", "tags", "note", "when", "ok"};
  const std::regex date(R"([0-9]{4}-[0-9]{2}-[0-9]{2})");
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    // Until the document ends: the schema bounds its length well within the context.
    const Outcome o = RunJob(m->streaming_generator(), Formatted(OutputFormat::Kind::kJsonSchema, schema, seed));
    ASSERT_TRUE(o.final.status.ok()) << o.final.status.ToString();
    ASSERT_EQ(o.final.finish_reason, "stop") << o.text;
    const json doc = json::parse(o.text, nullptr, false);
    ASSERT_TRUE(doc.is_object()) << o.text;
    for (const auto& [key, v] : doc.items()) EXPECT_TRUE(known.count(key)) << key << " in " << o.text;
    EXPECT_TRUE(doc["answer"] == "yes" || doc["answer"] == "no") << o.text;
    EXPECT_TRUE(doc["count"].is_number_integer()) << o.text;
    ASSERT_TRUE(doc["tags"].is_array()) << o.text;
    EXPECT_LE(doc["tags"].size(), 3u) << o.text;
    for (const json& t : doc["tags"]) {
      ASSERT_TRUE(t.is_string()) << o.text;
      EXPECT_LE(CodePoints(t.get<std::string>()), 6u) << o.text;
    }
    if (doc.contains("note") && !doc["note"].is_null()) {
      ASSERT_TRUE(doc["note"].is_string()) << o.text;
      EXPECT_LE(CodePoints(doc["note"].get<std::string>()), 12u) << o.text;
    }
    ASSERT_TRUE(doc["when"].is_string()) << o.text;
    EXPECT_TRUE(std::regex_match(doc["when"].get<std::string>(), date)) << o.text;
    if (doc.contains("ok")) {
      EXPECT_TRUE(doc["ok"].is_boolean()) << o.text;
    }
  }
}

TEST_F(LlamaCpp, JsonObjectOutputIsAnObjectAndRecursiveSchemasCompile) {
  SKIP_WITHOUT("llama-tiny-gguf-f32");
  auto m = Load("llama-tiny-gguf-f32", Task::kGenerate);
  ASSERT_TRUE(m);
  StreamingGenerator* gen = m->streaming_generator();
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    GenerationJob job = Formatted(OutputFormat::Kind::kJsonObject, "", seed);
    job.max_tokens = 48;  // a random model may write one long string: cut it short
    const Outcome o = RunJob(gen, job);
    ASSERT_TRUE(o.final.status.ok()) << o.final.status.ToString();
    ASSERT_FALSE(o.text.empty());
    EXPECT_EQ(o.text.front(), '{') << o.text;
    if (o.final.finish_reason == "stop") {
      EXPECT_TRUE(json::parse(o.text, nullptr, false).is_object()) << o.text;
    }
  }
  // A tree: each node an integer and at most two children, the same schema.
  const std::string tree = R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object",
    "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"},
                   "maxItems": 2}}, "required": ["v", "kids"]}}})";
  GenerationJob job = Formatted(OutputFormat::Kind::kJsonSchema, tree, 3);
  job.max_tokens = 24;
  const Outcome o = RunJob(gen, job);
  ASSERT_TRUE(o.final.status.ok()) << o.final.status.ToString();
  std::string compact;
  for (char c : o.text) {
    if (c != ' ' && c != '\n' && c != '\t') compact += c;
  }
  EXPECT_EQ(compact.rfind("{\"v\":", 0), 0u) << o.text;
}

TEST_F(LlamaCpp, SchemasOutsideTheSubsetAreRefusedNamingWhere) {
  SKIP_WITHOUT("llama-tiny-gguf-f32");
  auto m = Load("llama-tiny-gguf-f32", Task::kGenerate);
  ASSERT_TRUE(m);
  auto refused = [&](const std::string& schema) {
    const Outcome o = RunJob(m->streaming_generator(), Formatted(OutputFormat::Kind::kJsonSchema, schema, 1));
    EXPECT_EQ(o.final.status.code(), Code::kInvalidInput) << schema;
    EXPECT_TRUE(o.text.empty());
    return o.final.status.message();
  };
  EXPECT_EQ(refused(R"({"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]{5}$"}}})"),
            "response_format.json_schema.schema at /properties/zip: 'pattern' is not supported "
            "(docs/api.md lists the keywords that are)");
  EXPECT_EQ(refused(R"({"type":"integer","minimum":3})"),
            "response_format.json_schema.schema: 'minimum' is not supported (docs/api.md lists the keywords that are)");
  EXPECT_EQ(refused(R"({"oneOf":[{"type":"string"}]})"),
            "response_format.json_schema.schema: 'oneOf' is not supported (docs/api.md lists the keywords that are)");
  EXPECT_EQ(refused(R"({"$ref":"#/$defs/missing"})"),
            "response_format.json_schema.schema at /$ref: '#/$defs/missing' is not a definition of this schema "
            "(#, #/$defs/..., #/definitions/...)");
  EXPECT_EQ(refused(R"({"type":"string","format":"email"})"),
            "response_format.json_schema.schema at /format: '\"email\"' is not supported (date, time, date-time, uuid)");
  EXPECT_EQ(refused(R"({"type":"string","enum":[1,2]})"),
            "response_format.json_schema.schema at /enum: no value has the schema's type");
  EXPECT_EQ(refused(R"({"type":"array","maxItems":100000})"),
            "response_format.json_schema.schema at /maxItems: an integer from 0 to 256");
  EXPECT_EQ(refused("[1]"), "response_format.json_schema.schema: a schema is an object or a boolean");
}

// The thread pool's polling level (threadpool.h) changes when its threads
// wake, not what they compute; out of ggml's 0-100 it is refused.
TEST_F(LlamaCpp, ThreadsThatPollGenerateWhatThoseThatSleepDo) {
  SKIP_WITHOUT("llama-tiny-gguf-f32");
  std::vector<std::string> texts;
  for (int64_t poll : {0, 100}) {
    ModelConfig c = Config(Models() + "/llama-tiny-gguf-f32", Task::kGenerate);
    c.options.Set("threads", int64_t{2});
    c.options.Set("poll", poll);
    auto m = Load("llama-tiny-gguf-f32", Task::kGenerate, &c);
    ASSERT_TRUE(m);
    const Outcome o = RunJob(m->streaming_generator(), Greedy(kPrompts[1], 16));
    ASSERT_TRUE(o.final.status.ok()) << o.final.status.ToString();
    EXPECT_EQ(o.tokens.size(), 16u);
    texts.push_back(o.text);
  }
  EXPECT_FALSE(texts[0].empty());
  EXPECT_EQ(texts[0], texts[1]);
  ModelConfig too_much = Config(Models() + "/llama-tiny-gguf-f32", Task::kGenerate);
  too_much.options.Set("poll", int64_t{101});
  auto refused = runtime_.Load(too_much, LoadContext{.threads = 1});
  EXPECT_EQ(refused.status().code(), Code::kInvalidInput);
  EXPECT_NE(refused.status().message().find("poll"), std::string::npos) << refused.status().message();
}

TEST_F(LlamaCpp, BadModelsFailToLoad) {
  SKIP_WITHOUT("llama-tiny-gguf-f32");
  SKIP_WITHOUT("unknown-arch-gguf");
  const auto start = std::chrono::steady_clock::now();
  auto unknown = runtime_.Load(Config(Models() + "/unknown-arch-gguf", Task::kGenerate), LoadContext{.threads = 1});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), Code::kModelLoadFailed);
  EXPECT_NE(unknown.status().message().find("florp"), std::string::npos) << unknown.status().message();

  const fs::path tmp = fs::temp_directory_path() / ("shoal-llamacpp-bad-" + std::to_string(::getpid()));
  fs::create_directories(tmp / "truncated");
  const fs::path good = Models() + "/llama-tiny-gguf-f32/llama-tiny-F32.gguf";
  {
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(tmp / "truncated" / "model.gguf", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  auto truncated = runtime_.Load(Config((tmp / "truncated").string(), Task::kGenerate), LoadContext{.threads = 1});
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().code(), Code::kModelLoadFailed) << truncated.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));

  fs::create_directories(tmp / "two");
  fs::copy_file(good, tmp / "two" / "a.gguf");
  fs::copy_file(good, tmp / "two" / "b.gguf");
  auto two = runtime_.Load(Config((tmp / "two").string(), Task::kGenerate), LoadContext{.threads = 1});
  EXPECT_EQ(two.status().code(), Code::kInvalidInput);
  EXPECT_NE(two.status().message().find("a.gguf, b.gguf"), std::string::npos) << two.status().message();
  ModelConfig named = Config((tmp / "two").string(), Task::kGenerate);
  named.options.Set("file", std::string("b.gguf"));
  EXPECT_TRUE(runtime_.Load(named, LoadContext{.threads = 1}).ok());
  fs::remove_all(tmp);

  ModelConfig unknown_option = Config(Models() + "/llama-tiny-gguf-f32", Task::kGenerate);
  unknown_option.options.Set("n_gpu_layers", int64_t{3});
  auto refused = runtime_.Load(unknown_option, LoadContext{.threads = 1});
  EXPECT_EQ(refused.status().code(), Code::kInvalidInput);
  EXPECT_NE(refused.status().message().find("n_gpu_layers"), std::string::npos) << refused.status().message();
}

// The native runtime on the Hugging Face directory: the reference here.
std::unique_ptr<Model> LoadNative(const std::string& dir, uint32_t max_input_tokens) {
  auto spec = ModelSpec::Parse("id: t/native\nruntime: native\ntask: encode\npath: " + dir +
                               "\nmax_input_tokens: " + std::to_string(max_input_tokens) + "\n");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  auto m = FindRuntime("native")->Load(*ModelConfig::FromSpec(*spec), LoadContext{.threads = 1});
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

TEST_F(LlamaCpp, EmbeddingsEqualTheNativeRuntime) {
  SKIP_WITHOUT("bert-tiny-mean-gguf-f32");
  SKIP_WITHOUT("bert-tiny-mean");
  ModelConfig c = Config(Models() + "/bert-tiny-mean-gguf-f32", Task::kEncode);
  c.max_input_tokens = 16;
  auto m = Load("bert-tiny-mean-gguf-f32", Task::kEncode, &c);
  auto native = LoadNative(Models() + "/bert-tiny-mean", 16);
  ASSERT_TRUE(m && native);
  // One batch of several texts (one sequence each); the last is over 16
  // tokens and cut, the specials kept.
  std::vector<std::string_view> texts(kPrompts.begin(), kPrompts.end());
  texts.push_back("the river runs past the old mill and into the town, where people stop on the bridge");
  std::vector<EncodeInput> in(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    in[i].text = texts[i];
    in[i].truncate = true;
  }
  std::vector<EncodeOutput> got(in.size()), want(in.size());
  ASSERT_TRUE(m->Encode(in, got).ok());
  ASSERT_TRUE(native->Encode(in, want).ok());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(got[i].status.ok()) << got[i].status.ToString();
    ASSERT_TRUE(want[i].status.ok()) << want[i].status.ToString();
    EXPECT_EQ(got[i].tokens, want[i].tokens) << in[i].text;
    EXPECT_EQ(got[i].truncated, want[i].truncated) << in[i].text;
    ASSERT_EQ(got[i].dense.size(), want[i].dense.size());
    for (size_t k = 0; k < got[i].dense.size(); ++k) EXPECT_NEAR(got[i].dense[k], want[i].dense[k], 1e-4) << i;
  }
  EXPECT_TRUE(got.back().truncated);
  // Equal texts in one batch give equal vectors, bit for bit.
  std::vector<EncodeInput> twice = {in[1], in[0], in[1]};
  std::vector<EncodeOutput> same(twice.size());
  ASSERT_TRUE(m->Encode(twice, same).ok());
  EXPECT_EQ(same[0].dense, same[2].dense);
  EXPECT_EQ(same[0].dense, got[1].dense);
  // Too long without truncation: that item alone fails.
  in.back().truncate = false;
  ASSERT_TRUE(m->Encode(in, got).ok());
  EXPECT_EQ(got.back().status.code(), Code::kInvalidInput);
  EXPECT_TRUE(got.front().status.ok());
  // Tokenize: the same ids as the native runtime's.
  TokenizeInput tin{"the river runs", true};
  TokenizeOutput tg, tw;
  ASSERT_TRUE(m->Tokenize({&tin, 1}, {&tg, 1}).ok());
  ASSERT_TRUE(native->Tokenize({&tin, 1}, {&tw, 1}).ok());
  ASSERT_EQ(tg.tokens.size(), tw.tokens.size());
  for (size_t i = 0; i < tg.tokens.size(); ++i) {
    EXPECT_EQ(tg.tokens[i].id, tw.tokens[i].id);
    EXPECT_EQ(tg.tokens[i].special, tw.tokens[i].special) << tg.tokens[i].text;
  }
}

}  // namespace
}  // namespace shoal
