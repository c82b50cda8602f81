#include "catalog/model_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/hardware.h"
#include "common/utf8.h"
#include "catalog/names.h"

namespace shoal {
namespace {

using nlohmann::json;

// YAML has no scalar types of its own: a plain scalar that reads as a bool,
// an integer or a float becomes one; quoted scalars stay strings.
json YamlToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) a.push_back(YamlToJson(e));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return o;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted
      if (s == "true" || s == "True") return true;
      if (s == "false" || s == "False") return false;
      if (s == "null" || s == "~") return nullptr;
      try {
        size_t used = 0;
        long long i = std::stoll(s, &used);
        if (used == s.size()) return i;
        double d = std::stod(s, &used);
        if (used == s.size()) return d;
      } catch (...) {
      }
      return s;
    }
  }
  return nullptr;
}

Status ReadU32(const json& o, const char* key, const std::string& where, uint32_t* v) {
  auto it = o.find(key);
  if (it == o.end()) return Status::Ok();
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > UINT32_MAX) {
    return InvalidInput(where + key + ": expected a non-negative integer");
  }
  *v = it->get<uint32_t>();
  return Status::Ok();
}

Status ReadString(const json& o, const char* key, std::string* v) {
  auto it = o.find(key);
  if (it == o.end()) return Status::Ok();
  if (!it->is_string()) return InvalidInput(std::string(key) + ": expected a string");
  *v = it->get<std::string>();
  return Status::Ok();
}

// `batching.adaptive`; absent leaves it off.
Status ReadAdaptive(const json& batching, AdaptiveBatchingSpec* a) {
  auto it = batching.find("adaptive");
  if (it == batching.end()) return Status::Ok();
  if (!it->is_object()) return InvalidInput("batching.adaptive: expected a mapping");
  for (auto f = it->begin(); f != it->end(); ++f) {
    if (f.key() != "target_ms" && f.key() != "min_wait_ms" && f.key() != "max_wait_ms") {
      return InvalidInput("batching.adaptive: unknown field '" + f.key() + "'");
    }
  }
  a->enabled = true;
  SHOAL_RETURN_IF_ERROR(ReadU32(*it, "target_ms", "batching.adaptive.", &a->target_ms));
  SHOAL_RETURN_IF_ERROR(ReadU32(*it, "min_wait_ms", "batching.adaptive.", &a->min_wait_ms));
  SHOAL_RETURN_IF_ERROR(ReadU32(*it, "max_wait_ms", "batching.adaptive.", &a->max_wait_ms));
  if (a->target_ms < 1) return InvalidInput("batching.adaptive.target_ms: at least 1");
  if (a->max_wait_ms > 10000) return InvalidInput("batching.adaptive.max_wait_ms: at most 10000");
  if (a->min_wait_ms > a->max_wait_ms) {
    return InvalidInput("batching.adaptive.min_wait_ms: must not exceed max_wait_ms");
  }
  return Status::Ok();
}

// The fields a `batching:` mapping may set through ReadU32.
Status ReadBatchingLimits(const json& b, const std::string& where, BatchingSpec* batching) {
  SHOAL_RETURN_IF_ERROR(ReadU32(b, "max_batch_tokens", where, &batching->max_batch_tokens));
  SHOAL_RETURN_IF_ERROR(ReadU32(b, "max_batch_requests", where, &batching->max_batch_requests));
  SHOAL_RETURN_IF_ERROR(ReadU32(b, "max_batch_wait_ms", where, &batching->max_batch_wait_ms));
  return Status::Ok();
}

