#include "gateway/router.h"

#include <algorithm>
#include <charconv>

#include "common/log.h"
#include "wire/extract_request.h"
#include "wire/generate_request.h"
#include "wire/json_writer.h"
#include "wire/score_request.h"
#include "wire/transcode.h"

namespace shoal::gateway {
namespace {

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// FNV-1a, 64 bits: a request id's place in a canary's share.
uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

Status OutOfScope(const Caller& caller, std::string_view model_id) {
  return Status(Code::kForbidden, "key '" + caller.key->name + "' may not use model '" + std::string(model_id) + "'");
}

// The adapter a request runs under: from "base:lora" (`ref`, the path's or
// the body's model) and the native body's "lora" (`field`; empty: none).
// 400 when both are given and differ, or "base:" names no adapter; 404 when
// the model has no adapter of that name. Empty: the base model.
Result<std::string> ResolveLora(const ModelSpec& model, const ModelRef& ref, std::string_view field) {
  if (ref.has_colon && ref.lora.empty()) {
    return InvalidInput("model '" + std::string(ref.base) + ":': name the LoRA adapter after the ':'");
  }
  if (ref.has_colon && !field.empty() && field != ref.lora) {
    return InvalidInput("lora: '" + std::string(field) + "' contradicts the model '" + std::string(ref.base) + ":" +
                        std::string(ref.lora) + "'; give the adapter once");
  }
  const std::string_view lora = ref.has_colon ? ref.lora : field;
  if (lora.empty()) return std::string();
  if (!model.FindLora(lora)) {
    return Status(Code::kModelNotFound, "model '" + model.id + "' has no LoRA '" + std::string(lora) + "'");
  }
  return std::string(lora);
}

// What a request costs in estimated tokens: its items' estimates.
uint32_t Cost(const wire::WorkRequest& r) {
  uint64_t sum = 0;
  for (const auto& item : r.items) sum += item.cost;
  return static_cast<uint32_t>(std::min<uint64_t>(sum, UINT32_MAX));
}

}  // namespace

Router::Router(RouterOptions options, CatalogFn catalog, ReadyFn ready, std::vector<RouterLane> lanes,
               RateLimiter* limiter, CanaryMonitor* canaries)
    : options_(std::move(options)),
      catalog_(std::move(catalog)),
      ready_(std::move(ready)),
      lanes_(std::move(lanes)),
      limiter_(limiter),
      canaries_(canaries) {}

bool Router::IsProbe(const http::Request& req) {
  return req.method == "GET" && (req.path == "/healthz" || req.path == "/readyz");
}

void Router::Handle(size_t lane_index, http::Request&& req, http::Responder respond, const Caller& caller) {
  RouterLane& lane = lanes_[lane_index];
  const std::string_view path = req.path;
  if (req.method == "POST") {
    static constexpr std::pair<std::string_view, Route> kModelRoutes[] = {
        {"/v1/encode/", Route::kEncode},
        {"/v1/score/", Route::kScore},
        {"/v1/extract/", Route::kExtract},
        {"/v1/tokenize/", Route::kTokenize},
        {"/v1/generate/", Route::kGenerate},
    };
    for (const auto& [prefix, route] : kModelRoutes) {
      if (path.starts_with(prefix)) {
        const std::string model(path.substr(prefix.size()));
        return Submit(lane, std::move(req), std::move(respond), caller, route, model);
      }
    }
    if (path == "/v1/embeddings") return Submit(lane, std::move(req), std::move(respond), caller, Route::kEmbeddings, {});
    if (path == "/v1/embed") return Submit(lane, std::move(req), std::move(respond), caller, Route::kCohereEmbed, {});
    if (path == "/v2/embed") return Submit(lane, std::move(req), std::move(respond), caller, Route::kCohereEmbedV2, {});
    if (path == "/v1/rerank") return Submit(lane, std::move(req), std::move(respond), caller, Route::kRerank, {});
    if (path == "/v2/rerank") return Submit(lane, std::move(req), std::move(respond), caller, Route::kRerankV2, {});
    if (path == "/v1/chat/completions") {
      return Submit(lane, std::move(req), std::move(respond), caller, Route::kChat, {});
    }
    if (path == "/v1/completions") {
      return Submit(lane, std::move(req), std::move(respond), caller, Route::kCompletions, {});
    }
  }
  if (req.method == "GET" && path == "/v1/models") return respond(ListModels(lane, caller));
  if (req.method == "GET" && path == "/healthz") return respond(http::JsonResponse(200, "{\"status\":\"ok\"}"));
  if (req.method == "GET" && path == "/readyz") {
    return respond(ready_() ? http::JsonResponse(200, "{\"status\":\"ready\"}")
                            : http::ErrorResponse(Status(Code::kNoCapacity, "not ready"), ""));
  }
  respond(http::ErrorResponse(Status(Code::kNotFound, "no route for " + req.method + " " + req.path), ""));
}

std::shared_ptr<const ModelSpec> Router::FindModel(std::string_view name) const {
  auto snapshot = catalog_();
  if (auto it = snapshot->find(name); it != snapshot->end()) return it->second;
  // "id@N" of the version that serves: the id's own entry.
  auto ref = SplitVersionRef(name);
  if (!ref.ok() || ref->version == 0) return nullptr;
  auto it = snapshot->find(ref->id);
  return it != snapshot->end() && it->second->version == ref->version ? it->second : nullptr;
}

Status Router::Parse(Route route, const http::Request& req, PendingRequest* p) const {
  const bool json_body = Contains(req.content_type, "json");
  if (route == Route::kEncode || route == Route::kExtract) {
    if (!json_body && !req.content_type.empty() && !Contains(req.content_type, "msgpack")) {
      return InvalidInput("Content-Type: expected application/msgpack or application/json, got '" +
                          req.content_type + "'");
    }
    if (route == Route::kExtract) {
      SHOAL_RETURN_IF_ERROR(json_body ? wire::ParseExtractJson(p->body, options_.limits, &p->request)
                                      : wire::ParseExtractMsgpack(p->body, options_.limits, &p->request));
    } else {
      SHOAL_RETURN_IF_ERROR(json_body ? wire::ParseEncodeJson(p->body, options_.limits, &p->request)
                                      : wire::ParseEncodeMsgpack(p->body, options_.limits, &p->request));
    }
    const bool wants_json = Contains(req.accept, "json");
    const bool wants_msgpack = Contains(req.accept, "msgpack");
    p->format = wants_json || (json_body && !wants_msgpack) ? ResponseFormat::kJson : ResponseFormat::kMsgpack;
    return Status::Ok();
  }
  // Score, rerank and tokenize take MessagePack too: transcoded to JSON here,
  // and their answer back (ComposeResponse) unless the client asks for JSON.
  if (route == Route::kScore || route == Route::kRerank || route == Route::kRerankV2 || route == Route::kTokenize) {
    const bool msgpack_body = Contains(req.content_type, "msgpack");
    if (msgpack_body) {
      std::string json;
      SHOAL_RETURN_IF_ERROR(wire::MsgpackBodyToJson(p->body, &json));
      p->body = std::move(json);
    }
    p->msgpack_response = Contains(req.accept, "msgpack") || (msgpack_body && !Contains(req.accept, "json"));
  }
  // The other routes speak JSON only, whatever the Content-Type says (curl's
  // default is a form type); a body that is not JSON is an error anyway.
  switch (route) {
    case Route::kEmbeddings:
      p->format = ResponseFormat::kOpenAi;
      return wire::ParseOpenAiEmbeddings(p->body, options_.limits, &p->request);
    case Route::kCohereEmbed:
    case Route::kCohereEmbedV2:
      p->format = ResponseFormat::kCohereEmbed;
      return wire::ParseCohereEmbed(p->body, route == Route::kCohereEmbed ? 1 : 2, options_.limits, &p->request);
    case Route::kScore:
      p->format = ResponseFormat::kScore;
      return wire::ParseScoreJson(p->body, options_.limits, &p->request);
    case Route::kRerank:
    case Route::kRerankV2:
      p->format = ResponseFormat::kRerank;
      p->request.cohere.version = route == Route::kRerankV2 ? 2 : 1;  // the response's api_version
      return wire::ParseRerankJson(p->body, options_.limits, &p->request);
    case Route::kTokenize:
      p->format = ResponseFormat::kTokenize;
      return wire::ParseTokenizeJson(p->body, options_.limits, &p->request);
    default: break;
  }
  return Internal("unknown route");
}

Status Router::ApplyEncodeProfile(PendingRequest* p) const {
  const ModelSpec& model = *p->model;
  wire::WorkRequest& r = p->request;
  SHOAL_RETURN_IF_ERROR(CheckOutputs(model, p->format, &r));
  if (const uint32_t d = r.dense.dimensions; d != 0) {
    const char* field = r.cohere.version == 2 ? "output_dimension" : "dimensions";
    const auto& declared = model.matryoshka_dimensions;
    if (std::find(declared.begin(), declared.end(), d) == declared.end()) {
      std::string list;
      for (uint32_t v : declared) list += (list.empty() ? "" : ", ") + std::to_string(v);
      return InvalidInput(std::string(field) + ": " + std::to_string(d) + " is not one of model '" + model.id +
                          "''s Matryoshka dimensions" +
                          (declared.empty() ? " (its profile declares none)" : " (" + list + ")"));
    }
  }
  if (!r.cohere.input_type.empty()) {
    // Cohere's name ("search_query"), else sentence-transformers' ("query").
    const std::string& type = r.cohere.input_type;
    const std::string short_name = type.starts_with("search_") ? type.substr(7) : type;
    const std::string* prompt = model.FindPrompt(type);
    if (!prompt) prompt = model.FindPrompt(short_name);
    if (prompt) SHOAL_RETURN_IF_ERROR(wire::PrefixTexts(*prompt, options_.limits, &r));
  }
  if (r.options.role != InputRole::kUnspecified) {
    // The native route's input_type: the model's prompt of that name
    // ("query"), else of Cohere's ("search_query"), if it has one.
    const std::string name(InputRoleName(r.options.role));
    const std::string* prompt = model.FindPrompt(name);
    if (!prompt) prompt = model.FindPrompt("search_" + name);
    if (prompt) SHOAL_RETURN_IF_ERROR(wire::PrefixTexts(*prompt, options_.limits, &r));
  }
  return Status::Ok();
}

Status Router::CheckOutputs(const ModelSpec& model, ResponseFormat format, wire::WorkRequest* r) {
  const OutputKinds produces = model.encode_outputs();
  wire::EncodeOptions& o = r->options;
  if (format == ResponseFormat::kOpenAi || format == ResponseFormat::kCohereEmbed) {
    if (!Has(produces, OutputKind::kDense)) {
      return InvalidInput("model: '" + model.id + "' produces " + OutputKindsText(produces) +
                          " vectors, and this route returns dense ones; ask POST /v1/encode/" + model.id +
                          " with \"output\"");
    }
    o.outputs = static_cast<OutputKinds>(OutputKind::kDense);
    return Status::Ok();
  }
  if (o.outputs == 0) o.outputs = static_cast<OutputKinds>(DefaultOutput(produces));
  if (const OutputKinds missing = o.outputs & ~produces; missing != 0) {
    return InvalidInput("output: model '" + model.id + "' produces " + OutputKindsText(produces) + ", not " +
                        OutputKindsText(missing));
  }
  if (!Has(o.outputs, OutputKind::kDense) && r->dense.dimensions != 0) {
    return InvalidInput("dimensions: applies to dense output, and this request asks for " + OutputKindsText(o.outputs));
  }
  if (!Has(o.outputs, OutputKind::kDense) && !r->dense.types.empty()) {
    return InvalidInput("dtype: applies to dense output, and this request asks for " + OutputKindsText(o.outputs));
  }
  if (!Has(o.outputs, OutputKind::kSparse) && (o.sparse_top_k != 0 || o.sparse_tokens)) {
    return InvalidInput(std::string(o.sparse_top_k != 0 ? "sparse_top_k" : "sparse_tokens") +
                        ": applies to sparse output, and this request asks for " + OutputKindsText(o.outputs));
  }
  return Status::Ok();
}

Status Router::ParseGeneration(Route route, std::string_view model_id, PendingRequest* p) const {
  p->generation = std::make_unique<Generation>();
  Generation& g = *p->generation;
  switch (route) {
    case Route::kChat:
      g.api = GenerationApi::kChat;
      return wire::ParseChatCompletions(p->body, options_.limits, &g.request);
    case Route::kCompletions:
      g.api = GenerationApi::kCompletions;
      return wire::ParseCompletions(p->body, options_.limits, &g.request);
    default:
      g.api = GenerationApi::kNative;
      return wire::ParseGenerate(p->body, model_id, options_.limits, &g.request);
  }
}

Status Router::PrepareGeneration(PendingRequest* p) const {
  Generation& g = *p->generation;
  g.request.model = p->model->id;
  g.created_unix_s = UnixMillis() / 1000;
  wire::AppendGenerateWork(g.request, &g.work);
  // The prompt was checked; its JSON escapes may still push it over. Work
  // over a NATS message goes to the payload store (its images may be
  // large), or, without one, was already held to what a message carries.
  const size_t limit = options_.limits.max_item_bytes;
  if (g.work.size() > limit) {
    return Status(Code::kPayloadTooLarge, "request: " + std::to_string(g.work.size()) +
                                              " bytes as a work message, over the limit of " +
                                              std::to_string(limit));
  }
  // One item per output (n), each the same work; the worker tells them
  // apart by index and shares the prompt's KV blocks among them.
  p->request.items.assign(g.request.n, {g.work, GenerationCost(g.request)});
  g.outputs.resize(g.request.n);
  return Status::Ok();
}

void Router::Submit(RouterLane& lane, http::Request&& req, http::Responder respond, const Caller& caller, Route route,
                    std::string_view model_id) {
  auto p = std::make_shared<PendingRequest>();
  p->seq = lane.next_seq++;
  p->id = lane.id + "-" + std::to_string(p->seq);
  p->received = req.received;
  p->body = std::move(req.body);  // before parsing: items may point into it

  auto fail = [&](const Status& s) { respond(http::ErrorResponse(s, p->id)); };

  const bool generates = Generates(route);
  auto timeout = generates ? options_.generate_timeout : options_.default_timeout;
  if (!req.timeout_ms.empty()) {
    int64_t ms = 0;
    auto r = std::from_chars(req.timeout_ms.data(), req.timeout_ms.data() + req.timeout_ms.size(), ms);
    if (r.ec != std::errc() || r.ptr != req.timeout_ms.data() + req.timeout_ms.size() || ms < 1 ||
        ms > options_.max_timeout.count()) {
      return fail(InvalidInput("X-Shoal-Timeout-Ms: expected milliseconds, 1 to " +
                               std::to_string(options_.max_timeout.count())));
    }
    timeout = std::chrono::milliseconds(ms);
  }
  if (!req.priority.empty()) {
    const std::optional<queue::Priority> priority = queue::ParsePriority(req.priority);
    if (!priority) return fail(InvalidInput("X-Shoal-Priority: expected interactive or batch"));
    p->priority = *priority;
  } else if (caller.key) {
    p->priority = caller.key->priority;
  }
  if (p->priority == queue::Priority::kBatch && !lane.dispatcher->HasPriorityClasses()) {
    return fail(InvalidInput("X-Shoal-Priority: this gateway's dispatch (a benchmark baseline) has no batch class"));
  }

  // Routes with the model in the path find it before reading the body. A
  // model may be "base:lora" (a LoRA adapter of base): the key's scope and
  // the catalog are the base's.
  const bool model_in_body = route == Route::kEmbeddings || route == Route::kCohereEmbed ||
                             route == Route::kCohereEmbedV2 || route == Route::kRerank || route == Route::kRerankV2 ||
                             route == Route::kChat || route == Route::kCompletions;
  ModelRef ref;
  if (!model_in_body) {
    ref = SplitModelRef(model_id);
    if (Status s = FindModelFor(caller, ref.base, p.get()); !s.ok()) return fail(s);
  }
  Status parsed = generates ? ParseGeneration(route, ref.base, p.get()) : Parse(route, req, p.get());
  if (!parsed.ok()) return fail(parsed);
  if (model_in_body) {
    const std::string& id = generates ? p->generation->request.model : p->request.model;
    ref = SplitModelRef(id);
    if (Status s = FindModelFor(caller, ref.base, p.get()); !s.ok()) return fail(s);
  }
  if (canaries_ && !p->canary_of.empty()) respond = CountedForCanary(*p, std::move(respond));
  auto lora = ResolveLora(*p->model, ref, generates ? p->generation->request.lora : p->request.lora);
  if (!lora.ok()) return fail(lora.status());
  p->request.lora = std::move(lora).value();  // the work header's "lora" (lane_channel.cc)
  // Tokenizing works for any model; the other tasks need a model of theirs
  // (an image–text embedder scores too).
  const Task needs = generates ? Task::kGenerate : p->request.task;
  const bool scores_images = needs == Task::kScore && p->model->image_text_score != ImageTextScore::kNone;
  if (needs != Task::kTokenize && p->model->task != needs && !scores_images) {
    return fail(InvalidInput("model '" + p->model->id + "' does not " + std::string(TaskName(needs)) +
                             " (task: " + std::string(TaskName(p->model->task)) + ")"));
  }
  // An OCR pipeline's lines are the one extract output a request names.
  if (needs == Task::kExtract && p->request.extract.ocr && p->model->runtime != "ocr") {
    return fail(InvalidInput("output: model '" + p->model->id + "' reads no text from images (ocr: a model of "
                             "runtime ocr)"));
  }
  if (generates) {
    if (Status s = PrepareGeneration(p.get()); !s.ok()) return fail(s);
  } else if (needs == Task::kEncode) {
    if (Status s = ApplyEncodeProfile(p.get()); !s.ok()) return fail(s);
  }
  if (caller.key && limiter_) {
    const RateDecision d = limiter_->Admit(*caller.key, Cost(p->request), SteadyClock::now());
    if (!d.admitted) {
      return respond(http::ErrorResponse(Status(Code::kRateLimited, "key '" + caller.key->name + "': " + d.reason), p->id,
                                   d.retry_after.count()));
    }
  }

  const auto elapsed = SteadyClock::now() - p->received;
  p->deadline = p->received + timeout;
  p->deadline_unix_ms =
      UnixMillis() + std::chrono::duration_cast<std::chrono::milliseconds>(timeout - elapsed).count();
  p->results.resize(p->request.items.size());
  p->remaining = p->request.items.size();
  p->respond = std::move(respond);
  std::shared_ptr<PendingRequest> copy = p->shadowed ? ShadowCopy(lane, *p) : nullptr;
  lane.table->Insert(p);
  if (req.on_hangup) *req.on_hangup = [this, &lane, seq = p->seq] { OnHangup(lane, seq); };
  spdlog::debug("rid={} accepted path={} model={} items={} timeout_ms={}", p->id, req.path, ResponseModel(*p),
                p->request.items.size(),
                std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
  p->trace = req.trace;
  p->submitted_at = SteadyClock::now();
  lane.dispatcher->Submit(p);
  if (copy && !p->finished) {
    copy->submitted_at = SteadyClock::now();
    lane.table->Insert(copy);
    lane.dispatcher->Submit(copy);
  }
}

http::Responder Router::CountedForCanary(const PendingRequest& p, http::Responder respond) const {
  // The side's answer counts for the canary (canary_monitor.h): its status
  // and latency, once, when its head goes out.
  return [monitor = canaries_, model = p.canary_of, canary = p.canary, on_canary = p.on_canary,
          received = p.received, respond = std::move(respond), recorded = false](http::Response r) mutable {
    if (!recorded) {
      recorded = true;
      monitor->Record(model, canary, on_canary, r.status, SteadyClock::now() - received);
    }
    respond(std::move(r));
  };
}

std::shared_ptr<PendingRequest> Router::ShadowCopy(RouterLane& lane, PendingRequest& p) const {
  if (!canaries_ || !Shadows(p) || lane.table->size() >= kShedShadowsAt) return nullptr;
  auto candidate = FindModel(VersionedName(p.canary_of, p.canary.version));
  if (!candidate) return nullptr;  // not in this gateway's catalog yet
  const uint64_t seq = lane.next_seq++;
  auto copy = ShadowOf(p, std::move(candidate), seq, lane.id + "-" + std::to_string(seq), canaries_);
  copy->respond = CountedForCanary(*copy, [](http::Response) {});  // the answer is compared, not sent
  return copy;
}

Status Router::FindModelFor(const Caller& caller, std::string_view name, PendingRequest* p) const {
  // A key's scope names model ids; a version of one is in it too.
  const auto ref = SplitVersionRef(name);
  const std::string_view id = ref.ok() ? ref->id : name;
  if (!caller.MayUse(id)) return OutOfScope(caller, id);
  p->model = FindModel(name);
  if (p->model && ref.ok() && ref->version == 0 && p->model->canary.active()) {
    // The canary's share, by request id: the same request, the same side.
    p->canary_of = std::string(id);
    p->canary = p->model->canary;
    const uint64_t bucket = Fnv1a(p->id) % 10000;
    if (static_cast<double>(bucket) < p->canary.fraction * 10000) {
      if (p->canary.shadow()) {
        p->shadowed = true;  // copied once prepared (ShadowCopy)
      } else if (auto canary = FindModel(VersionedName(id, p->canary.version))) {
        p->model = std::move(canary);
        p->on_canary = true;
      }
    }
  }
  if (p->model) return Status::Ok();
  if (ref.ok() && ref->version != 0 && FindModel(id)) {
    return Status(Code::kModelNotFound, "model '" + std::string(id) + "' keeps no version " +
                                            std::to_string(ref->version) +
                                            " to serve (the serving one, the rollback target and candidates are kept)");
  }
  return Status(Code::kModelNotFound, "model '" + std::string(name) + "' is not in the catalog");
}

void Router::OnHangup(RouterLane& lane, uint64_t seq) {
  std::shared_ptr<PendingRequest> p = lane.table->Find(seq);
  if (!p || p->finished) return;
  spdlog::debug("rid={} the client hung up; cancelling", p->id);
  lane.dispatcher->Cancel(*p);
  // Nobody reads this answer; finishing frees the request now.
  lane.table->Finish(*p, http::ErrorResponse(Status(Code::kDeadlineExceeded, "the client hung up"), p->id));
}

http::Response Router::ListModels(const RouterLane& lane, const Caller& caller) const {
  auto snapshot = catalog_();
  std::string out;
  wire::JsonWriter w(&out);
  w.Raw("{\"object\":\"list\",\"data\":[");
  bool first = true;
  // A model, or one of its LoRA adapters ("base:lora", with its base as
  // "parent", as vLLM lists adapters).
  auto entry = [&](const ModelSpec& spec, const LoraSpec* lora) {
    if (!first) w.Char(',');
    first = false;
    w.Raw("{\"id\":");
    w.String(lora ? spec.id + ":" + lora->name : spec.id);
    w.Raw(",\"object\":\"model\",\"created\":0,\"owned_by\":\"shoal\"");
    if (lora) {
      w.Raw(",\"parent\":");
      w.String(spec.id);
    }
    w.Raw(",\"shoal\":{\"runtime\":");
    w.String(spec.runtime);
    w.Raw(",\"task\":");
    w.String(TaskName(spec.task));
    w.Raw(",\"pool\":");
    w.String(spec.pool);
    w.Raw(",\"description\":");
    w.String(spec.description);
    w.Raw(",\"max_input_tokens\":");
    w.Int(spec.max_input_tokens);
    w.Raw(",\"pinned\":");
    w.Bool(spec.pinned);
    if (spec.version != 0) {  // the serving version (catalog/model_version.h)
      w.Raw(",\"version\":");
      w.Int(spec.version);
    }
    w.Raw(",\"memory_bytes\":");
    w.Int(static_cast<int64_t>(lora ? lora->memory_bytes : spec.memory_bytes));
    w.Raw(",\"test_only\":");
    w.Bool(spec.runtime == "identity");  // not a model: serving-plane measurement
    w.Raw(",\"serving\":");
    w.Bool(lane.dispatcher->HasCapacity(spec.id));
    if (!spec.matryoshka_dimensions.empty()) {
      w.Raw(",\"matryoshka_dimensions\":[");
      for (size_t i = 0; i < spec.matryoshka_dimensions.size(); ++i) {
        if (i) w.Char(',');
        w.Int(spec.matryoshka_dimensions[i]);
      }
      w.Char(']');
    }
    if (spec.task == Task::kEncode) {
      w.Raw(",\"outputs\":[");
      bool first = true;
      for (OutputKind k : kOutputKindOrder) {
        if (!Has(spec.encode_outputs(), k)) continue;
        if (!first) w.Char(',');
        first = false;
        w.String(OutputKindName(k));
      }
      w.Char(']');
    }
    if (!spec.prompts.empty()) {
      w.Raw(",\"prompts\":{");
      for (size_t i = 0; i < spec.prompts.size(); ++i) {
        if (i) w.Char(',');
        w.Key(spec.prompts[i].first);
        w.String(spec.prompts[i].second);
      }
      w.Char('}');
    }
    if (lora) {
      w.Raw(",\"base\":");
      w.String(spec.id);
      w.Raw(",\"lora\":");
      w.String(lora->name);
    } else if (!spec.loras.empty()) {
      w.Raw(",\"loras\":[");
      for (size_t i = 0; i < spec.loras.size(); ++i) {
        if (i) w.Char(',');
        w.String(spec.loras[i].name);
      }
      w.Char(']');
    }
    w.Raw("}}");
  };
  for (const auto& [id, spec] : *snapshot) {
    if (!caller.MayUse(id) || id.find('@') != std::string::npos) continue;  // versions kept besides: not listed
    entry(*spec, nullptr);
    for (const LoraSpec& lora : spec->loras) entry(*spec, &lora);
  }
  w.Raw("]}");
  return http::JsonResponse(200, std::move(out));
}

}  // namespace shoal::gateway
