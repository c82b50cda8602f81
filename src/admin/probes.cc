#include "admin/probes.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <nlohmann/json.hpp>

#include "common/base64.h"
#include "common/clock.h"
#include "common/hardware.h"
#include "runtime/generator.h"
#include "runtime/text_stream.h"

namespace shoal::admin {

const std::string_view kTestImage(
    "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x08\x00\x00\x00"
    "\x08"
    "\x08\x02\x00\x00\x00\x4b\x6d\x29\xdc\x00\x00\x00\x1b\x49\x44\x41\x54\x78\xda\x63\x64\x60\x60"
    "\x50"
    "\x60\x10\xc0\x44\x2c\x0c\x0a\x02\x0c\x0c\x58\xd0\xe0\x94\x00\x00\x85\xae\x05\xce\x78\x65\xa6"
    "\xbd"
    "\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82",
    84);

namespace {

using nlohmann::json;

constexpr std::string_view kSentences[] = {
    "A queue of small models serves many teams at once.",
    "The cat sat on the warm windowsill all afternoon.",
    "How do I reset my password?",
    "Interest rates rose by a quarter point in March.",
    "Ada Lovelace wrote the first published algorithm in London.",
    "Photosynthesis turns light, water and carbon dioxide into sugar.",
    "The train to Paris leaves from platform nine at 7:45.",
    "Le café était fermé, alors nous sommes rentrés à pied.",
};
constexpr uint32_t kSentenceTokensAtMost = 128;
constexpr std::pair<std::string_view, std::string_view> kPairs[] = {
    {"how do I reset my password", "Open settings, choose Security, then Reset password."},
    {"how do I reset my password", "The cat sat on the warm windowsill all afternoon."},
    {"what do plants make from light",
     "Photosynthesis turns light, water and carbon dioxide into sugar."},
    {"when does the Paris train leave", "Interest rates rose by a quarter point in March."},
};
constexpr std::string_view kEntitySentences[] = {
    "Ada Lovelace wrote the first published algorithm in London.",
    "Marie Curie worked at the University of Paris.",
    "The meeting with Google is on Tuesday in Zurich.",
    "I loved this film, the acting was wonderful.",
};
constexpr std::string_view kPrompts[] = {"The capital of France is", "def fibonacci(n):"};
constexpr uint32_t kGeneratedTokens = 12;
constexpr auto kTimingBudget = std::chrono::milliseconds(200);
constexpr int kMaxTimedBatches = 5;

std::string Floats(const std::vector<float>& v) {
  std::string out;
  AppendBase64({reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)}, &out);
  return out;
}

json EncodeJson(const EncodeOutput& o, OutputKinds kinds) {
  json j = json::object();
  if (Has(kinds, OutputKind::kDense)) j["dense"] = Floats(o.dense);
  if (Has(kinds, OutputKind::kSparse))
    j["sparse"] = {{"indices", o.sparse.indices}, {"values", Floats(o.sparse.values)}};
  if (Has(kinds, OutputKind::kMultivector)) {
    j["multivector"] = {{"dim", o.multivector.dim}, {"values", Floats(o.multivector.values)}};
  }
  return j;
}

json ExtractJson(const ExtractOutput& o) {
  json j = json::object();
  if (o.lines) {
    json lines = json::array();
    for (const TextLine& l : *o.lines)
      lines.push_back({{"text", l.text}, {"confidence", l.confidence}});
    j["lines"] = std::move(lines);
  } else if (!o.labels.empty()) {
    json labels = json::array();
    for (const LabelScore& l : o.labels) labels.push_back({{"label", l.label}, {"score", l.score}});
    j["labels"] = std::move(labels);
  } else {
    json entities = json::array();
    for (const Entity& e : o.entities) {
      entities.push_back(
          {{"label", e.label}, {"score", e.score}, {"start", e.start}, {"end", e.end}});
    }
    j["entities"] = std::move(entities);
  }
  return j;
}

double Seconds(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

uint32_t BatchOf(const ModelSpec& spec) {
  return std::clamp<uint32_t>(spec.batching.max_batch_requests, 1, 32);
}

// Runs the probes once (their answers: `answers`, each ok), then times
// batches of them cycled to the model's batch size — until the budget or
// kMaxTimedBatches — for the capacity estimate. `run` is the model's call
// for the task (Encode, Score, Extract).
template <typename In, typename Out, typename Run>
Status AnswerAndTime(const std::vector<In>& probes, const ModelSpec& spec, Run run,
                     std::vector<Out>* answers, CapacityEstimate* capacity) {
  answers->assign(probes.size(), Out{});
  SHOAL_RETURN_IF_ERROR(run(probes, *answers));
  for (const Out& o : *answers) SHOAL_RETURN_IF_ERROR(o.status);
  std::vector<In> batch;
  for (size_t i = 0; i < BatchOf(spec); ++i) batch.push_back(probes[i % probes.size()]);
  std::vector<Out> timed(batch.size());
  int runs = 0;
  const auto start = SteadyClock::now();
  do {
    SHOAL_RETURN_IF_ERROR(run(batch, timed));
    ++runs;
  } while (runs < kMaxTimedBatches && SteadyClock::now() - start < kTimingBudget);
  capacity->per_second = static_cast<double>(batch.size()) * runs /
                         std::max(1e-9, Seconds(SteadyClock::now() - start));
  capacity->batch = static_cast<uint32_t>(batch.size());
  return Status::Ok();
}

Status ProbeEncode(Model& model, const ModelSpec& spec, json* outputs, CapacityEstimate* capacity) {
  std::vector<EncodeInput> probes;
  const OutputKinds kinds = spec.encode_outputs();
  // Truncation asked only of a model whose limit a sentence could reach (no
  // tokenizer spends more than a token a byte on them, plus its specials):
  // for the others it could change nothing, and an upstream cannot be asked.
  EncodeInput probe;
  probe.truncate = spec.max_input_tokens < kSentenceTokensAtMost;
  probe.outputs = kinds;
  probe.role = InputRole::kDocument;
  if (model.takes_images()) {
    probe.image = kTestImage;
    probes.push_back(probe);
  } else {
    for (std::string_view s : kSentences) {
      probe.text = s;
      probes.push_back(probe);
    }
  }
  std::vector<EncodeOutput> out;
  SHOAL_RETURN_IF_ERROR(AnswerAndTime(
      probes, spec, [&](const auto& in, auto& answers) { return model.Encode(in, answers); }, &out,
      capacity));
  for (const EncodeOutput& o : out) outputs->push_back(EncodeJson(o, kinds));
  return Status::Ok();
}

Status ProbeScore(Model& model, const ModelSpec& spec, json* outputs, CapacityEstimate* capacity) {
  std::vector<ScoreInput> probes;
  for (const auto& [q, d] : kPairs) probes.push_back({.text = q, .text_pair = d, .truncate = true});
  std::vector<ScoreOutput> out;
  SHOAL_RETURN_IF_ERROR(AnswerAndTime(
      probes, spec, [&](const auto& in, auto& answers) { return model.Score(in, answers); }, &out,
      capacity));
  for (const ScoreOutput& o : out) outputs->push_back({{"logits", o.logits}});
  return Status::Ok();
}

Status ProbeExtract(Model& model, const ModelSpec& spec, json* outputs,
                    CapacityEstimate* capacity) {
  std::vector<ExtractInput> probes;
  if (model.takes_images()) {
    probes.push_back({.image = kTestImage});
  } else {
    for (std::string_view s : kEntitySentences) probes.push_back({.text = s, .truncate = true});
  }
  std::vector<ExtractOutput> out;
  SHOAL_RETURN_IF_ERROR(AnswerAndTime(
      probes, spec, [&](const auto& in, auto& answers) { return model.Extract(in, answers); }, &out,
      capacity));
  for (const ExtractOutput& o : out) outputs->push_back(ExtractJson(o));
  return Status::Ok();
}

struct Greedy {
  std::string text;
  uint32_t tokens = 0;
};

// Greedy decoding on a generator the worker steps (generator.h): the prompt
// in one chunk, then a token a step, in blocks of the model's own KV pool.
// The text is what a client reads (text_stream.h: bytes that form no
// character are U+FFFD), as a runtime that streams gives it.
Result<Greedy> GreedyNative(Generator& g, std::string_view prompt, int threads) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<int32_t> ids, g.EncodePrompt(prompt, true));
  const GeneratorInfo& info = g.info();
  const uint32_t total = static_cast<uint32_t>(ids.size()) + kGeneratedTokens;
  if (ids.empty() || total > info.max_context)
    return InvalidInput("a probe prompt does not fit the context");
  std::vector<int32_t> blocks;
  for (uint32_t b = 0; b * info.kv_block_tokens < total; ++b)
    blocks.push_back(static_cast<int32_t>(b));
  if (blocks.size() > info.kv_blocks)
    return InvalidInput("the KV cache cannot hold a probe prompt");
  std::vector<float> logits(info.vocab_size);
  Greedy out;
  std::vector<int32_t> step = ids;
  uint32_t start = 0;
  TextStream text({});
  while (out.tokens < kGeneratedTokens) {
    SequenceChunk chunk{
        .tokens = step, .start = start, .blocks = blocks, .logit_rows = 1, .lora = {}, .embeddings = {}};
    SHOAL_RETURN_IF_ERROR(g.Forward({&chunk, 1}, logits.data(), threads));
    const auto best =
        static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (!std::isfinite(logits[best])) return InvalidInput("a probe prompt gave non-finite logits");
    if (std::find(info.eos_ids.begin(), info.eos_ids.end(), best) != info.eos_ids.end()) break;
    out.text += text.Push(g.TokenBytes(best));
    ++out.tokens;
    start += static_cast<uint32_t>(step.size());
    step = {best};
  }
  out.text += text.Finish();
  return out;
}