// Applies the `tuned:` entry for `hardware_class` (model_spec.h has the
// precedence) after the profile's own fields are read, keeping those as the
// base ToJson writes. Only that entry is checked field by field: the others
// are for other machines, perhaps written by a newer Shoal.
Status ApplyTuned(const json& tuned, std::string_view hardware_class, ModelSpec* spec) {
  if (!tuned.is_object()) return InvalidInput("tuned: expected a mapping of hardware classes");
  for (auto it = tuned.begin(); it != tuned.end(); ++it) {
    if (!IsHardwareClass(it.key())) {
      return InvalidInput("tuned: '" + it.key() + "' is not a hardware class ([a-z0-9_-], e.g. cpu-x86_64-avx2-8c)");
    }
    if (!it->is_object()) return InvalidInput("tuned." + it.key() + ": expected a mapping");
  }
  spec->tuned.json = tuned.dump();
  auto entry = hardware_class.empty() ? tuned.end() : tuned.find(std::string(hardware_class));
  if (entry == tuned.end()) return Status::Ok();

  const std::string where = "tuned." + entry.key() + ".";
  for (auto f = entry->begin(); f != entry->end(); ++f) {
    if (f.key() != "batching" && f.key() != "threads" && f.key() != "evidence" && f.key() != spec->runtime) {
      return InvalidInput(where + f.key() + ": unknown field (batching, threads, " + spec->runtime + ", evidence)");
    }
  }
  TunedSection& t = spec->tuned;
  t.applied_class = entry.key();
  t.base_batching = spec->batching;
  t.base_runtime_options_json = spec->runtime_options_json;
  t.base_threads = spec->threads;
  if (auto b = entry->find("batching"); b != entry->end()) {
    if (!b->is_object()) return InvalidInput(where + "batching: expected a mapping");
    for (auto f = b->begin(); f != b->end(); ++f) {
      if (f.key() != "max_batch_tokens" && f.key() != "max_batch_requests" && f.key() != "max_batch_wait_ms") {
        return InvalidInput(where + "batching." + f.key() +
                            ": unknown field (max_batch_tokens, max_batch_requests, max_batch_wait_ms)");
      }
    }
    SHOAL_RETURN_IF_ERROR(ReadBatchingLimits(*b, where + "batching.", &spec->batching));
  }
  SHOAL_RETURN_IF_ERROR(ReadU32(*entry, "threads", where, &spec->threads));
  if (auto r = entry->find(spec->runtime); r != entry->end()) {
    if (!r->is_object()) return InvalidInput(where + spec->runtime + ": expected a mapping");
    json merged = json::parse(spec->runtime_options_json);
    for (auto f = r->begin(); f != r->end(); ++f) merged[f.key()] = f.value();
    spec->runtime_options_json = merged.dump();
  }
  if (auto e = entry->find("evidence"); e != entry->end() && !e->is_object()) {
    return InvalidInput(where + "evidence: expected a mapping");
  }
  return Status::Ok();
}

// `loras:` — a list of {name, path, memory_bytes?}. Names are checked and
// unique; paths are taken as given (LoadFile makes them absolute).
Status ReadLoras(const json& o, ModelSpec* spec) {
  auto it = o.find("loras");
  if (it == o.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return InvalidInput("loras: expected a list of {name, path, memory_bytes}");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& e = (*it)[i];
    const std::string where = "loras[" + std::to_string(i) + "].";
    if (!e.is_object()) return InvalidInput("loras[" + std::to_string(i) + "]: expected a mapping {name, path}");
    for (auto f = e.begin(); f != e.end(); ++f) {
      if (f.key() != "name" && f.key() != "path" && f.key() != "artifact" && f.key() != "memory_bytes") {
        return InvalidInput(where + f.key() + ": unknown field (name, path, artifact, memory_bytes)");
      }
    }
    LoraSpec lora;
    auto name = e.find("name");
    if (name == e.end() || !name->is_string()) return InvalidInput(where + "name: expected a string");
    lora.name = name->get<std::string>();
    if (Status s = ValidateLoraName(lora.name); !s.ok()) return InvalidInput(where + "name: " + s.message());
    SHOAL_RETURN_IF_ERROR(ReadString(e, "path", &lora.path));
    SHOAL_RETURN_IF_ERROR(ReadString(e, "artifact", &lora.artifact));
    if (lora.path.empty() && lora.artifact.empty()) {
      return InvalidInput(where + "path: expected the adapter's directory (or its artifact in the model store)");
    }
    if (!lora.artifact.empty()) SHOAL_RETURN_IF_ERROR(ValidateArtifactDigest(lora.artifact));
    if (auto m = e.find("memory_bytes"); m != e.end()) {
      if (!m->is_number_integer() || m->get<int64_t>() < 0) {
        return InvalidInput(where + "memory_bytes: expected a non-negative integer");
      }
      lora.memory_bytes = m->get<uint64_t>();
    }
    if (spec->FindLora(lora.name)) return InvalidInput(where + "name: '" + lora.name + "' is given twice");
    spec->loras.push_back(std::move(lora));
  }
  return Status::Ok();
}

