// ModelSpec: what the catalog knows about a model — the Shoal profile
// (`models/*.yaml`, `shoal.yaml` beside weights) in parsed form. The same
// spec travels as JSON in the `shoal_models` KV bucket; YAML is a superset of
// JSON, so one parser reads both.
//
//   id: shoal/identity            # [A-Za-z0-9._/-]
//   runtime: identity             # which Runtime loads it
//   process: worker               # where it runs: worker (in the worker's
//                                 # process), shared (the worker's runtime
//                                 # process for its runtime), own (a runtime
//                                 # process of its own); default: the
//                                 # runtime's choice (worker, for the
//                                 # built-in runtimes)
//   path: ../models/bge-small     # the model directory (native runtime);
//                                 # relative to the profile file
//   artifact: sha256:<hex>        # the model's files in the model store
//                                 # (`shoal models push`, store/): workers
//                                 # fetch them into their cache, checked,
//                                 # and load from there; `path` is then
//                                 # only where they were pushed from
//   version: 3                    # which version of the id this is
//                                 # (catalog/model_version.h): set by the
//                                 # catalog when it registers or promotes
//                                 # one, never in a profile file
//   task: encode                  # encode, score (cross-encoders), or generate
//                                 # (decoders; batching then bounds the running batch)
//   pool: default                 # the work stream it is queued on
//   description: "..."
//   max_input_tokens: 512
//   batching: {max_batch_tokens: 16384, max_batch_requests: 64, max_batch_wait_ms: 0}
//   # optional: tune the batch wait (and the cost cap) toward a latency
//   # target instead of the fixed max_batch_wait_ms (worker/batch_controller.h)
//   #   batching: {..., adaptive: {target_ms: 50, min_wait_ms: 0, max_wait_ms: 20}}
//   queue: {ack_wait_ms: 10000, max_deliver: 5}
//   speculative: {draft: shoal/qwen3-draft, k: 4}  # generate: speculative
//                                 # decoding with a draft model (a registered
//                                 # generator with the same tokenizer) or
//                                 # `draft: ngram` (prompt lookup)
//   pinned: false                 # loaded at worker start, never evicted
//   memory_bytes: 0               # what it holds loaded; measured when it is
//                                 # registered (0: not yet known)
//   matryoshka_dimensions: [512, 256, 128]  # encode: the sizes a request's
//                                 # `dimensions` may cut vectors to (the
//                                 # model was trained for them); none: no cut
//   prompts: {query: "query: ", document: "passage: "}  # encode: texts put
//                                 # before the input, by name (sentence-
//                                 # transformers' prompts; Cohere's input_type
//                                 # picks one)
//   image_text_score: softmax     # encode: a two-tower image–text model
//                                 # (CLIPModel: softmax, SiglipModel:
//                                 # sigmoid) that also answers /v1/score, a
//                                 # text against images; how its logits
//                                 # become scores. Set at registration
//   outputs: [dense, sparse]      # encode: what it produces (dense vectors,
//                                 # SPLADE's sparse ones, ColBERT's vector per
//                                 # token); a request's `output` picks among
//                                 # them; none listed: dense
//   identity: {dim: 384}          # options for the runtime, under its name
//   threads: 0                    # cores one batch of this model may use
//                                 # (0: the worker's share per executor)
//   loras:                        # LoRA adapters on this base (LoraSpec); path
//     - {name: support-v2, path: /adapters/support-v2, memory_bytes: 1572864}
//                                 # relative to the profile file, as `path`;
//                                 # memory_bytes measured when registered
//   tuned:                        # written by `shoal tune`, not by hand
//     cpu-x86_64-avx512bf16-2c:   # a hardware class (common/hardware.h)
//       batching: {max_batch_tokens: 4096, max_batch_requests: 32, max_batch_wait_ms: 2}
//       native: {precision: bf16} # merged over the runtime's section
//       threads: 2
//       evidence: {knee_rps: 812.4, default_knee_rps: 455.1, ...}  # not read
//
// Precedence, lowest first: built-in defaults; the profile's own fields; the
// `tuned:` entry for the hardware class of the machine that parses it. That
// entry replaces each batching field it names and `threads`, and merges its
// runtime options key by key over the profile's runtime section (the entry
// wins; keys it does not name stay). Entries of other classes are ignored
// but kept: ToJson writes the section whole and the profile's own values
// beneath the applied entry, so a worker on another kind of machine applies
// its own entry to the same base (the KV bucket holds the profile, not one
// machine's view of it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catalog/names.h"
#include "catalog/task.h"
#include "common/status.h"