// Greedy decoding on a runtime that schedules its own sequences.
Result<Greedy> GreedyStreaming(StreamingGenerator& g, std::string_view prompt) {
  GenerationJob job;
  job.prompt = std::string(prompt);
  job.max_tokens = kGeneratedTokens;
  job.sampling.temperature = 0;
  auto out = std::make_shared<Greedy>();
  std::promise<Status> ended;
  auto result = ended.get_future();
  g.Start(std::move(job), [&ended, out](GenerationUpdate&& u) {
    out->text += u.text;
    out->tokens += static_cast<uint32_t>(u.token_ids.size());
    if (u.final) ended.set_value(u.status);
  });
  SHOAL_RETURN_IF_ERROR(result.get());
  return *out;
}

Status ProbeGenerate(Model& model, const ModelSpec& spec, json* outputs,
                     CapacityEstimate* capacity) {
  Generator* native = model.generator();
  StreamingGenerator* streaming = model.streaming_generator();
  if (!native && !streaming) return InvalidInput("the runtime loaded it, but it does not generate");
  uint32_t tokens = 0;
  const auto start = SteadyClock::now();
  for (std::string_view prompt : kPrompts) {
    auto greedy = streaming ? GreedyStreaming(*streaming, prompt)
                            : GreedyNative(*native, prompt,
                                           static_cast<int>(std::max<uint32_t>(1, spec.threads)));
    if (!greedy.ok()) return greedy.status();
    outputs->push_back({{"text", greedy->text}, {"tokens", greedy->tokens}});
    tokens += greedy->tokens;
  }
  capacity->per_second = tokens / std::max(1e-9, Seconds(SteadyClock::now() - start));
  capacity->batch = 1;
  return Status::Ok();
}

}  // namespace

