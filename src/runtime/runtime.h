// The runtime contract: the boundary between Shoal and an inference engine
// (docs/runtime-contract.md has the whole of it). Version kRuntimeApiVersion.
//
// A Runtime turns a ModelConfig (model_config.h) into a loaded Model; a
// Model runs batches of one task: Encode (a vector per text), Score (a
// relevance logit per text pair, for cross-encoders), Extract (entities of
// a token classifier, labels of a text classifier) or Tokenize (the
// model's tokens, for debugging) — or, for a decoder, generates through its
// Generator (generator.h: the worker steps it) or its StreamingGenerator
// (streaming_generator.h: the runtime schedules its own sequences). A model answers the tasks it has; the others
// fail with INVALID_INPUT. The worker owns Models through unique_ptr and may
// call them from several executor threads at once, so a loaded Model is
// immutable (scratch memory is per call). Runtimes report failures as Status
// values, per item where the input is at fault (too long, not text) and per
// call where the model is.
//
// LoRA adapters belong to a base model. The worker hands a loaded model its
// current list with UpdateLoras whenever the catalog changes, and each
// input names the adapter it runs under (`lora`, empty for the base); a
// batch may mix adapters.
//
// A runtime says which version of this contract it implements
// (api_version); the registry refuses one that is not kRuntimeApiVersion.
// The version changes whenever these types change in a way a runtime —
// in this process or, over the protocol of the next runtimes, out of it —
// would notice.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/model_config.h"
#include "runtime/streaming_generator.h"