namespace shoal {

// `batching.adaptive`: present = on. The worker then tunes the batch wait
// within [min_wait_ms, max_wait_ms] so that queue wait + service time stays
// near target_ms, and max_batch_wait_ms is not used; and it lowers the cost
// a batch may hold (below max_batch_tokens) while batches that close on it
// run longer than target_ms.
struct AdaptiveBatchingSpec {
  bool enabled = false;
  uint32_t target_ms = 50;
  uint32_t min_wait_ms = 0;
  uint32_t max_wait_ms = 20;
};

struct BatchingSpec {
  uint32_t max_batch_tokens = 16384;
  uint32_t max_batch_requests = 64;
  uint32_t max_batch_wait_ms = 0;  // 0: run what is there, do not wait for more
  AdaptiveBatchingSpec adaptive;
};

// `speculative:` (generators): each step a drafter proposes up to `k`
// tokens per sequence and the model checks them all in one batched step
// (worker/drafter.h). `draft` names a registered generator sharing this
// model's tokenizer, or is "ngram" (prompt lookup: no draft model).
// Empty: no speculation.
struct SpeculativeSpec {
  static constexpr uint32_t kMaxK = 16;
  std::string draft;
  uint32_t k = 4;  // the most proposed per step; fewer while drafts are refused
  bool enabled() const { return !draft.empty(); }
  bool ngram() const { return draft == "ngram"; }
};

// `canary:` (set by the catalog on an id's serving entry, never in a
// profile file: catalog/model_version.h): version `version` of the id, tried
// on a share of its requests — chosen by request id, so a request always
// lands on the same side. Split, that share goes to the candidate instead;
// shadow, the candidate answers a copy of it too, its answer is compared
// with the serving version's and dropped (gateway/shadow_request.h). A
// gateway ends the canary when it sees the candidate fail more than
// `max_error_rate` of at least `min_requests`, or (shadow) agree less
// than `min_cosine` / `min_agreement` over as many compared requests.
enum class CanaryMode { kSplit, kShadow };

struct CanarySpec {
  uint32_t version = 0;  // 0: none
  CanaryMode mode = CanaryMode::kSplit;
  double fraction = 0;   // of the requests that name the id alone, 0 to 1
  double max_error_rate = 0.05;
  uint32_t min_requests = 20;
  // Shadow only, 0 (the default): not checked. A new model answers
  // otherwise by design; a variant or a rebuild should not.
  double min_cosine = 0;     // mean embedding cosine (encode)
  double min_agreement = 0;  // ranking (score) and label (extract) agreement
  bool active() const { return version != 0; }
  bool shadow() const { return mode == CanaryMode::kShadow; }