// `matryoshka_dimensions:` positive sizes, largest first as model cards list
// them (any order is accepted; duplicates are not).
Status ReadMatryoshka(const json& o, ModelSpec* spec) {
  auto it = o.find("matryoshka_dimensions");
  if (it == o.end()) return Status::Ok();
  if (!it->is_array()) return InvalidInput("matryoshka_dimensions: expected a list of positive integers");
  for (const json& d : *it) {
    if (!d.is_number_integer() || d.get<int64_t>() <= 0 || d.get<int64_t>() > 1 << 20) {
      return InvalidInput("matryoshka_dimensions: expected a list of positive integers, got " + d.dump());
    }
    const auto v = d.get<uint32_t>();
    if (std::find(spec->matryoshka_dimensions.begin(), spec->matryoshka_dimensions.end(), v) !=
        spec->matryoshka_dimensions.end()) {
      return InvalidInput("matryoshka_dimensions: " + std::to_string(v) + " twice");
    }
    spec->matryoshka_dimensions.push_back(v);
  }
  return Status::Ok();
}

// `outputs:` the encode outputs the model produces, e.g. [dense, sparse].
Status ReadOutputs(const json& o, ModelSpec* spec) {
  auto it = o.find("outputs");
  if (it == o.end() || it->is_null()) return Status::Ok();
  if (!it->is_array() || it->empty()) return InvalidInput("outputs: expected a list of dense, sparse, multivector");
  for (const json& n : *it) {
    OutputKind k;
    if (!n.is_string() || !ParseOutputKind(n.get<std::string>(), &k)) {
      return InvalidInput("outputs: " + n.dump() + " is none of dense, sparse, multivector");
    }
    spec->outputs |= static_cast<OutputKinds>(k);
  }
  return Status::Ok();
}