namespace shoal {

inline constexpr int kRuntimeApiVersion = 17;

struct EncodeInput {
  std::string_view text{};
  bool truncate = false;   // cut to the model's limit instead of failing
  bool normalize = true;   // unit L2 norm
  std::string_view lora{};  // the adapter to run under; empty: the base model
  // Token ids to run as they are (special tokens included) instead of
  // `text`; only for a model whose takes_token_ids() says so.
  std::span<const int32_t> ids{};
  // An encoded image (JPEG, PNG, WebP, GIF) instead of `text`; only for a
  // model whose takes_images() says so. The runtime decodes it.
  std::string_view image{};
  // What to produce: OutputKind bits, among the model's encode_outputs().
  OutputKinds outputs = static_cast<OutputKinds>(OutputKind::kDense);
  // Query or document, for a model that encodes them differently (ColBERT
  // needs it said); the others need not know.
  InputRole role = InputRole::kUnspecified;
  uint32_t sparse_top_k = 0;   // sparse: the k largest weights only (0: all)
  bool sparse_tokens = false;  // sparse: the vocabulary piece of each index too
};

// A sparse vector over the model's vocabulary (SPLADE): its nonzero weights,
// largest first (ties: the lower index first).
struct SparseVector {
  std::vector<uint32_t> indices;
  std::vector<float> values;
  std::vector<std::string> tokens;  // the pieces of `indices`, when asked
};

// A vector per kept token (ColBERT), `dim` floats each, back to back.
struct MultiVector {
  uint32_t dim = 0;
  std::vector<float> values;
};

// What Model::Run answers of each output: the whole tensor, or along its
// last axis only the largest value and its index ([..., C] → [..., 2] as
// (max, index); an index is exact as a float below 2^24). A CTC recognizer's
// or a classifier's caller needs no more, and it spares moving every class's
// score across the runtime's process boundary.
enum class RunOutputs { kWhole, kTop1 };

struct EncodeOutput {
  Status status;             // per item: INVALID_INPUT when the input is at fault
  // When status is ok, those of the three the input asked for.
  std::vector<float> dense;
  SparseVector sparse;
  MultiVector multivector;
  uint32_t tokens = 0;       // tokens the model saw (after truncation)
  bool truncated = false;    // the input was cut to the model's limit
};

struct ScoreInput {
  std::string_view text{};       // the query
  std::string_view text_pair{};  // the document
  // An encoded image instead of text_pair: a two-tower image–text model
  // (takes_images() and takes_text()) scores `text` against it.
  std::string_view image{};
  bool truncate = false;
  std::string_view lora{};       // the adapter to run under; empty: the base model
};

struct ScoreOutput {
  Status status;
  std::vector<float> logits;  // one per label; rerankers have one
  uint32_t tokens = 0;
  bool truncated = false;
};

struct ExtractInput {
  std::string_view text{};
  std::string_view image{};  // instead of text, for a model that takes_images()
  // A PDF instead of text, for a model that takes_documents(), and the
  // pages to read ("1-3,7"; empty: all).
  std::string_view document{};
  std::string_view pages{};
  // A document's pages that carry a text layer are read from it, not OCR'd
  // (false: every page is OCR'd).
  bool text_layer = true;
  bool truncate = false;
  std::string_view lora{};
  // Token classifiers only (absent: simple); a text classifier refuses it.
  std::optional<Aggregation> aggregation{};
  // Text classifiers only: the best k labels (0: all); a token classifier
  // refuses it.
  uint32_t top_k = 0;
};

// A span of the input a token classifier labelled. Offsets count Unicode
// code points (as Python's str does), [start, end).
struct Entity {
  std::string label;  // without its B-/I- prefix once aggregated
  float score = 0;
  uint32_t start = 0;
  uint32_t end = 0;
  std::string text;   // the input's characters [start, end)
};

struct LabelScore {
  std::string label;
  float score = 0;
};

// A line of text an OCR pipeline read: the text, the recognizer's
// confidence (the mean probability of its characters), and its box in the
// image's pixels — four corners (x, y) clockwise from the top-left.
struct TextLine {
  std::string text;
  float confidence = 0;
  std::array<std::array<float, 2>, 4> box{};
  uint32_t page = 0;  // a document's page (1-based), its box in the page as rendered; 0: an image
  bool from_text_layer = false;  // a document's line read from its text layer, not OCR'd (confidence 1)
};

struct ExtractOutput {
  Status status;
  std::vector<Entity> entities;   // token classifiers, in text order ("O" left out)
  std::vector<LabelScore> labels; // text classifiers, best first
  std::optional<std::vector<TextLine>> lines;  // OCR pipelines, in reading order (present when none)
  uint32_t tokens = 0;
  bool truncated = false;  // entities then cover the kept part of the text only
};

struct TokenizeInput {
  std::string_view text;
  bool add_special_tokens = true;
};

struct Token {
  int32_t id = 0;
  std::string text;  // the vocabulary piece
  bool special = false;
  // Byte offsets [start, stop) into the input; absent for added specials.
  bool has_offsets = false;
  uint32_t start = 0;
  uint32_t stop = 0;
};

struct TokenizeOutput {
  Status status;
  std::vector<Token> tokens;
};

// A tensor in or out of a graph (Model::Run): float32 values, row-major,
// of `shape`, under the graph's name for it.
struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelConfig& config() const = 0;
  // Bytes the model holds (weights, workspace) for residency accounting.
  virtual size_t memory_bytes() const = 0;

