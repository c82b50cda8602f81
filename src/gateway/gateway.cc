#include "gateway/gateway.h"

#include <future>

#include "common/ids.h"
#include "common/log.h"
#include "gateway/queue_dispatcher.h"
#include "gateway/shadow_request.h"
#include "queue/subjects.h"

namespace shoal::gateway {

namespace {
constexpr auto kSweepPeriod = std::chrono::milliseconds(5);

// The last line of a request's path at debug level, with the id its
// response names (routed or "edge-…").
void LogAnswer(std::string_view path, const http::Response& r, double seconds) {
  std::string_view rid;
  for (const auto& [name, value] : r.headers) {
    if (name == "X-Shoal-Request-Id") rid = value;
  }
  spdlog::debug("rid={} answered path={} status={}{}{} ms={:.2f}", rid.empty() ? "-" : rid, path, r.status,
                r.error_code.empty() ? "" : " error=", r.error_code, seconds * 1e3);
}
}  // namespace

http::Responder Gateway::Observed(http::Request& req, http::Responder respond) {
  // The dashboard's history (and traces) leave out probes and its own
  // polls, which would show an open dashboard as traffic.
  const bool in_history = !Router::IsProbe(req) && !Dashboard::Handles(req.path);
  std::string path = spdlog::should_log(spdlog::level::debug) ? req.path : std::string();
  std::optional<trace::Span> span = tracer_ && in_history ? tracer_->Begin(&req) : std::nullopt;
  return [this, route = GatewayMetrics::RouteLabel(req.path), path = std::move(path), in_history,
          received = req.received, span = std::move(span), seen = false,
          respond = std::move(respond)](http::Response r) mutable {
    if (!seen) {  // a stream's head is its first part
      seen = true;
      const double seconds = std::chrono::duration<double>(SteadyClock::now() - received).count();
      metrics_.Observe(route, r, seconds);
      if (in_history) dashboard_->Record(r.status, seconds);
      if (!path.empty()) LogAnswer(path, r, seconds);
      if (span) RequestTracer::Answered(*span, &r);
    }
    const bool last = !r.more;
    respond(std::move(r));
    if (span && last) {
      tracer_->End(std::move(*span));
      span.reset();
    }
  };
}

Result<std::unique_ptr<Gateway>> Gateway::Start(GatewayOptions options) {
  if (options.id.empty()) options.id = "gw" + RandomToken(6);
  std::unique_ptr<Gateway> g(new Gateway(std::move(options)));
  SHOAL_RETURN_IF_ERROR(g->Init());
  return g;
}

Status Gateway::ConnectControlPlane() {
  auto control = queue::ControlPlane::Connect(options_.nats_url, "shoal-gateway " + options_.id,
                                              options_.nats_security, options_.stream_limits.replicas);
  if (!control.ok()) return control.status();
  control_ = std::move(control).value();
  auto registry = queue::WorkerRegistry::Open(control_.workers.get());
  if (!registry.ok()) return registry.status();
  workers_ = std::move(registry).value();
  auto catalog = queue::CatalogWatch::Open(control_.models.get(), [this](auto snap) { OnCatalog(snap); });
  if (!catalog.ok()) return catalog.status();
  catalog_ = std::move(catalog).value();
  OnCatalog(catalog_->Snapshot());
  auto keys_bucket = queue::OpenKeysBucket(control_.js.get(), control_.replicas);
  if (!keys_bucket.ok()) return keys_bucket.status();
  keys_bucket_ = std::move(keys_bucket).value();
  if (options_.auth == AuthMode::kKeys) {
    // Fail closed: a gateway that cannot read its keys does not start.
    auto ring = queue::KeyRing::Open(keys_bucket_.get(), control_.nc.get());
    if (!ring.ok()) return ring.status();
    keys_ = std::move(ring).value();
  }
  SHOAL_ASSIGN_OR_RETURN(model_store_, store::ModelStore::Open(control_.js.get(), control_.replicas));
  SHOAL_ASSIGN_OR_RETURN(
      model_cache_,
      store::ModelCache::Open({.dir = options_.cache_dir.empty() ? store::DefaultModelCacheDir() : options_.cache_dir,
                               .budget_bytes = options_.cache_bytes},
                              model_store_.get()));
  admin_ = std::make_unique<AdminApi>(AdminOptions{.stream_limits = options_.stream_limits,
                                                   .require_license = options_.require_license,
                                                   .batch_jobs = [this] { return BatchJobs(); },
                                                   .model_cache = model_cache_.get(),
                                                   .canaries = &canaries_,
                                                   .gateway_id = options_.id,
                                                   .serve = [this](const std::string& path, const std::string& body) {
                                                     return ServeInProcess(path, body);
                                                   }},
                                      control_.models.get(), control_.versions.get(),
                                      keys_bucket_.get(), control_.js.get(),
                                      [this] { return catalog_->Snapshot(); }, workers_.get());
  artifacts_ = std::make_unique<ArtifactsApi>(model_store_.get(), options_.http.max_body_bytes);
  auto files = queue::FileStore::Open(control_.js.get(), control_.replicas);
  if (!files.ok()) return files.status();
  file_store_ = std::move(files).value();
  files_ = std::make_unique<FilesApi>(file_store_.get());
  auto batches = queue::BatchStore::Open(control_.js.get(), control_.replicas);
  if (!batches.ok()) return batches.status();
  batch_store_ = std::move(batches).value();
  batches_ = std::make_unique<BatchesApi>(batch_store_.get(), file_store_.get());
  dead_letters_ = std::make_unique<DeadLetters>(control_.nc.get(), control_.js.get(), control_.replicas);
  return dead_letters_->Start();
}

std::shared_ptr<const queue::CatalogSnapshot> Gateway::Catalog() const {
  return catalog_ ? catalog_->Snapshot() : options_.catalog;
}

Result<admin::ServedAnswer> Gateway::ServeInProcess(const std::string& path, const std::string& body) {
  http::Request req;
  req.method = "POST";
  req.path = path;
  req.content_type = req.accept = "application/json";
  req.body = body;
  auto answer = std::make_shared<std::promise<admin::ServedAnswer>>();
  auto result = answer->get_future();
  const size_t lane = batch_lane_.fetch_add(1) % lanes_.size();
  lanes_[lane]->loop.Post([this, lane, req = std::move(req), answer]() mutable {
    router_->Handle(lane, std::move(req), [answer](http::Response res) {
      answer->set_value({res.status, std::move(res.body)});
    });
  });
  return result.get();
}

Status Gateway::StartBatchRunner() {
  // A job's requests enter a lane as the key that created the job would
  // send them, without its rate limits (they run at batch priority).
  auto submit = [this](http::Request req, Caller caller, http::Responder respond) {
    const size_t lane = batch_lane_.fetch_add(1) % lanes_.size();
    lanes_[lane]->loop.Post([this, lane, req = std::move(req), caller = std::move(caller),
                             respond = std::move(respond)]() mutable {
      router_->Handle(lane, std::move(req), std::move(respond), caller);
    });
  };
  auto caller = [this](const std::string& owner) -> Result<Caller> {
    if (owner.empty() || !keys_) return Caller{};
    auto key = keys_->Named(owner);
    if (!key.ok()) return key.status();
    auto unlimited = std::make_shared<queue::ApiKey>(**key);
    unlimited->rps = 0;
    unlimited->tokens_per_min = 0;
    return Caller{std::move(unlimited)};
  };
  batch_runner_ = std::make_unique<BatchRunner>(
      BatchRunnerOptions{.runner_id = options_.id, .max_in_flight = std::max<size_t>(1, options_.batch_in_flight)},
      batch_store_.get(), file_store_.get(), std::move(submit), std::move(caller));
  return batch_runner_->Start();
}

Result<std::unique_ptr<Dispatcher>> Gateway::MakeDispatcher(const LaneSetup& lane) {
  if (options_.dispatchers) return options_.dispatchers(lane);
  auto d = std::make_unique<QueueDispatcher>(lane, offloader_.get());
  SHOAL_RETURN_IF_ERROR(d->Start(lane.nats));
  return std::unique_ptr<Dispatcher>(std::move(d));
}

Status Gateway::Init() {
  const bool nats = options_.catalog == nullptr;
  if (!nats && !options_.dispatchers) return InvalidInput("a gateway without NATS needs its own dispatchers");
  if (options_.auth == AuthMode::kKeys && !nats) {
    return InvalidInput("--auth keys needs NATS (the shoal_keys bucket): not with --in-process");
  }
  if (nats) SHOAL_RETURN_IF_ERROR(ConnectControlPlane());
  if (!options_.dispatchers) {  // the queue: items too large for a message wait in the payload store
    const std::string url = options_.payload_store.empty() ? queue::DefaultPayloadStoreUrl() : options_.payload_store;
    auto store = queue::OpenPayloadStore(url);
    if (!store.ok()) return store.status();  // fail closed: a misconfigured store is a startup error
    // A payload outlives its request only when a gateway died mid-request;
    // no request lives longer than the longest deadline a client may ask.
    const auto orphan_age = std::chrono::duration_cast<std::chrono::seconds>(RouterOptions{}.max_timeout) +
                            std::chrono::minutes(5);
    offloader_ = std::make_unique<PayloadOffloader>(std::move(store).value(), options_.offload_bytes, orphan_age);
  }
  if (auto traces = trace::ExporterOptionsFromEnvironment(options_.otlp_endpoint, {"shoal-gateway", options_.id});
      !traces.endpoint.empty()) {
    spans_ = std::make_unique<trace::SpanExporter>(std::move(traces), metrics_.registry());
    tracer_ = std::make_unique<RequestTracer>(spans_.get(), options_.trace_sample);
  }
  const Router::CatalogFn catalog_fn = [this] { return Catalog(); };
  std::vector<RouterLane> router_lanes;
  std::vector<EventLoop*> loops;
  const int n = std::max(1, options_.http.io_threads);
  for (int i = 0; i < n; ++i) {
    auto lane = std::make_unique<Lane>();
    const std::string lane_id = options_.id + "-" + std::to_string(i);
    lane->loop.Start();
    LaneSetup setup{.loop = &lane->loop,
                    .lane_id = lane_id,
                    .table = &lane->pending,
                    .workers = workers_.get(),
                    .nats = {.url = nats ? options_.nats_url : std::string(), .security = options_.nats_security},
                    .no_capacity_wait = options_.no_capacity_wait,
                    .hedge_after = options_.hedge_after,
                    .stalled_pools = options_.hedge_after.count() > 0 ? &stalled_pools_ : nullptr,
                    .hedged_items = &metrics_.hedged_items()};
    auto dispatcher = MakeDispatcher(setup);
    if (!dispatcher.ok()) return dispatcher.status();
    lane->dispatcher = std::move(dispatcher).value();
    if (const int64_t max_payload = lane->dispatcher->MaxPayload(); max_payload > 0) {
      // Work messages must fit a NATS message with room for their header:
      // larger items go to the payload store (the queue) or are refused.
      const size_t fits = static_cast<size_t>(max_payload) - wire::kHeaderRoom;
      if (offloader_) {
        offloader_->CapInlineLimit(fits);
      } else {
        options_.limits.max_item_bytes = std::min(options_.limits.max_item_bytes, fits);
      }
    }
    // What a request holds outside the gateway ends with it; its stages
    // are spans once it is over.
    lane->pending.set_on_finish([o = offloader_.get(), t = tracer_.get()](const PendingRequest& p) {
      if (o) o->Release(p);
      if (t) t->RecordStages(p);
      if (p.shadow) p.shadow->Finished(p);
    });
    lane->loop.Every(kSweepPeriod, [this, l = lane.get()] { Sweep(*l); });
    router_lanes.push_back({lane_id, lane->dispatcher.get(), &lane->pending});
    loops.push_back(&lane->loop);
    lanes_.push_back(std::move(lane));
  }

  auth_ = std::make_unique<Authenticator>(options_.auth, options_.admin_token, keys_.get());
  dashboard_ = std::make_unique<Dashboard>(
      DashboardOptions{},
      DashboardSources{.gateway_id = options_.id,
                       .auth = options_.auth == AuthMode::kKeys ? "keys" : "none",
                       .lanes = lanes_.size(),
                       .in_flight = [this] { return InFlight(); },
                       .ready = [this] { return Ready(); },
                       .catalog = catalog_fn,
                       .workers = workers_.get(),  // null without NATS: no cluster to show
                       .js = control_.js.get(),
                       .batch_jobs = [this] { return BatchJobs(); },
                       .versions = control_.versions.get(),
                       .canaries = &canaries_});
  dashboard_->Start();
  if (workers_) {
    queue_gauges_ = std::make_unique<QueueGauges>(QueueGaugeSources{
        .catalog = catalog_fn, .workers = workers_.get(), .nc = control_.nc.get(), .js = control_.js.get()});
    queue_gauges_->Start();
  }
  router_ = std::make_unique<Router>(
      RouterOptions{.limits = options_.limits, .default_timeout = options_.default_timeout},
      catalog_fn, [this] { return Ready(); }, std::move(router_lanes), &limiter_, &canaries_);
  if (batch_store_) SHOAL_RETURN_IF_ERROR(StartBatchRunner());
  auto server = http::Server::Start(options_.http, loops, [this](size_t lane, http::Request&& req, http::Responder r) {
    Serve(lane, std::move(req), std::move(r));
  });
  if (!server.ok()) return server.status();
  server_ = std::move(server).value();
  ready_ = true;
  spdlog::info("gateway {} listening on {}://{}:{} ({} lane(s){}{}; auth: {}, at most {} requests in flight)",
               options_.id, options_.http.tls_cert_file.empty() ? "http" : "https", options_.http.host, port(),
               lanes_.size(), options_.dispatch_name.empty() ? "" : ", ", options_.dispatch_name,
               options_.auth == AuthMode::kKeys ? "API keys" : "none", options_.max_in_flight);
  return Status::Ok();
}

void Gateway::Serve(size_t lane, http::Request&& req, http::Responder respond) {
  // Scrapes, like probes, are open and never refused for load.
  if (req.method == "GET" && req.path == "/metrics") {
    return respond(metrics_.Render(InFlight(), (batch_runner_ ? batch_runner_->MetricsText() : "") +
                                                   (queue_gauges_ ? queue_gauges_->Text() : "") +
                                                   canaries_.Text()));
  }
  // So is the dashboard's page: it holds no figures (it fetches /v1/dashboard).
  if (Dashboard::IsPage(req)) return respond(Dashboard::Page());
  respond = Observed(req, std::move(respond));
  if (Router::IsProbe(req)) return router_->Handle(lane, std::move(req), std::move(respond));
  const bool dashboard = Dashboard::Handles(req.path);
  auto ticket = admission_.TryAdmit();
  if (!ticket) {
    return respond(http::ErrorResponse(
        Status(Code::kOverloaded, "the gateway has " + std::to_string(admission_.limit()) +
                                      " requests in flight, its limit (--max-in-flight)"),
        ""));
  }
  respond = Admitted(std::move(respond), std::move(*ticket));
  if (dashboard || AdminApi::Handles(req.path)) {
    std::string who;
    if (Status s = auth_->AuthorizeAdmin(req, &who); !s.ok()) return respond(http::ErrorResponse(s, ""));
    if (dashboard) return dashboard_->Handle(std::move(req), std::move(respond));
    if (artifacts_ && ArtifactsApi::Handles(req.path)) return artifacts_->Handle(std::move(req), std::move(respond));
    if (admin_) return admin_->Handle(std::move(req), std::move(respond), std::move(who));
    return respond(
        http::ErrorResponse(Status(Code::kNotFound, "no admin API without NATS (no catalog to change)"), ""));
  }
  auto caller = auth_->Authenticate(req);
  if (!caller.ok()) return respond(http::ErrorResponse(caller.status(), ""));
  if (FilesApi::Handles(req.path)) {
    if (files_) return files_->Handle(std::move(req), std::move(respond), std::move(caller).value());
    return respond(http::ErrorResponse(Status(Code::kNotFound, "no Files API without NATS (nowhere to keep files)"), ""));
  }
  if (BatchesApi::Handles(req.path)) {
    if (batches_) return batches_->Handle(std::move(req), std::move(respond), std::move(caller).value());
    return respond(http::ErrorResponse(Status(Code::kNotFound, "no Batch API without NATS (nowhere to keep jobs)"), ""));
  }
  router_->Handle(lane, std::move(req), std::move(respond), *caller);
}

void Gateway::OnCatalog(const std::shared_ptr<const queue::CatalogSnapshot>& snapshot) {
  // Every pool in the catalog gets its work stream, so a publish never fails
  // for want of one.
  std::lock_guard lock(pools_mu_);
  for (const auto& [id, spec] : *snapshot) {
    if (pools_.count(spec->pool)) continue;
    if (Status s = queue::EnsureWorkStream(control_.js.get(), spec->pool, options_.stream_limits); !s.ok()) {
      spdlog::error("gateway: work stream for pool {}: {}", spec->pool, s.ToString());
      continue;
    }
    pools_.insert(spec->pool);
  }
}

void Gateway::Sweep(Lane& lane) {
  const auto now = SteadyClock::now();
  for (auto& p : lane.pending.Expired(now)) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - p->received);
    lane.pending.Finish(*p, http::ErrorResponse(Status(Code::kDeadlineExceeded, "no result within " +
                                                                              std::to_string(waited.count()) + " ms"),
                                          p->id));
  }
  lane.dispatcher->Tick(now);
  lane.pending.Reap();
}

