#include "admin/catalog_admin.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <future>

#include "admin/provenance.h"
#include "common/clock.h"
#include "common/log.h"
#include "queue/catalog_watch.h"
#include "runtime/generator.h"
#include "runtime/runtime.h"
#include "runtime/registry/registry.h"

namespace shoal::admin {
namespace {

// Where registration loads a model to check it: as the worker would, so a
// profile asking for a runtime process is checked in one (started for the
// check, stopped when the model is let go).
ModelRuntimes& CheckRuntimes() {
  static ModelRuntimes runtimes;
  return runtimes;
}

bool AllFinite(const std::vector<float>& v) {
  for (float x : v) {
    if (!std::isfinite(x)) return false;
  }
  return !v.empty();
}

// One small request through the loaded model: a model whose weights load but
// compute garbage (NaN from a corrupt tensor) is refused too.
// A runtime that schedules its own sequences: one greedy token.
Status SmokeStream(StreamingGenerator& g) {
  GenerationJob job;
  job.prompt = "what is shoal";
  job.max_tokens = 1;
  job.sampling.temperature = 0;
  std::promise<Status> ended;
  auto result = ended.get_future();
  g.Start(std::move(job), [&ended](GenerationUpdate&& u) {
    if (u.final) ended.set_value(u.status);
  });
  return result.get();
}

Status Smoke(Model& model, const ModelSpec& spec) {
  if (spec.task == Task::kGenerate && model.streaming_generator()) return SmokeStream(*model.streaming_generator());
  if (spec.task == Task::kGenerate) {
    Generator* g = model.generator();
    if (!g) return InvalidInput(spec.id + ": the runtime loaded it, but it does not generate");
    auto ids = g->EncodePrompt("what is shoal", true);
    if (!ids.ok()) return ids.status();
    if (ids->empty() || ids->size() >= g->info().max_context) return InvalidInput(spec.id + ": the test prompt does not fit");
    std::vector<int32_t> blocks;
    for (uint32_t b = 0; b * g->info().kv_block_tokens < ids->size(); ++b) blocks.push_back(static_cast<int32_t>(b));
    if (blocks.size() > g->info().kv_blocks) return InvalidInput(spec.id + ": the KV cache cannot hold a test prompt");
    SequenceChunk chunk{.tokens = *ids, .start = 0, .blocks = blocks, .logit_rows = 1, .lora = {}};
    std::vector<float> logits(g->info().vocab_size);
    SHOAL_RETURN_IF_ERROR(g->Forward({&chunk, 1}, logits.data(), 1));
    if (!AllFinite(logits)) return InvalidInput(spec.id + ": a test prompt gave non-finite logits");
    return Status::Ok();
  }
  if (spec.task == Task::kScore) {
    ScoreInput in{.text = "what is shoal", .text_pair = "a queue of small models", .truncate = true, .lora = {}};
    ScoreOutput out;
    SHOAL_RETURN_IF_ERROR(model.Score({&in, 1}, {&out, 1}));
    SHOAL_RETURN_IF_ERROR(out.status);
    if (!AllFinite(out.logits)) return InvalidInput(spec.id + ": a test query scored a non-finite number");
    return Status::Ok();
  }
  if (spec.task == Task::kExtract) {
    ExtractInput in{.text = "Ada Lovelace wrote in London", .truncate = true, .lora = {}, .aggregation = {},
                    .top_k = 0};
    if (model.takes_images()) in = {.image = kTestImage};
    ExtractOutput out;
    SHOAL_RETURN_IF_ERROR(model.Extract({&in, 1}, {&out, 1}));
    SHOAL_RETURN_IF_ERROR(out.status);
    for (const Entity& e : out.entities) {
      if (!std::isfinite(e.score)) return InvalidInput(spec.id + ": a test sentence gave a non-finite score");
    }
    for (const LabelScore& l : out.labels) {
      if (!std::isfinite(l.score)) return InvalidInput(spec.id + ": a test sentence gave a non-finite score");
    }
    return Status::Ok();
  }
  // The outputs the profile promises must be the model's.
  if (const OutputKinds missing = spec.encode_outputs() & ~model.encode_outputs(); missing != 0) {
    return InvalidInput("outputs: the model produces " + OutputKindsText(model.encode_outputs()) + ", not " +
                        OutputKindsText(missing));
  }
  // Short enough for any model, so no runtime is asked to truncate (an
  // upstream cannot be); every output the profile lists, as a document.
  EncodeInput in{.text = "what is shoal",
                 .truncate = false,
                 .normalize = true,
                 .lora = {},
                 .outputs = spec.encode_outputs(),
                 .role = InputRole::kDocument};
  if (model.takes_images()) {
    in.text = {};
    in.image = kTestImage;
  }
  EncodeOutput out;
  SHOAL_RETURN_IF_ERROR(model.Encode({&in, 1}, {&out, 1}));
  SHOAL_RETURN_IF_ERROR(out.status);
  // Each output asked for, there and finite (a sparse vector may be empty).
  const bool finite = (!Has(in.outputs, OutputKind::kDense) || AllFinite(out.dense)) &&
                      (!Has(in.outputs, OutputKind::kMultivector) || AllFinite(out.multivector.values)) &&
                      std::all_of(out.sparse.values.begin(), out.sparse.values.end(),
                                  [](float x) { return std::isfinite(x); });
  if (!finite) return InvalidInput(spec.id + ": a test sentence encoded to non-finite numbers");
  if (spec.image_text_score != ImageTextScore::kNone) {  // its text tower, through a score
    ScoreInput pair{.text = "what is shoal", .image = kTestImage, .truncate = true};
    ScoreOutput scored;
    SHOAL_RETURN_IF_ERROR(model.Score({&pair, 1}, {&scored, 1}));
    SHOAL_RETURN_IF_ERROR(scored.status);
    if (scored.logits.size() != 1 || !AllFinite(scored.logits)) {
      return InvalidInput(spec.id + ": a test text and image scored no finite number");
    }
  }
  return Status::Ok();
}

Result<ModelSpec> ParseEntry(kvEntry* e) {
  auto spec = ModelSpec::Parse(std::string_view(kvEntry_ValueString(e), kvEntry_ValueLen(e)));
  kvEntry_Destroy(e);
  return spec;
}

}  // namespace

Result<ModelCheck> CheckModel(const ModelSpec& spec) {
  if (RunsInItsOwnProcess(spec.runtime) && spec.process == RuntimeProcess::kWorker) {
    return InvalidInput(spec.id + ": runtime '" + spec.runtime + "' runs in a runtime process of its own "
                        "(process: shared or own), not in the worker's");
  }
  Runtime* runtime = CheckRuntimes().For(spec);
  if (!runtime) return InvalidInput("runtime '" + spec.runtime + "' is not known to this build");
  auto config = ModelConfig::FromSpec(spec);
  if (!config.ok()) return Status(Code::kInvalidInput, spec.id + ": " + config.status().message());
  auto model = runtime->Load(*config, LoadContext{});
  if (!model.ok()) return Status(Code::kInvalidInput, spec.id + ": " + model.status().message());
  if (Status s = Smoke(**model, spec); !s.ok()) {
    return Status(Code::kInvalidInput, spec.id + ": test request failed: " + s.message());
  }
  auto probes = RunProbes(**model, spec);
  if (!probes.ok()) return Status(Code::kInvalidInput, spec.id + ": " + probes.status().message());
  return ModelCheck{.memory_bytes = static_cast<uint64_t>((*model)->memory_bytes()), .probes = std::move(*probes)};
}

Result<CatalogAdmin> CatalogAdmin::Connect(const std::string& nats_url,
                                           const queue::NatsSecurity& security, int replicas) {
  CatalogAdmin a;
  auto control = queue::ControlPlane::Connect(nats_url, "shoal-admin", security, replicas);
  if (!control.ok()) return control.status();
  a.owned_ = std::move(control).value();
  a.models_ = a.owned_.models.get();
  a.versions_ = a.owned_.versions.get();
  a.js_ = a.owned_.js.get();
  return a;
}

Result<VersionView> CatalogAdmin::Register(ModelSpec spec, const RegisterOptions& options) {
  SHOAL_RETURN_IF_ERROR(ValidateModelId(spec.id));
  if (spec.version != 0) return InvalidInput("version: the catalog numbers versions; a profile names none");
  // Speculation runs in the worker's generation engine, on the native
  // runtime's generators; a draft model must be registered first (workers
  // load it from the catalog with the model; its tokenizer is checked then).
  if (spec.speculative.enabled() && spec.runtime != "native") {
    return InvalidInput(spec.id + ": speculative: the " + spec.runtime +
                        " runtime does not decode speculatively (the native runtime's generators do)");
  }
  if (spec.speculative.enabled() && !spec.speculative.ngram()) {
    auto draft = Get(spec.speculative.draft);
    if (!draft.ok()) {
      return InvalidInput(spec.id + ": speculative.draft: " + draft.status().message() + " (register it first)");
    }
    if (draft->task != Task::kGenerate) {
      return InvalidInput(spec.id + ": speculative.draft: '" + draft->id + "' does not generate");
    }
  }
  auto license = SettleLicense(spec.path, options.license, options.require_license);
  if (!license.ok()) return license.status();
  if (!options.candidate) SHOAL_RETURN_IF_ERROR(TakesAdapters(spec.id, spec));
  auto check = CheckModel(spec);
  if (!check.ok()) return check.status();
  spec.memory_bytes = check->memory_bytes;
  // Adapters the profile names are checked and measured as AddLora does.
  auto base = ModelConfig::FromSpec(spec);
  if (!base.ok()) return Status(Code::kInvalidInput, spec.id + ": " + base.status().message());
  for (LoraSpec& lora : spec.loras) {
    auto lora_bytes = CheckRuntimes().For(spec)->CheckLora(*base, {lora.name, lora.path});
    if (!lora_bytes.ok()) return Status(Code::kInvalidInput, spec.id + ": " + lora_bytes.status().message());
    lora.memory_bytes = *lora_bytes;
  }
  ModelVersion v{.version = 0, .spec = spec, .record = {}};
  PromotionRecord& r = v.record;
  r.source = !spec.artifact.empty() ? "artifact:" + spec.artifact : !spec.path.empty() ? "path:" + spec.path : "spec";
  SHOAL_RETURN_IF_ERROR(RecordFiles(spec.path, &r));
  r.license = license->license;
  r.license_source = license->source;
  r.owner = options.owner;
  r.registered_unix_ms = UnixMillis();
  r.memory_bytes = spec.memory_bytes;
  r.capacity = check->probes.capacity;
  r.golden_json = std::move(check->probes.golden_json);
  SHOAL_RETURN_IF_ERROR(queue::EnsureWorkStreamExists(js_, spec.pool, options.limits));
  bool created = false;
  auto number = AddVersion(std::move(v), &created);
  if (!number.ok()) return number.status();
  const uint32_t n = *number;
  // With evaluations attached, it serves only once it has passed them.
  SHOAL_ASSIGN_OR_RETURN(std::vector<EvalSet> sets, Evaluations(spec.id));
  const bool gated = !sets.empty();
  auto head = ChangeHead(
      spec.id,
      [&](VersionHead& h) {
        if (created && h.StateOf(n) == VersionState::kRetired) {  // new: a candidate first
          h.AddCandidate(n);
          h.Log(UnixMillis(), "registered", n, options.owner);
        }
        if (!options.candidate && !gated && h.serving != n) {
          h.Promote(n);
          h.Log(UnixMillis(), "promoted", n, options.owner);
        }
        return Status::Ok();
      },
      options.limits);
  if (!head.ok()) return head.status();
  if (gated && !options.candidate && head->serving != n) {
    // Below its thresholds (or with no serving path here) it stays a
    // candidate: the registration itself succeeded, its record says why.
    if (Status s = Promote(spec.id, n, options.owner).status(); !s.ok()) {
      spdlog::warn("catalog: {} version {} stays a candidate: {}", spec.id, n, s.message());
    }
  }
  return Version(spec.id, n);
}

Result<ModelSpec> CatalogAdmin::Get(std::string_view id) {
  uint64_t revision = 0;
  return Get(id, &revision);
}

Result<ModelSpec> CatalogAdmin::Get(std::string_view id, uint64_t* revision) {
  kvEntry* e = nullptr;
  const natsStatus s = kvStore_Get(&e, models_, queue::CatalogKey(id).c_str());
  if (s == NATS_NOT_FOUND) return Status(Code::kModelNotFound, "model '" + std::string(id) + "' is not in the catalog");
  if (s != NATS_OK) return queue::FromNats(s, "catalog get");
  *revision = kvEntry_Revision(e);
  return ParseEntry(e);
}

Result<bool> CatalogAdmin::Replace(const ModelSpec& spec, uint64_t revision) {
  const std::string json = spec.ToJson();
  uint64_t rev = 0;
  const natsStatus s =
      kvStore_Update(&rev, models_, spec.id.c_str(), json.data(), static_cast<int>(json.size()), revision);
  if (s == NATS_OK) return true;
  // A wrong last revision (someone wrote the entry meanwhile) reads as a
  // plain error: it is one when the entry has moved on.
  kvEntry* e = nullptr;
  const natsStatus g = kvStore_Get(&e, models_, spec.id.c_str());
  const bool moved = g == NATS_NOT_FOUND || (g == NATS_OK && kvEntry_Revision(e) != revision);
  if (e) kvEntry_Destroy(e);
  if (moved) return false;
  return queue::FromNats(s, "catalog update " + spec.id);
}

Status CatalogAdmin::TakesAdapters(std::string_view id, const ModelSpec& spec) {
  auto current = Get(id);
  if (!current.ok() || current->loras.empty()) return Status::Ok();
  Runtime* runtime = CheckRuntimes().For(spec);
  if (!runtime) return InvalidInput("runtime '" + spec.runtime + "' is not known to this build");
  auto config = ModelConfig::FromSpec(spec);
  if (!config.ok()) return Status(Code::kInvalidInput, config.status().message());
  const std::string which =
      spec.version ? "version " + std::to_string(spec.version) + " of '" + std::string(id) + "'"
                   : "this model";
  for (const LoraSpec& lora : current->loras) {
    if (spec.FindLora(lora.name)) continue;  // its own, checked when it was registered
    if (!lora.artifact.empty() && !std::filesystem::exists(lora.path)) {
      spdlog::warn("catalog: {}: LoRA '{}' is in the model store, not here: not checked against {}", id,
                   lora.name, which);
      continue;
    }
    if (auto bytes = runtime->CheckLora(*config, {lora.name, lora.path}); !bytes.ok()) {
      return InvalidInput(which + " cannot take LoRA '" + lora.name + "', which '" + std::string(id) +
                          "' carries (" + bytes.status().message() +
                          "): remove the adapter first, or keep the version a candidate");
    }
  }
  return Status::Ok();
}

Result<LoraSpec> CatalogAdmin::AddLora(std::string_view base_id, LoraSpec lora) {
  SHOAL_RETURN_IF_ERROR(ValidateLoraName(lora.name));
  if (lora.path.empty()) return InvalidInput("path: expected the adapter's directory");
  std::error_code ec;
  const auto absolute = std::filesystem::weakly_canonical(std::filesystem::absolute(lora.path), ec);
  if (!ec) lora.path = absolute.string();
  constexpr int kAttempts = 8;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    uint64_t revision = 0;
    auto spec = Get(base_id, &revision);
    if (!spec.ok()) return spec.status();
    if (spec->FindLora(lora.name)) {
      return InvalidInput("model '" + spec->id + "' has a LoRA '" + lora.name + "' already (remove it first)");
    }
    Runtime* runtime = CheckRuntimes().For(*spec);
    if (!runtime) return InvalidInput("runtime '" + spec->runtime + "' is not known to this build");
    auto config = ModelConfig::FromSpec(*spec);
    if (!config.ok()) return Status(Code::kInvalidInput, config.status().message());
    auto bytes = runtime->CheckLora(*config, {lora.name, lora.path});
    if (!bytes.ok()) return Status(Code::kInvalidInput, bytes.status().message());
    lora.memory_bytes = *bytes;
    spec->loras.push_back(lora);
    auto replaced = Replace(*spec, revision);
    if (!replaced.ok()) return replaced.status();
    if (*replaced) return lora;
  }
  return Status(Code::kNoCapacity, "model '" + std::string(base_id) + "' kept changing; LoRA '" + lora.name +
                                       "' not added (try again)");
}