  // Each runs one batch; `out` has one slot per input. A non-ok return means
  // the whole batch failed (INFERENCE_ERROR); per-item failures go in out[i].
  virtual Status Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out);
  virtual Status Score(std::span<const ScoreInput> in, std::span<ScoreOutput> out);
  virtual Status Extract(std::span<const ExtractInput> in, std::span<ExtractOutput> out);
  virtual Status Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out);
  // A model loaded as a bare graph (ModelConfig::graph: a pipeline's stage)
  // runs its inputs through the graph once and answers every output the
  // graph has. An input the graph does not take, or of a shape it cannot
  // run, is INVALID_INPUT; the other models fail it so too.
  virtual Status Run(std::span<const Tensor> inputs, RunOutputs what, std::vector<Tensor>* outputs);

  // Whether Encode takes token ids (EncodeInput::ids) as well as text. The
  // worker refuses id inputs to a model that does not (INVALID_INPUT).
  virtual bool takes_token_ids() const { return false; }
  // Whether its inputs may be images (EncodeInput::image, ExtractInput::image,
  // ScoreInput::image), and whether they may be text; the worker refuses an
  // item of a kind the model does not take.
  virtual bool takes_images() const { return false; }
  virtual bool takes_text() const { return true; }
  // Whether its inputs may be PDFs (ExtractInput::document).
  virtual bool takes_documents() const { return false; }
  // The outputs Encode produces (OutputKind bits); the worker refuses an
  // input asking for another (INVALID_INPUT).
  virtual OutputKinds encode_outputs() const { return static_cast<OutputKinds>(OutputKind::kDense); }

  // Decoder models generate through this (runtime/generator.h); null for
  // the others.
  virtual Generator* generator() { return nullptr; }
  // Decoder models whose runtime batches their sequences itself generate
  // through this instead (runtime/streaming_generator.h); null otherwise.
  virtual StreamingGenerator* streaming_generator() { return nullptr; }

  // The adapters this model may run under from now on (all of them,
  // replacing the previous list). Cheap: adapters load
  // when first used. Inputs naming an adapter not in the list fail with
  // MODEL_NOT_FOUND. A runtime without LoRA support accepts only an empty
  // list (INVALID_INPUT otherwise); a refused list leaves the previous one.
  // The one exception to "immutable once loaded": it may be called from any
  // thread while other threads run the model (the worker calls it from its
  // catalog thread), so implementations guard the list.
  virtual Status UpdateLoras(std::span<const LoraConfig> loras);

  // Whether adapter `lora` can run now without first being read from disk.
  // If not, starts loading it in the background (once) and returns false:
  // the worker then lets the item wait in the queue a moment rather than
  // hold a batch of other requests for the load. An unknown or broken
  // adapter counts as ready (running it reports the error). Thread-safe.
  virtual bool LoraReady(std::string_view lora) { return true; }
};

// What the worker tells a runtime about where a model will run.
struct LoadContext {
  int threads = 1;  // cores one call may use (the executor's share)
  // Called now and then during a long load with the fraction done (0..1),
  // on the loading thread; may be empty.
  std::function<void(double)> progress{};
};

// A model's tokenizer alone (`shoal tokenize`): text to token ids.
class TextTokenizer {
 public:
  virtual ~TextTokenizer() = default;
  virtual Result<std::vector<int32_t>> Encode(std::string_view text, bool add_special_tokens) const = 0;
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual std::string_view name() const = 0;
  // The version of this contract it implements (kRuntimeApiVersion when it
  // was written against this one).
  virtual int api_version() const = 0;
  // The tasks its models may serve (a model serves its config's task, and
  // tokenize when listed here): what a runtime process announces in its
  // hello (docs/runtime-protocol.md).
  virtual std::vector<Task> tasks() const = 0;
  virtual Result<std::unique_ptr<Model>> Load(const ModelConfig& config, const LoadContext& ctx) = 0;
  // Whether its generative models schedule their own sequences (they offer
  // a StreamingGenerator) rather than being stepped by the worker (a
  // Generator). Only such models can generate in a runtime process.
  virtual bool streams_generation() const { return false; }
  // The output formats besides text its streaming generators hold every
  // job to (others they refuse with INVALID_INPUT): what a runtime process
  // announces in its hello.
  virtual std::vector<OutputFormat::Kind> output_formats() const { return {}; }
  // The logit adjustments (kLogitAdjustmentNames) its streaming generators
  // apply (a job asking for another fails with INVALID_INPUT): what a
  // runtime process announces in its hello.
  virtual std::vector<std::string> logit_adjustments() const { return {}; }
  // Whether its models count tokens themselves: apply max_input_tokens,
  // truncate when asked, report exact counts, stream token ids. Not so in
  // front of a server that says only text (upstream): such a runtime
  // refuses truncate, and its counts are the server's.
  virtual bool counts_tokens() const { return true; }

  // Registration's check of an adapter against its base (without loading
  // the base): the adapter's files are read and every tensor is checked
  // against the module it adapts. Returns the bytes the adapter holds when
  // loaded. INVALID_INPUT, naming what is wrong, when it does not fit or is
  // of a kind this runtime does not run (e.g. DoRA).
  virtual Result<uint64_t> CheckLora(const ModelConfig& base, const LoraConfig& lora);

  // A tokenizer of this runtime's format (for the native runtime a Hugging
  // Face tokenizer.json, or a model directory holding one or SigLIP's
  // spiece.model), without a model.
  virtual Result<std::unique_ptr<TextTokenizer>> LoadTokenizer(const std::string& path);
};

}  // namespace shoal