std::vector<queue::BatchRecord> Gateway::BatchJobs() const {
  return batch_runner_ ? batch_runner_->Active() : std::vector<queue::BatchRecord>();
}

bool Gateway::Ready() const {
  // Serving, and (unless in-process) still connected to NATS.
  return ready_ && (!control_.nc || natsConnection_Status(control_.nc.get()) == NATS_CONN_STATUS_CONNECTED);
}

size_t Gateway::InFlight() const {
  size_t n = 0;
  for (const auto& lane : lanes_) n += lane->pending.size();
  return n;
}

void Gateway::Drain(std::chrono::milliseconds timeout) {
  if (stopped_) return;
  stopped_ = true;
  ready_ = false;
  // Batch jobs first: their leases go back, and whoever runs next resumes them.
  if (batch_runner_) batch_runner_->Stop();
  // In-flight requests finish (answered and written) within the timeout.
  if (server_) {
    server_->StopAccepting();
    server_->Drain(SteadyClock::now() + timeout);
  }
  for (auto& lane : lanes_) {
    lane->loop.RunAndWait([&] {
      // Whoever is still waiting hears why, rather than a closed connection.
      for (auto& p : lane->pending.All()) {
        lane->pending.Finish(*p, http::ErrorResponse(Status(Code::kNoCapacity, "the gateway is shutting down"), p->id));
      }
      lane->dispatcher->Stop();
    });
  }
  // Those answers reach their sockets before the loops stop.
  if (server_) server_->Drain(SteadyClock::now() + std::chrono::seconds(1));
  if (dashboard_) dashboard_->Stop();
  if (queue_gauges_) queue_gauges_->Stop();
  admin_.reset();
  artifacts_.reset();
  dead_letters_.reset();
  catalog_.reset();
  workers_.reset();
  server_.reset();
  for (auto& lane : lanes_) lane->loop.Stop();
  // After the loops: no request finishes any more, and the deletes queued
  // by those that did run now; the last spans go to the collector.
  offloader_.reset();
  if (spans_) spans_->Stop();
  spdlog::info("gateway {} stopped", options_.id);
}

Gateway::~Gateway() {
  Drain(std::chrono::milliseconds(0));
  // Loops (and the connections' coroutine frames on them) go before the
  // dispatchers and tables their handlers point at.
  for (auto& lane : lanes_) lane->loop.Stop();
}

}  // namespace shoal::gateway
