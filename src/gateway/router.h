// Router: the gateway's routes. It does as little as the request allows:
// finds the model (404), peeks and validates the body into items with a cost
// estimate (400/413), puts the request in the pending table with its
// deadline, and hands it to the Dispatcher. Everything after that is the
// dispatcher's and the sweeper's — unless the client hangs up first: then
// the dispatcher tells the workers (Dispatcher::Cancel) and the request ends.
//
//   GET  /healthz            the process is up
//   GET  /readyz             connected, catalog loaded, not draining
//   GET  /v1/models          OpenAI model list (+ a "shoal" object per model)
//   POST /v1/encode/{model}  native; MessagePack by default, JSON by Content-Type
//   POST /v1/embeddings      OpenAI
//   POST /v1/score/{model}   native cross-encoder scores (JSON, or MessagePack
//                            by Content-Type / Accept, as rerank and tokenize)
//   POST /v1/extract/{model} native entities (NER) or labels (classifiers),
//                            MessagePack or JSON as encode
//   POST /v1/rerank          Cohere rerank (JSON)
//   POST /v1/tokenize/{model} the model's tokens, as TEI (JSON)
//   POST /v1/chat/completions OpenAI chat          ┐ generation (task: generate),
//   POST /v1/completions      OpenAI completions   │ JSON or SSE when "stream";
//   POST /v1/generate/{model} native               ┘ gateway/generation.h
//
// LoRA adapters: a request runs under adapter `lora` of model `base` when
// its model is "base:lora" — in the path of the native routes, or in the
// body's "model" of the OpenAI and Cohere routes (model ids hold no ':', so
// the first ':' splits) — or, on the native routes, with the body field
// "lora": "name". Both forms given and different: 400 INVALID_INPUT; an
// adapter the model does not have: 404 MODEL_NOT_FOUND "model 'b' has no
// LoRA 'x'". The items go to the base's stream with the adapter's name in
// their header's "lora" (wire/work_message.h), and responses name the
// model as the client did ("base:lora"). /v1/models lists each adapter as
// "base:lora" after its base.
//
// Versions: a request may name "id@N" (in the path or the body; with an
// adapter, "id@N:lora"), version N of the model — the serving one, or one
// the catalog keeps besides it (catalog/model_version.h); responses say
// which version answered in X-Shoal-Model-Version. A key scoped to an id
// may use its versions. An id with a canary sends its share of the
// requests that name the id alone (by request id) to the canary's version,
// or, for a shadow canary, copies them to it as well (shadow_request.h);
// each side's answers count in the CanaryMonitor.
//
// Who may use which model: the Caller (gateway/auth.h), authenticated by the
// gateway before Handle — a model outside its key's scope is 403 FORBIDDEN
// (checked before the model is looked up, so a key learns nothing of models
// outside its scope), /v1/models lists only the models it may use. A key
// scoped to a base model may use all of its LoRA adapters: adapters have
// no scope of their own (a key's models are model ids, never "base:lora").
// A key with limits is charged (gateway/rate_limiter.h) once its body is parsed
// and its cost known: 429 RATE_LIMITED with Retry-After when over them.
//
// Threading: Handle(lane, ...) runs on that lane's loop thread; lanes run
// concurrently and share nothing but the catalog and the rate limiter (both
// thread-safe).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gateway/auth.h"
#include "gateway/canary_monitor.h"
#include "gateway/dispatcher.h"
#include "http/http.h"
#include "gateway/pending.h"
#include "gateway/rate_limiter.h"
#include "gateway/shadow_request.h"
#include "queue/catalog_watch.h"

namespace shoal::gateway {

struct RouterOptions {
  wire::ParseLimits limits;
  std::chrono::milliseconds default_timeout{30000};
  // Generation takes longer than encoding: a whole answer, token by token.
  std::chrono::milliseconds generate_timeout{300000};
  // X-Shoal-Timeout-Ms may ask for up to this much, on any route.
  std::chrono::milliseconds max_timeout{600000};
};

// What the router needs of one gateway lane.
struct RouterLane {
  std::string id;  // <gateway-id>-<n>: prefixes request ids and the reply inbox
  Dispatcher* dispatcher;
  PendingTable* table;
  uint64_t next_seq = 1;  // used on the lane's thread only
};

class Router {
 public:
  using CatalogFn = std::function<std::shared_ptr<const queue::CatalogSnapshot>()>;
  using ReadyFn = std::function<bool()>;

  // `limiter` may be null (no rate limits), `canaries` too (no canary
  // counts); not owned, they outlive this.
  Router(RouterOptions options, CatalogFn catalog, ReadyFn ready, std::vector<RouterLane> lanes,
         RateLimiter* limiter = nullptr, CanaryMonitor* canaries = nullptr);

  // The probes (/healthz, /readyz): open to all, never refused for load.
  static bool IsProbe(const http::Request& req);

  void Handle(size_t lane, http::Request&& req, http::Responder respond, const Caller& caller = {});

 private:
  enum class Route {
    kEncode, kEmbeddings, kCohereEmbed, kCohereEmbedV2, kScore, kRerank, kRerankV2, kExtract, kTokenize,  // items
    kChat, kCompletions, kGenerate,                    // generation
  };
  static bool Generates(Route route) {
    return route == Route::kChat || route == Route::kCompletions || route == Route::kGenerate;
  }
  void Submit(RouterLane& lane, http::Request&& req, http::Responder respond, const Caller& caller, Route route,
              std::string_view model_id);
  // Parses the body into p->request and picks the response format.
  Status Parse(Route route, const http::Request& req, PendingRequest* p) const;
  // What an encode request asks of its model's profile: a declared
  // Matryoshka dimension, outputs it produces, and the prompt its
  // input_type names.
  Status ApplyEncodeProfile(PendingRequest* p) const;
  // Settles the outputs (the model's default when none is named; dense on
  // the OpenAI and Cohere routes) and refuses options for outputs not asked.
  static Status CheckOutputs(const ModelSpec& model, ResponseFormat format, wire::WorkRequest* r);
  // Parses a generation body into p->generation; `model_id` is the path's.
  Status ParseGeneration(Route route, std::string_view model_id, PendingRequest* p) const;
  // Makes p->generation's work message p's one item.
  Status PrepareGeneration(PendingRequest* p) const;
  http::Response ListModels(const RouterLane& lane, const Caller& caller) const;
  // The client of request `seq` hung up: its items need not run.
  void OnHangup(RouterLane& lane, uint64_t seq);
  // A model by what a request names: an id (its serving version) or
  // "id@N" (catalog/names.h); null when the catalog has none.
  std::shared_ptr<const ModelSpec> FindModel(std::string_view name) const;
  // FindModel into p->model for `caller`: 403 outside its key's scope, 404
  // when there is none.
  Status FindModelFor(const Caller& caller, std::string_view name, PendingRequest* p) const;
  // `respond`, counting the answer for p's canary on p's side.
  http::Responder CountedForCanary(const PendingRequest& p, http::Responder respond) const;
  // The copy of a shadowed request `p` for its canary's version, ready to
  // insert and submit; null when it is not copied (shadow_request.h).
  std::shared_ptr<PendingRequest> ShadowCopy(RouterLane& lane, PendingRequest& p) const;

  const RouterOptions options_;
  const CatalogFn catalog_;
  const ReadyFn ready_;
  std::vector<RouterLane> lanes_;
  RateLimiter* const limiter_;
  CanaryMonitor* const canaries_;
};

}  // namespace shoal::gateway
