#include "gateway/gateway.h"

#include "common/ids.h"
#include "common/log.h"
#include "gateway/inprocess_dispatcher.h"
#include "gateway/queue_dispatcher.h"
#include "wire/subjects.h"

namespace shoal::gateway {

Result<std::unique_ptr<Gateway>> Gateway::Start(GatewayOptions options) {
  if (options.id.empty()) options.id = "gw" + RandomToken(6);
  std::unique_ptr<Gateway> g(new Gateway(std::move(options)));
  SHOAL_RETURN_IF_ERROR(g->Init());
  return g;
}

Status Gateway::Init() {
  Router::CatalogFn catalog_fn;
  if (options_.in_process) {
    auto specs = LoadModelProfiles(options_.models_dir);
    if (!specs.ok()) return specs.status();
    auto snap = std::make_shared<queue::CatalogSnapshot>();
    for (auto& s : *specs) (*snap)[s.id] = std::make_shared<const ModelSpec>(s);
    static_catalog_ = snap;
    dispatcher_ = std::make_unique<InProcessDispatcher>(&pending_);
    catalog_fn = [this] { return static_catalog_; };
  } else {
    auto nc = queue::Connect({.url = options_.nats_url, .name = "shoal-gateway " + options_.id});
    if (!nc.ok()) return nc.status();
    nc_ = std::move(nc).value();
    auto js = queue::NewJetStream(nc_.get());
    if (!js.ok()) return js.status();
    js_ = std::move(js).value();
    auto models = queue::OpenBucket(js_.get(), wire::kModelsBucket, 0);
    if (!models.ok()) return models.status();
    models_kv_ = std::move(models).value();
    auto workers_kv = queue::OpenBucket(js_.get(), wire::kWorkersBucket, queue::kWorkerEntryTtlMs);
    if (!workers_kv.ok()) return workers_kv.status();
    workers_kv_ = std::move(workers_kv).value();
    auto registry = queue::WorkerRegistry::Open(workers_kv_.get());
    if (!registry.ok()) return registry.status();
    workers_ = std::move(registry).value();
    auto qd = std::make_unique<QueueDispatcher>(nc_.get(), options_.id, workers_.get(), &pending_,
                                                QueueDispatcherOptions{options_.no_capacity_wait});
    SHOAL_RETURN_IF_ERROR(qd->Start());
    dispatcher_ = std::move(qd);
    auto catalog = queue::Catalog::Open(models_kv_.get(), [this](auto snap) { OnCatalog(snap); });
    if (!catalog.ok()) return catalog.status();
    catalog_ = std::move(catalog).value();
    OnCatalog(catalog_->Snapshot());
    catalog_fn = [this] { return catalog_->Snapshot(); };
  }

  // Items must fit a NATS message with room for the headers.
  if (nc_) {
    const int64_t max_payload = natsConnection_GetMaxPayload(nc_.get());
    options_.limits.max_item_bytes = std::min<size_t>(options_.limits.max_item_bytes,
                                                      static_cast<size_t>(max_payload) - 4096);
  }
  router_ = std::make_unique<Router>(
      RouterOptions{.gateway_id = options_.id, .limits = options_.limits,
                    .default_timeout = options_.default_timeout},
      catalog_fn, [this] { return ready_.load(); }, dispatcher_.get(), &pending_);
  auto server = HttpServer::Start(options_.http, [this](HttpRequest&& req, Responder respond) {
    router_->Handle(std::move(req), std::move(respond));
  });
  if (!server.ok()) return server.status();
  server_ = std::move(server).value();
  sweeper_ = std::thread([this] { SweepLoop(); });
  ready_ = true;
  spdlog::info("gateway {} listening on http://{}:{}{}", options_.id, options_.http.host, port(),
               options_.in_process ? " (in-process runtime, no queue)" : "");
  return Status::Ok();
}

void Gateway::OnCatalog(const std::shared_ptr<const queue::CatalogSnapshot>& snapshot) {
  // Every pool in the catalog gets its work stream, so a publish never fails
  // for want of one.
  std::lock_guard lock(pools_mu_);
  for (const auto& [id, spec] : *snapshot) {
    if (pools_.count(spec->pool)) continue;
    if (Status s = queue::EnsureWorkStream(js_.get(), spec->pool, options_.stream_limits); !s.ok()) {
      spdlog::error("gateway: work stream for pool {}: {}", spec->pool, s.ToString());
      continue;
    }
    pools_.insert(spec->pool);
  }
}

void Gateway::SweepLoop() {
  while (!stop_sweeper_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto now = SteadyClock::now();
    for (auto& p : pending_.Expired(now)) {
      const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - p->received);
      pending_.Finish(*p, ErrorResponse(Status(Code::kDeadlineExceeded,
                                               "no result within " + std::to_string(waited.count()) + " ms"),
                                        p->id));
    }
    dispatcher_->Tick(now);
  }
}

void Gateway::Drain(std::chrono::milliseconds timeout) {
  if (stopped_) return;
  stopped_ = true;
  ready_ = false;
  if (server_) {
    server_->StopAccepting();
    const auto deadline = SteadyClock::now() + timeout;
    while (pending_.size() > 0 && SteadyClock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  stop_sweeper_ = true;
  if (sweeper_.joinable()) sweeper_.join();
  if (dispatcher_) dispatcher_->Stop();
  // Whoever is still waiting hears why, rather than a closed connection.
  const auto left = pending_.Expired(SteadyClock::time_point::max());
  for (auto& p : left) {
    pending_.Finish(*p, ErrorResponse(Status(Code::kNoCapacity, "the gateway is shutting down"), p->id));
  }
  if (!left.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  catalog_.reset();
  workers_.reset();
  // Responders of requests still pending hold the I/O contexts' timers: drop
  // them before the server destroys its contexts.
  pending_.Clear();
  if (server_) server_->Stop();
  spdlog::info("gateway {} stopped", options_.id);
}

Gateway::~Gateway() { Drain(std::chrono::milliseconds(0)); }

}  // namespace shoal::gateway
