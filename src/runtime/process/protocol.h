// The runtime protocol, version 1 (docs/runtime-protocol.md is the
// specification): the messages between Shoal and a runtime process, written
// and read here and nowhere else. Both sides of Shoal's own use it — the
// worker's client (runtime_client.h) and the host that serves an in-process
// runtime over a socket (runtime_host.h).
//
// A request is one MessagePack map {"op": str, "id": uint, ...the op's
// fields}; every reply names the request's id and holds one of "ok" (a map:
// the result, last), "error" ({"code", "message"}: the failure, last) or
// "progress" (a fraction) or "chunk" (generated text), any number of
// times before the last. Readers skip
// keys they do not know.
//
// Vectors travel as "bin" of little-endian float32 (one copy, no per-value
// tags).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/task.h"
#include "common/status.h"
#include "runtime/model_config.h"
#include "runtime/runtime.h"

namespace shoal::runtime_process {

inline constexpr uint32_t kProtocolVersion = 1;

// What a runtime says about itself in answer to hello.
struct RuntimeHello {
  uint32_t protocol = kProtocolVersion;  // the version it chose
  std::string runtime;                   // its name ("identity", "onnx")
  std::string version;                   // its engine's version, for logs
  std::vector<Task> tasks;               // the tasks its models may serve
  bool lora = false;                     // it runs LoRA adapters
  uint64_t memory_bytes = 0;             // memory it may use (0: not said)
  // "input": "tokens": Shoal tokenizes and sends token ids (a tensor engine
  // such as ONNX Runtime); else ("text") the runtime tokenizes.
  bool takes_tokens = false;
  // "formats": the output formats its generations can be held to besides
  // text ("json_object", "json_schema"); Shoal sends no job with another.
  std::vector<std::string> formats;
  // "adjustments": the logit adjustments its generations apply
  // (kLogitAdjustmentNames); Shoal sends no job asking for another.
  std::vector<std::string> adjustments;
  // "counts_tokens": false: its models apply no token limits, refuse
  // truncate, and stream text without token ids (Runtime::counts_tokens).
  bool counts_tokens = true;
  // "graphs": it loads bare graphs (ModelConfig::graph) and runs them (op
  // "run"); Shoal loads none into a runtime that does not say so.
  bool graphs = false;
};

// A job's format as the protocol names it ("text", "json_object", "json_schema").
std::string_view FormatName(OutputFormat::Kind kind);

// What a load's "ok" says.
struct LoadResult {
  uint64_t memory_bytes = 0;  // what the loaded model holds
  uint32_t max_tokens = 0;    // its position limit, from a runtime that takes tokens (0: none said)
};

// One input of a batch for a runtime that takes tokens (views into the
// caller's encodings).
struct TokenInput {
  std::span<const int32_t> ids;
  std::span<const int32_t> type_ids;  // score only
  bool normalize = true;              // encode only
  std::string_view lora;
};

// ---- Requests (written by Shoal, read by a runtime) ----

// A request's envelope, read in place: the views point into the frame.
struct Request {
  std::string_view op;
  uint64_t id = 0;
  std::string_view model;          // the model's handle (load, unload, loras, batches)
  std::vector<uint32_t> versions;  // hello: the versions Shoal speaks
  uint32_t threads = 1;            // load: cores one call may use
  uint64_t target = 0;             // cancel: the generate request to end
  // Raw MessagePack of the op's structured fields (empty when absent).
  std::string_view config, items, loras, lora, job, inputs;
};
Status ReadRequest(std::string_view frame, Request* r);

std::string HelloRequest(uint64_t id);
std::string LoadRequest(uint64_t id, std::string_view model, const ModelConfig& config, int threads);
std::string UnloadRequest(uint64_t id, std::string_view model);
std::string LorasRequest(uint64_t id, std::string_view model, std::span<const LoraConfig> loras);
std::string CheckLoraRequest(uint64_t id, const ModelConfig& base, const LoraConfig& lora);
std::string EncodeRequest(uint64_t id, std::string_view model, std::span<const EncodeInput> in);
std::string ScoreRequest(uint64_t id, std::string_view model, std::span<const ScoreInput> in);
std::string ExtractRequest(uint64_t id, std::string_view model, std::span<const ExtractInput> in);
std::string TokenizeRequest(uint64_t id, std::string_view model, std::span<const TokenizeInput> in);
// An encode or score batch of token ids (`task`: kEncode or kScore).
std::string TokenBatchRequest(uint64_t id, Task task, std::string_view model, std::span<const TokenInput> in);
// A graph's run (protocol_graph.cc): named float32 tensors in; with kTop1,
// "top1": true.
std::string RunRequest(uint64_t id, std::string_view model, std::span<const Tensor> inputs, RunOutputs what);
// memory, health, stop: no fields but the op.
std::string PlainRequest(uint64_t id, std::string_view op);
// Generation (protocol_generate.cc): a job for a model; the end of one.
std::string GenerateJobRequest(uint64_t id, std::string_view model, const GenerationJob& job);
std::string CancelRequest(uint64_t id, uint64_t target);

// The structured fields, as a runtime reads them (views into the frame).
// `section` names the options in their errors (the runtime's name).
Status ReadConfig(std::string_view raw, std::string_view section, ModelConfig* config);
Status ReadLoras(std::string_view raw, std::vector<LoraConfig>* loras);
Status ReadLora(std::string_view raw, LoraConfig* lora);
Status ReadEncodeInputs(std::string_view raw, std::vector<EncodeInput>* in);
Status ReadScoreInputs(std::string_view raw, std::vector<ScoreInput>* in);
Status ReadExtractInputs(std::string_view raw, std::vector<ExtractInput>* in);
Status ReadTokenizeInputs(std::string_view raw, std::vector<TokenizeInput>* in);
Status ReadGenerationJob(std::string_view raw, GenerationJob* job);
// A run's "inputs", or a run reply's "outputs": [{"name", "shape", "data"}].
Status ReadTensors(std::string_view raw, std::string_view where, std::vector<Tensor>* tensors);

// ---- Replies (written by a runtime, read by Shoal) ----

struct Reply {
  enum class Kind { kOk, kError, kProgress, kChunk };
  uint64_t id = 0;
  Kind kind = Kind::kOk;
  std::string_view ok;     // kOk: the result map, raw
  std::string_view chunk;  // kChunk: generated text and tokens, raw (before the last reply)
  Status error;         // kError
  double progress = 0;  // kProgress: 0..1
};
Status ReadReply(std::string_view frame, Reply* r);

std::string ErrorReply(uint64_t id, const Status& error);
std::string ProgressReply(uint64_t id, double fraction);
// {"id": id, "ok": {}}
std::string EmptyReply(uint64_t id);
std::string HelloReply(uint64_t id, const RuntimeHello& hello);
// load and check_lora: {"memory_bytes": n}
std::string BytesReply(uint64_t id, uint64_t memory_bytes);
std::string EncodeReply(uint64_t id, std::span<const EncodeOutput> out);
std::string ScoreReply(uint64_t id, std::span<const ScoreOutput> out);
std::string ExtractReply(uint64_t id, std::span<const ExtractOutput> out);
std::string TokenizeReply(uint64_t id, std::span<const TokenizeOutput> out);
// run: {"outputs": [...]}.
std::string RunReply(uint64_t id, std::span<const Tensor> outputs);
// memory: the process's resident bytes and each model's.
struct MemoryReport {
  uint64_t rss_bytes = 0;
  std::vector<std::pair<std::string, uint64_t>> models;
};
std::string MemoryReply(uint64_t id, const MemoryReport& report);
// health: the models it holds.
std::string HealthReply(uint64_t id, uint32_t models);
// Generation: text, tokens and logprobs so far (a chunk), and the end (an
// ok with the finish reason and token counts).
std::string ChunkReply(uint64_t id, const GenerationUpdate& update);
std::string FinishReply(uint64_t id, const GenerationUpdate& update);

// The results, as Shoal reads them from an "ok" map. A reply whose item
// count differs from the request's is refused (INTERNAL).
Status ReadHello(std::string_view ok, RuntimeHello* hello);
Status ReadBytes(std::string_view ok, uint64_t* memory_bytes);
Status ReadLoadResult(std::string_view ok, LoadResult* result);
Status ReadEncodeOutputs(std::string_view ok, std::span<EncodeOutput> out);
Status ReadScoreOutputs(std::string_view ok, std::span<ScoreOutput> out);
Status ReadExtractOutputs(std::string_view ok, std::span<ExtractOutput> out);
Status ReadTokenizeOutputs(std::string_view ok, std::span<TokenizeOutput> out);
// With kTop1, each output's last axis must be 2 and its indices whole.
Status ReadRunOutputs(std::string_view ok, RunOutputs what, std::vector<Tensor>* outputs);
Status ReadMemory(std::string_view ok, MemoryReport* report);
Status ReadHealth(std::string_view ok, uint32_t* models);
Status ReadChunk(std::string_view chunk, GenerationUpdate* update);
Status ReadFinish(std::string_view ok, GenerationUpdate* update);

}  // namespace shoal::runtime_process