  // {"version", "mode", "fraction", "max_error_rate", "min_requests",
  // "min_cosine", "min_agreement"}, as the catalog's entry and the
  // versions' head carry it, and as the admin API takes it.
  std::string ToJson() const;
  // INVALID_INPUT naming the field: one unknown, of the wrong type or out
  // of its range, or an agreement bound on a split canary.
  static Result<CanarySpec> Parse(std::string_view json);
};

struct QueueSpec {
  uint32_t ack_wait_ms = 10000;  // JetStream redelivers after this without an ack
  uint32_t max_deliver = 5;      // then the message goes to the dead-letter stream
};

// The `tuned:` section: the whole of it, which entry was applied, and what
// the applied entry replaced.
struct TunedSection {
  std::string json;           // the section as a JSON object; empty: none
  std::string applied_class;  // the hardware class applied ("" none)
  // The profile's own values beneath the applied entry (when one was).
  BatchingSpec base_batching;
  std::string base_runtime_options_json = "{}";
  uint32_t base_threads = 0;
};

// One LoRA adapter of a base model (`loras:` in the spec): a PEFT directory
// (adapter_config.json + adapter_model.safetensors). Registered through
// /v1/admin/models/{base}/loras or `shoal models add-lora`; requests pick it
// by name ("base:name", or `lora`).
struct LoraSpec {
  std::string name;           // [A-Za-z0-9._-], at most 64 characters, unique per base
  std::string path;           // the adapter directory (absolute)
  std::string artifact{};     // "sha256:<hex>": its files in the model store ("" none)
  uint64_t memory_bytes = 0;  // what it holds loaded; measured when registered
};

// `image_text_score:` — how a two-tower image–text model's logits (scale ·
// cosine, + bias) become /v1/score's scores: a sigmoid each (SigLIP, trained
// so), or a softmax over the request's candidates (CLIP, trained
// contrastively: its logits mean something only against each other).
// kNone: the model does not score images.
enum class ImageTextScore : uint8_t { kNone, kSigmoid, kSoftmax };

// Where a model runs (`process:`): in the worker's process, or in a runtime
// process behind the runtime protocol (docs/runtime-protocol.md) — shared by
// the runtime's models on that worker, or its own, for isolation.
enum class RuntimeProcess : uint8_t { kDefault, kWorker, kShared, kOwn };

// "default", "worker", "shared", "own".
std::string_view RuntimeProcessName(RuntimeProcess p);

struct ModelSpec {
  std::string id;
  std::string runtime;
  RuntimeProcess process = RuntimeProcess::kDefault;  // kDefault: the runtime's own choice
  std::string path;  // absolute once loaded from a file
  std::string artifact;  // "sha256:<hex>": its files in the model store ("" none: `path` on every worker)
  uint32_t version = 0;  // its version of the id (1, 2, ...); 0: not yet registered
  Task task = Task::kEncode;  // encode, score or generate
  std::string pool = "default";
  std::string description;
  uint32_t max_input_tokens = 512;
  BatchingSpec batching;
  QueueSpec queue;
  SpeculativeSpec speculative;  // generate only
  bool pinned = false;
  uint64_t memory_bytes = 0;
  std::string runtime_options_json = "{}";  // the section named after the runtime
  uint32_t threads = 0;  // cores for its batches; 0: the worker's share
  std::vector<LoraSpec> loras;  // adapters registered on this base
  std::vector<uint32_t> matryoshka_dimensions;  // encode: sizes `dimensions` may ask for
  std::vector<std::pair<std::string, std::string>> prompts;  // encode: name -> prefix
  OutputKinds outputs = 0;  // encode: what it produces (0: dense alone)
  ImageTextScore image_text_score = ImageTextScore::kNone;  // encode only
  TunedSection tuned;
  CanarySpec canary;  // a serving entry's canary, set by the catalog

  // The adapter of that name; null when the model has none.
  const LoraSpec* FindLora(std::string_view name) const;
  // The prompt of that name; null when the model has none.
  const std::string* FindPrompt(std::string_view name) const;
  // The encode outputs it produces: `outputs`, or dense alone.
  OutputKinds encode_outputs() const { return outputs != 0 ? outputs : static_cast<OutputKinds>(OutputKind::kDense); }

  // The canonical JSON form (what the KV bucket stores): the profile's own
  // values and the `tuned:` section whole (see above), so code that changes
  // batching, threads or runtime options of a spec with an applied entry
  // should start from WithoutTuned().
  std::string ToJson() const;
  // The profile as if it had no `tuned:` section: its own values.
  ModelSpec WithoutTuned() const;

  // Parse applies the entry of `hardware_class` ("" none); without one, the
  // entry of this machine's class (CurrentHardwareClass()).
  static Result<ModelSpec> Parse(std::string_view yaml_or_json);
  static Result<ModelSpec> Parse(std::string_view yaml_or_json, std::string_view hardware_class);
  static Result<ModelSpec> LoadFile(const std::string& path);
  static Result<ModelSpec> LoadFile(const std::string& path, std::string_view hardware_class);
};

// Every `*.yaml` profile in `dir`, in name order; the first bad one fails all.
Result<std::vector<ModelSpec>> LoadModelProfiles(const std::string& dir);

}  // namespace shoal