Status CatalogAdmin::RemoveLora(std::string_view base_id, std::string_view name) {
  constexpr int kAttempts = 8;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    uint64_t revision = 0;
    auto spec = Get(base_id, &revision);
    if (!spec.ok()) return spec.status();
    auto it = std::find_if(spec->loras.begin(), spec->loras.end(), [&](const LoraSpec& l) { return l.name == name; });
    if (it == spec->loras.end()) {
      return Status(Code::kModelNotFound, "model '" + spec->id + "' has no LoRA '" + std::string(name) + "'");
    }
    spec->loras.erase(it);
    auto replaced = Replace(*spec, revision);
    if (!replaced.ok()) return replaced.status();
    if (*replaced) return Status::Ok();
  }
  return Status(Code::kNoCapacity, "model '" + std::string(base_id) + "' kept changing; LoRA '" + std::string(name) +
                                       "' not removed (try again)");
}

Result<ModelSpec> CatalogAdmin::SetPinned(std::string_view id, bool pinned) {
  auto spec = Get(id);
  if (!spec.ok()) return spec.status();
  if (spec->pinned == pinned) return spec;
  spec->pinned = pinned;
  SHOAL_RETURN_IF_ERROR(queue::PutModel(models_, *spec));
  return spec;
}


Result<std::vector<ModelSpec>> CatalogAdmin::List() {
  kvKeysList keys;
  std::vector<ModelSpec> out;
  natsStatus s = kvStore_Keys(&keys, models_, nullptr);
  if (s == NATS_NOT_FOUND) return out;  // an empty bucket
  if (s != NATS_OK) return queue::FromNats(s, "catalog keys");
  for (int i = 0; i < keys.Count; ++i) {
    if (std::string_view(keys.Keys[i]).find('=') != std::string_view::npos) continue;  // a kept version
    kvEntry* e = nullptr;
    if (kvStore_Get(&e, models_, keys.Keys[i]) != NATS_OK) continue;  // removed meanwhile
    if (auto spec = ParseEntry(e); spec.ok()) out.push_back(std::move(spec).value());
  }
  kvKeysList_Destroy(&keys);
  return out;
}

}  // namespace shoal::admin