// `speculative: {draft: ID | ngram, k: N}`.
Status ReadSpeculative(const json& o, ModelSpec* spec) {
  auto it = o.find("speculative");
  if (it == o.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return InvalidInput("speculative: expected a mapping {draft, k}");
  for (auto f = it->begin(); f != it->end(); ++f) {
    if (f.key() != "draft" && f.key() != "k") return InvalidInput("speculative: unknown field '" + f.key() + "'");
  }
  SpeculativeSpec& s = spec->speculative;
  SHOAL_RETURN_IF_ERROR(ReadString(*it, "draft", &s.draft));
  SHOAL_RETURN_IF_ERROR(ReadU32(*it, "k", "speculative.", &s.k));
  if (s.draft.empty()) return InvalidInput("speculative.draft: missing (a generator's id, or ngram)");
  if (Status st = s.ngram() ? Status::Ok() : ValidateModelId(s.draft); !st.ok()) {
    return InvalidInput("speculative.draft: " + st.message());
  }
  if (s.k < 1 || s.k > SpeculativeSpec::kMaxK) {
    return InvalidInput("speculative.k: " + std::to_string(s.k) + " is out of range (1.." +
                        std::to_string(SpeculativeSpec::kMaxK) + ")");
  }
  return Status::Ok();
}

// `prompts:` a mapping of names to the text put before an input.
Status ReadPrompts(const json& o, ModelSpec* spec) {
  auto it = o.find("prompts");
  if (it == o.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return InvalidInput("prompts: expected a mapping of names to texts");
  for (auto p = it->begin(); p != it->end(); ++p) {
    if (!p.value().is_string()) return InvalidInput("prompts." + p.key() + ": expected a string");
    spec->prompts.emplace_back(p.key(), p.value().get<std::string>());
  }
  return Status::Ok();
}

Status FromJson(const json& o, std::string_view hardware_class, ModelSpec* spec) {
  if (!o.is_object()) return InvalidInput("model spec: expected a mapping");
  static const char* kKnown[] = {"id",       "runtime", "path",   "task",         "pool",    "description",
                                 "max_input_tokens", "batching", "queue", "pinned", "memory_bytes", "threads",
                                 "loras", "tuned", "process", "matryoshka_dimensions", "prompts", "outputs",
                                 "speculative", "image_text_score", "artifact", "version", "canary"};
  SHOAL_RETURN_IF_ERROR(ReadString(o, "id", &spec->id));
  SHOAL_RETURN_IF_ERROR(ReadString(o, "runtime", &spec->runtime));
  SHOAL_RETURN_IF_ERROR(ReadString(o, "path", &spec->path));
  SHOAL_RETURN_IF_ERROR(ReadString(o, "artifact", &spec->artifact));
  if (!spec->artifact.empty()) SHOAL_RETURN_IF_ERROR(ValidateArtifactDigest(spec->artifact));
  std::string process;
  SHOAL_RETURN_IF_ERROR(ReadString(o, "process", &process));
  if (!process.empty()) {
    if (process == "worker") spec->process = RuntimeProcess::kWorker;
    else if (process == "shared") spec->process = RuntimeProcess::kShared;
    else if (process == "own") spec->process = RuntimeProcess::kOwn;
    else return InvalidInput("process: '" + process + "' is none of worker, shared, own");
  }
  std::string task = std::string(TaskName(spec->task));
  SHOAL_RETURN_IF_ERROR(ReadString(o, "task", &task));
  SHOAL_RETURN_IF_ERROR(ReadString(o, "pool", &spec->pool));
  SHOAL_RETURN_IF_ERROR(ReadString(o, "description", &spec->description));
  SHOAL_RETURN_IF_ERROR(ReadU32(o, "max_input_tokens", "", &spec->max_input_tokens));
  SHOAL_RETURN_IF_ERROR(ReadU32(o, "version", "", &spec->version));
  if (auto c = o.find("canary"); c != o.end()) {
    SHOAL_ASSIGN_OR_RETURN(spec->canary, CanarySpec::Parse(c->dump()));
  }
  if (auto p = o.find("pinned"); p != o.end()) {
    if (!p->is_boolean()) return InvalidInput("pinned: expected true or false");
    spec->pinned = p->get<bool>();
  }
  if (auto m = o.find("memory_bytes"); m != o.end()) {
    if (!m->is_number_integer() || m->get<int64_t>() < 0) {
      return InvalidInput("memory_bytes: expected a non-negative integer");
    }
    spec->memory_bytes = m->get<uint64_t>();
  }
  if (auto b = o.find("batching"); b != o.end()) {
    if (!b->is_object()) return InvalidInput("batching: expected a mapping");
    SHOAL_RETURN_IF_ERROR(ReadBatchingLimits(*b, "batching.", &spec->batching));
    SHOAL_RETURN_IF_ERROR(ReadAdaptive(*b, &spec->batching.adaptive));
  }
  if (auto q = o.find("queue"); q != o.end()) {
    if (!q->is_object()) return InvalidInput("queue: expected a mapping");
    SHOAL_RETURN_IF_ERROR(ReadU32(*q, "ack_wait_ms", "queue.", &spec->queue.ack_wait_ms));
    SHOAL_RETURN_IF_ERROR(ReadU32(*q, "max_deliver", "queue.", &spec->queue.max_deliver));
  }

  SHOAL_RETURN_IF_ERROR(ReadSpeculative(o, spec));
  SHOAL_RETURN_IF_ERROR(ReadU32(o, "threads", "", &spec->threads));
  SHOAL_RETURN_IF_ERROR(ReadLoras(o, spec));
  SHOAL_RETURN_IF_ERROR(ReadMatryoshka(o, spec));
  SHOAL_RETURN_IF_ERROR(ReadPrompts(o, spec));
  SHOAL_RETURN_IF_ERROR(ReadOutputs(o, spec));
  std::string image_text_score;
  SHOAL_RETURN_IF_ERROR(ReadString(o, "image_text_score", &image_text_score));
  if (image_text_score == "sigmoid") spec->image_text_score = ImageTextScore::kSigmoid;
  else if (image_text_score == "softmax") spec->image_text_score = ImageTextScore::kSoftmax;
  else if (!image_text_score.empty()) return InvalidInput("image_text_score: '" + image_text_score + "' is neither sigmoid nor softmax");

  SHOAL_RETURN_IF_ERROR(ValidateServedName(spec->id));
  if (auto ref = SplitVersionRef(spec->id); ref->version != 0 && ref->version != spec->version) {
    return InvalidInput("version: '" + spec->id + "' is version " + std::to_string(ref->version) + ", not " +
                        std::to_string(spec->version));
  }
  if (spec->runtime.empty()) return InvalidInput("runtime: missing");
  if (!ParseTask(task, &spec->task) || spec->task == Task::kTokenize) {
    return InvalidInput("task: '" + task + "' is not supported (supported: encode, score, extract, generate)");
  }
  SHOAL_RETURN_IF_ERROR(ValidatePoolName(spec->pool));
  if (spec->batching.max_batch_requests == 0 || spec->batching.max_batch_tokens == 0) {
    return InvalidInput("batching: max_batch_requests and max_batch_tokens must be positive");
  }
  if (spec->queue.ack_wait_ms < 100) return InvalidInput("queue.ack_wait_ms: at least 100");
  if (spec->queue.max_deliver == 0) return InvalidInput("queue.max_deliver: at least 1");
  if (spec->speculative.enabled() && spec->task != Task::kGenerate) {
    return InvalidInput("speculative: only a generator (task: generate) decodes speculatively");
  }
  if (spec->image_text_score != ImageTextScore::kNone && spec->task != Task::kEncode) {
    return InvalidInput("image_text_score: only an image–text embedder (task: encode) scores images");
  }
  if (spec->speculative.draft == spec->id) {
    return InvalidInput("speculative.draft: a model cannot draft for itself (name a smaller generator, or ngram)");
  }

  // Anything else must be the runtime's own section.
  for (auto it = o.begin(); it != o.end(); ++it) {
    bool known = it.key() == spec->runtime;
    for (const char* k : kKnown) known = known || it.key() == k;
    if (!known) return InvalidInput("unknown field '" + it.key() + "'");
  }
  if (auto r = o.find(spec->runtime); r != o.end()) {
    if (!r->is_object()) return InvalidInput(spec->runtime + ": expected a mapping");
    spec->runtime_options_json = r->dump();
  }
  if (auto t = o.find("tuned"); t != o.end() && !t->is_null()) {
    SHOAL_RETURN_IF_ERROR(ApplyTuned(*t, hardware_class, spec));
    if (spec->batching.max_batch_requests == 0 || spec->batching.max_batch_tokens == 0) {
      return InvalidInput("tuned." + spec->tuned.applied_class +
                          ".batching: max_batch_requests and max_batch_tokens must be positive");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string CanarySpec::ToJson() const {
  return json{{"version", version},
              {"mode", shadow() ? "shadow" : "split"},
              {"fraction", fraction},
              {"max_error_rate", max_error_rate},
              {"min_requests", min_requests},
              {"min_cosine", min_cosine},
              {"min_agreement", min_agreement}}
      .dump();
}

Result<CanarySpec> CanarySpec::Parse(std::string_view text) {
  const json o = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!o.is_object()) return InvalidInput("canary: expected a mapping");
  static const std::set<std::string, std::less<>> kKeys = {
      "version", "mode", "fraction", "max_error_rate", "min_requests", "min_cosine", "min_agreement"};
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (!kKeys.count(it.key())) {
      return InvalidInput("canary." + it.key() +
                          ": not a canary field (version, mode, fraction, max_error_rate, "
                          "min_requests, min_cosine, min_agreement)");
    }
  }
  CanarySpec c;
  SHOAL_RETURN_IF_ERROR(ReadU32(o, "version", "canary.", &c.version));
  SHOAL_RETURN_IF_ERROR(ReadU32(o, "min_requests", "canary.", &c.min_requests));
  if (auto m = o.find("mode"); m != o.end()) {
    if (*m == "shadow") {
      c.mode = CanaryMode::kShadow;
    } else if (*m != "split") {
      return InvalidInput("canary.mode: expected \"split\" or \"shadow\"");
    }
  }
  for (auto [key, field] : {std::pair{"fraction", &c.fraction}, std::pair{"max_error_rate", &c.max_error_rate},
                            std::pair{"min_cosine", &c.min_cosine}, std::pair{"min_agreement", &c.min_agreement}}) {
    if (auto f = o.find(key); f != o.end()) {
      if (!f->is_number() || f->get<double>() < 0 || f->get<double>() > 1) {
        return InvalidInput(std::string("canary.") + key + ": expected a number from 0 to 1");
      }
      *field = f->get<double>();
    }
  }
  if (!c.shadow() && (c.min_cosine > 0 || c.min_agreement > 0)) {
    return InvalidInput(std::string("canary.") + (c.min_cosine > 0 ? "min_cosine" : "min_agreement") +
                        ": answers are compared on shadowed requests only (\"mode\": \"shadow\")");
  }
  return c;
}

std::string_view RuntimeProcessName(RuntimeProcess p) {
  switch (p) {
    case RuntimeProcess::kDefault: return "default";
    case RuntimeProcess::kWorker: return "worker";
    case RuntimeProcess::kShared: return "shared";
    case RuntimeProcess::kOwn: return "own";
  }
  return "default";
}

std::string ModelSpec::ToJson() const {
  // With an applied entry, the profile's own values (model_spec.h).
  const bool applied = !tuned.applied_class.empty();
  const BatchingSpec& batching = applied ? tuned.base_batching : this->batching;
  const std::string& runtime_options_json = applied ? tuned.base_runtime_options_json : this->runtime_options_json;
  const uint32_t threads = applied ? tuned.base_threads : this->threads;
  json o = {
      {"id", id},
      {"runtime", runtime},
      {"task", std::string(TaskName(task))},
      {"pool", pool},
      {"description", description},
      {"max_input_tokens", max_input_tokens},
      {"batching",
       {{"max_batch_tokens", batching.max_batch_tokens},
        {"max_batch_requests", batching.max_batch_requests},
        {"max_batch_wait_ms", batching.max_batch_wait_ms}}},
      {"queue", {{"ack_wait_ms", queue.ack_wait_ms}, {"max_deliver", queue.max_deliver}}},
      {"pinned", pinned},
      {"memory_bytes", memory_bytes},
  };
  if (batching.adaptive.enabled) {
    o["batching"]["adaptive"] = {{"target_ms", batching.adaptive.target_ms},
                                 {"min_wait_ms", batching.adaptive.min_wait_ms},
                                 {"max_wait_ms", batching.adaptive.max_wait_ms}};
  }
  if (!path.empty()) o["path"] = path;
  if (!artifact.empty()) o["artifact"] = artifact;
  if (version != 0) o["version"] = version;
  if (canary.active()) o["canary"] = json::parse(canary.ToJson());
  if (process != RuntimeProcess::kDefault) o["process"] = std::string(RuntimeProcessName(process));
  o[runtime] = json::parse(runtime_options_json);
  if (threads > 0) o["threads"] = threads;
  if (!loras.empty()) {
    json list = json::array();
    for (const LoraSpec& l : loras) {
      json e{{"name", l.name}, {"memory_bytes", l.memory_bytes}};
      if (!l.path.empty()) e["path"] = l.path;
      if (!l.artifact.empty()) e["artifact"] = l.artifact;
      list.push_back(std::move(e));
    }
    o["loras"] = std::move(list);
  }
  if (speculative.enabled()) o["speculative"] = {{"draft", speculative.draft}, {"k", speculative.k}};
  if (!matryoshka_dimensions.empty()) o["matryoshka_dimensions"] = matryoshka_dimensions;
  if (!prompts.empty()) {
    json p = json::object();
    for (const auto& [name, text] : prompts) p[name] = text;
    o["prompts"] = std::move(p);
  }
  if (outputs != 0) {
    json list = json::array();
    for (OutputKind k : kOutputKindOrder) {
      if (Has(outputs, k)) list.push_back(std::string(OutputKindName(k)));
    }
    o["outputs"] = std::move(list);
  }
  if (image_text_score != ImageTextScore::kNone) {
    o["image_text_score"] = image_text_score == ImageTextScore::kSigmoid ? "sigmoid" : "softmax";
  }
  if (!tuned.json.empty()) o["tuned"] = json::parse(tuned.json);
  return o.dump();
}

const std::string* ModelSpec::FindPrompt(std::string_view name) const {
  for (const auto& [n, text] : prompts) {
    if (n == name) return &text;
  }
  return nullptr;
}

const LoraSpec* ModelSpec::FindLora(std::string_view name) const {
  for (const LoraSpec& l : loras) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

// Keeps `loras`: adapters are the profile's own, never tuned.
ModelSpec ModelSpec::WithoutTuned() const {
  ModelSpec s = *this;
  if (!tuned.applied_class.empty()) {
    s.batching = tuned.base_batching;
    s.runtime_options_json = tuned.base_runtime_options_json;
    s.threads = tuned.base_threads;
  }
  s.tuned = TunedSection{};
  return s;
}

Result<ModelSpec> ModelSpec::Parse(std::string_view text) { return Parse(text, CurrentHardwareClass()); }

Result<ModelSpec> ModelSpec::Parse(std::string_view text, std::string_view hardware_class) {
  if (const size_t bad = FirstInvalidUtf8(text); bad != std::string_view::npos) {
    return InvalidInput("model spec: not valid UTF-8 (byte " + std::to_string(bad) + ")");
  }
  json o;
  try {
    o = YamlToJson(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    return InvalidInput(std::string("model spec: not valid YAML/JSON: ") + e.what());
  }
  ModelSpec spec;
  SHOAL_RETURN_IF_ERROR(FromJson(o, hardware_class, &spec));
  return spec;
}

Result<ModelSpec> ModelSpec::LoadFile(const std::string& path) { return LoadFile(path, CurrentHardwareClass()); }

Result<ModelSpec> ModelSpec::LoadFile(const std::string& path, std::string_view hardware_class) {
  std::ifstream in(path);
  if (!in) return InvalidInput("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto spec = Parse(ss.str(), hardware_class);
  if (!spec.ok()) return Status(spec.status().code(), path + ": " + spec.status().message());
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(path).parent_path();
  if (!spec->path.empty()) spec->path = fs::weakly_canonical(fs::absolute(dir / spec->path)).string();
  for (LoraSpec& l : spec->loras) {
    if (!l.path.empty()) l.path = fs::weakly_canonical(fs::absolute(dir / l.path)).string();
  }
  return spec;
}


}  // namespace shoal

namespace shoal {

Result<std::vector<ModelSpec>> LoadModelProfiles(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".yaml") paths.push_back(e.path().string());
  }
  if (ec) return InvalidInput("cannot list " + dir + ": " + ec.message());
  std::sort(paths.begin(), paths.end());
  std::vector<ModelSpec> specs;
  for (const auto& p : paths) {
    auto spec = ModelSpec::LoadFile(p);
    if (!spec.ok()) return spec.status();
    specs.push_back(std::move(spec).value());
  }
  return specs;
}

}  // namespace shoal