Result<ProbeRun> RunProbes(Model& model, const ModelSpec& spec) {
  json outputs = json::array();
  ProbeRun run;
  run.capacity.hardware_class = CurrentHardwareClass();
  run.capacity.unit = spec.task == Task::kGenerate ? "tokens" : "items";
  Status s;
  switch (spec.task) {
    case Task::kEncode:
      s = ProbeEncode(model, spec, &outputs, &run.capacity);
      break;
    case Task::kScore:
      s = ProbeScore(model, spec, &outputs, &run.capacity);
      break;
    case Task::kExtract:
      s = ProbeExtract(model, spec, &outputs, &run.capacity);
      break;
    case Task::kGenerate:
      s = ProbeGenerate(model, spec, &outputs, &run.capacity);
      break;
    case Task::kTokenize:
      s = InvalidInput("tokenize is no model's task");
      break;
  }
  if (!s.ok()) return Status(Code::kInvalidInput, "probe set: " + s.message());
  // A model's text is valid UTF-8 by now; were one not, its bytes are
  // replaced rather than the dump throwing on the admin thread.
  run.golden_json = json{{"probe_set", kProbeSetName},
                         {"task", TaskName(spec.task)},
                         {"outputs", std::move(outputs)}}
                        .dump(-1, ' ', false, json::error_handler_t::replace);
  return run;
}

}  // namespace shoal::admin
