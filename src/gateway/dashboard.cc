#include "gateway/dashboard.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "admin/cluster_view.h"
#include "common/ids.h"
#include "gateway/dashboard_html.h"  // generated from dashboard.html (src/CMakeLists.txt)

namespace shoal::gateway {
namespace {

using nlohmann::json;

// What the header of the page sums up, from a ClusterView document.
json Totals(const json& cluster) {
  uint64_t executors = 0, used = 0, budget = 0, queued = 0, running = 0, waiting = 0;
  size_t resident = 0, loading = 0;
  for (const json& w : cluster["workers"]) {
    executors += w.value("executors", 0);
    used += w["memory"].value("used", uint64_t{0});
    budget += w["memory"].value("budget", uint64_t{0});
    queued += w.value("queued", uint64_t{0});
    running += w.value("in_flight", uint64_t{0});
  }
  for (const json& m : cluster["models"]) {
    if (!m["resident_on"].empty()) ++resident;
    if (!m["loading_on"].empty()) ++loading;
    if (m["waiting"].is_number()) waiting += m["waiting"].get<uint64_t>();
  }
  return {{"workers", cluster["workers"].size()},
          {"executors", executors},
          {"memory_used", used},
          {"memory_budget", budget},
          {"models", cluster["models"].size()},
          {"models_resident", resident},
          {"models_loading", loading},
          {"waiting", waiting},
          {"worker_queued", queued},
          {"worker_in_flight", running}};
}

}  // namespace

Dashboard::Dashboard(DashboardOptions options, DashboardSources sources)
    : options_(options),
      sources_(std::move(sources)),
      history_(static_cast<size_t>(std::max<int64_t>(
          1, std::chrono::duration_cast<std::chrono::milliseconds>(options.window).count() /
                 std::max<int64_t>(1, options.period.count())))),
      versions_(sources_.versions, sources_.canaries) {}

Dashboard::~Dashboard() { Stop(); }

void Dashboard::Start() {
  if (started_loop_) return;
  started_loop_ = true;
  loop_.Start();
  loop_.Every(options_.period, [this] { TakeSample(); });
}

void Dashboard::Stop() {
  stopped_ = true;
  loop_.Stop();
}

http::Response Dashboard::Page() {
  http::Response r;
  r.content_type = "text/html; charset=utf-8";
  r.body = std::string(kDashboardHtml);
  // The page is in the binary: a new build is a new page, so never cache it
  // across a gateway upgrade.
  r.headers.emplace_back("Cache-Control", "no-cache");
  return r;
}

void Dashboard::Handle(http::Request&& req, http::Responder respond) {
  if (stopped_ || !started_loop_) {
    return respond(http::ErrorResponse(Status(Code::kNoCapacity, "the gateway is shutting down"), ""));
  }
  loop_.Post([this, req = std::move(req), respond = std::move(respond)] { respond(Serve(req)); });
}

void Dashboard::TakeSample() {
  history_.Sample(SteadyClock::now(), UnixMillis(), sources_.in_flight ? sources_.in_flight() : 0);
}

http::Response Dashboard::Serve(const http::Request& req) {
  if (req.method != "GET")
    return http::ErrorResponse(InvalidInput("GET /v1/dashboard"), "dash-" + RandomToken(8));
  json cluster = nullptr, totals = nullptr;
  if (sources_.workers && sources_.catalog) {
    cluster = admin::ClusterView(*sources_.catalog(), sources_.workers->Live(), sources_.js,
                                 sources_.batch_jobs ? sources_.batch_jobs() : std::vector<queue::BatchRecord>());
    totals = Totals(cluster);
  }
  json gateway = {
      {"id", sources_.gateway_id},
      {"ready", sources_.ready ? sources_.ready() : true},
      {"lanes", sources_.lanes},
      {"auth", sources_.auth},
      {"uptime_s", std::chrono::duration<double>(SteadyClock::now() - started_).count()},
      {"in_flight", sources_.in_flight ? sources_.in_flight() : 0},
      {"period_ms", options_.period.count()},
      {"window_s", options_.window.count()},
      {"now_unix_ms", UnixMillis()},
  };
  json out = {{"gateway", std::move(gateway)},
              {"history", history_.ToJson()},
              {"totals", std::move(totals)},
              {"cluster", std::move(cluster)},
              {"versions", versions_.Json()}};
  http::Response r = http::JsonResponse(200, out.dump());
  r.headers.emplace_back("Cache-Control", "no-store");
  return r;
}

}  // namespace shoal::gateway
