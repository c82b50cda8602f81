// The model store's benchmark (make bench-store → docs/bench/fleet.json): a
// ~100 MB model (scripts/make-test-models' bert-100mb) from `shoal models
// push` to its first answer on a worker whose cache is empty, and again with
// its bytes cached, against the same model registered by its local path;
// the cache's fetch rate against the store's raw read rate; and a push
// through the gateway's admin API (`shoal models push --gateway`: 8 MiB
// parts over HTTP, joined by the gateway) against a push over NATS.
//
// One machine: nats-server (file storage), the worker and the gateway in
// this process, over loopback. "First answer" is one /v1/embeddings request
// sent as soon as the registration returns; it waits in the stream while
// the worker fetches (or checks) and loads the model. Each figure is the
// median of --repeats rounds; each cold round starts from an empty bucket
// and an empty cache.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "admin/catalog_admin.h"
#include "admin/gateway_push.h"
#include "admin/model_directory.h"
#include "bench_cluster.h"
#include "bench_options.h"
#include "figures.h"
#include "queue/topology.h"
#include "store/model_cache.h"
#include "store/model_store.h"
#include "support/http_client.h"

namespace shoal::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Options {
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/fleet.json";
  std::string models_dir;
  int repeats = 3;
};

// Removes every object the push stored, so the next round starts empty.
void EmptyBucket(store::ModelStore& s, const store::PushResult& pushed) {
  for (const auto& f : pushed.manifest.files)
    (void)s.objects().Delete(store::FileObjectName(f.sha256));
  (void)s.objects().Delete(store::ManifestObjectName(pushed.digest));
}

// One embeddings request, sent once the gateway knows the model; the time
// from `since` to its answer in ms, or NAN when it fails.
double FirstAnswerMs(int port, const std::string& model, Clock::time_point since) {
  testing::HttpClient http(port, 120000);
  for (int i = 0; i < 2000;
       ++i) {  // the gateway's catalog follows the registration within milliseconds
    auto known = http.Get("/v1/models");
    if (known.ok() && known->body.find("\"" + model + "\"") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  auto r = http.PostJson("/v1/embeddings",
                         nlohmann::json{{"model", model}, {"input", "the first answer"}}.dump());
  if (!r.ok() || r->status != 200) {
    std::fprintf(stderr, "  %s: %s\n", model.c_str(),
                 r.ok() ? r->body.c_str() : r.status().ToString().c_str());
    return NAN;
  }
  return MsSince(since);
}

int Run(const Options& o) {
  const std::string models =
      GenerateBenchModels(SHOAL_SOURCE_DIR, o.models_dir, "model_store", "bert-100mb");
  if (models.empty()) return 1;
  const std::string model_dir = models + "/bert-100mb";
  const std::string dir =
      fs::temp_directory_path() / ("shoal-store-bench-" + std::to_string(::getpid()));
  worker::WorkerOptions wo;
  wo.cache_dir = dir + "/worker-cache";
  gateway::GatewayOptions go;
  go.cache_dir = dir + "/gateway-cache";
  auto cluster = BenchCluster::Start("model_store", dir + "/cluster", {}, wo, go);
  if (!cluster) return 1;
  auto store = store::ModelStore::Connect({.url = cluster->nats_url(), .name = "store bench"});
  auto admin = admin::CatalogAdmin::Connect(cluster->nats_url());
  if (!store.ok() || !admin.ok()) {
    std::fprintf(stderr, "model_store: %s\n",
                 (!store.ok() ? store.status() : admin.status()).ToString().c_str());
    return 1;
  }

  // Registers `spec` (checked in this process, as `shoal models push` does)
  // and times its first answer from `t0`; removes it after.
  auto first_answer = [&](ModelSpec spec, Clock::time_point t0) -> double {
    spec.pinned = true;
    if (auto r = admin->Register(spec); !r.ok()) {
      std::fprintf(stderr, "  register %s: %s\n", spec.id.c_str(), r.status().ToString().c_str());
      return NAN;
    }
    const double ms = FirstAnswerMs(cluster->port(), spec.id, t0);
    (void)admin->Remove(spec.id);
    return ms;
  };
  auto base_spec = admin::SpecFromDirectory(model_dir, "bench/store");
  if (!base_spec.ok())
    return std::fprintf(stderr, "model_store: %s\n", base_spec.status().ToString().c_str()), 1;

  admin::GatewayClient gateway({.url = "http://127.0.0.1:" + std::to_string(cluster->port()), .token = {}});
  std::vector<double> cold, warm, local, push_ms, fetch_mb_s, raw_mb_s, check_changed_ms,
      check_always_ms, gateway_push_ms;
  double megabytes = 0;
  for (int round = 0; round < o.repeats; ++round) {
    // Cold: an empty bucket and an empty worker cache.
    fs::remove_all(wo.cache_dir + "/models");
    fs::remove_all(wo.cache_dir + "/manifests");
    ModelSpec spec = *base_spec;
    spec.id = "bench/pushed-" + std::to_string(round);
    auto t0 = Clock::now();
    auto pushed = (*store)->Push(model_dir);
    if (!pushed.ok())
      return std::fprintf(stderr, "push: %s\n", pushed.status().ToString().c_str()), 1;
    push_ms.push_back(MsSince(t0));
    megabytes = pushed->manifest.bytes() / 1e6;
    spec.artifact = pushed->digest;
    cold.push_back(first_answer(spec, t0));

    // Warm: the same bytes, cached; a new id, so the worker loads afresh.
    spec.id = "bench/cached-" + std::to_string(round);
    warm.push_back(first_answer(spec, Clock::now()));

    // The same files by path: what a local directory costs.
    ModelSpec by_path = *base_spec;
    by_path.id = "bench/by-path-" + std::to_string(round);
    local.push_back(first_answer(by_path, Clock::now()));

    // Fetch into an empty cache, against reading the chunks alone.
    const std::string fetch_dir = dir + "/fetch-" + std::to_string(round);
    auto cache = store::ModelCache::Open({.dir = fetch_dir}, store->get());
    t0 = Clock::now();
    auto fetched = cache.ok() ? (*cache)->Acquire(pushed->digest) : cache.status();
    if (!fetched.ok())
      return std::fprintf(stderr, "fetch: %s\n", fetched.status().ToString().c_str()), 1;
    fetch_mb_s.push_back(megabytes / (MsSince(t0) / 1000));
    t0 = Clock::now();
    for (const auto& f : pushed->manifest.files) {
      auto info = (*store)->objects().Info(store::FileObjectName(f.sha256));
      if (!info.ok() || !(*store)
                             ->objects()
                             .Read(*info, [](std::string_view,
                                             const queue::ReadPosition&) { return Status::Ok(); })
                             .ok()) {
        return std::fprintf(stderr, "raw read of %s failed\n", f.path.c_str()), 1;
      }
    }
    raw_mb_s.push_back(megabytes / (MsSince(t0) / 1000));
    // A warm cache's check alone: stamps, against hashing every file.
    for (store::CacheVerify verify : {store::CacheVerify::kChanged, store::CacheVerify::kAlways}) {
      auto warm_cache = store::ModelCache::Open({.dir = fetch_dir, .verify = verify}, store->get());
      t0 = Clock::now();
      if (!warm_cache.ok() || !(*warm_cache)->Acquire(pushed->digest).ok()) return 1;
      (verify == store::CacheVerify::kChanged ? check_changed_ms : check_always_ms)
          .push_back(MsSince(t0));
    }
    fs::remove_all(fetch_dir);
    EmptyBucket(**store, *pushed);
    // The same push through the gateway, into the emptied bucket.
    t0 = Clock::now();
    auto via_gateway = admin::PushThroughGateway(gateway, model_dir);
    if (!via_gateway.ok() || via_gateway->digest != pushed->digest) {
      return std::fprintf(stderr, "push through the gateway: %s\n",
                          via_gateway.ok() ? "another digest" : via_gateway.status().ToString().c_str()),
             1;
    }
    gateway_push_ms.push_back(MsSince(t0));
    EmptyBucket(**store, *via_gateway);
    std::fprintf(
        stderr,
        "  round %d: push %.0f ms (through the gateway %.0f ms), push to first answer %.0f ms; cached %.0f ms; "
        "by path %.0f ms; fetch %.0f MB/s, raw read %.0f MB/s\n",
        round + 1, push_ms.back(), gateway_push_ms.back(), cold.back(), warm.back(), local.back(),
        fetch_mb_s.back(), raw_mb_s.back());
  }
  const std::map<std::string, double> figures = {
      {"model_mb", megabytes},
      {"push_ms", Median(push_ms)},
      {"gateway_push_ms", Median(gateway_push_ms)},
      {"gateway_push_over_nats_push", Median(gateway_push_ms) / Median(push_ms)},
      {"push_to_first_answer_ms", Median(cold)},
      {"warm_cache_first_answer_ms", Median(warm)},
      {"local_dir_first_answer_ms", Median(local)},
      {"warm_cache_over_local_dir", Median(warm) / Median(local)},
      {"fetch_mb_per_s", Median(fetch_mb_s)},
      {"store_raw_read_mb_per_s", Median(raw_mb_s)},
      {"fetch_over_raw_read", Median(fetch_mb_s) / Median(raw_mb_s)},
      {"cached_check_ms", Median(check_changed_ms)},
      {"cached_check_always_ms", Median(check_always_ms)},
  };
  std::printf("%.0f MB model, median of %d rounds (one machine, loopback):\n", megabytes,
              o.repeats);
  std::printf("  push                         %8.0f ms\n", figures.at("push_ms"));
  std::printf("  push through the gateway     %8.0f ms  (%.2f x the push over NATS)\n",
              figures.at("gateway_push_ms"), figures.at("gateway_push_over_nats_push"));
  std::printf("  push to first answer (cold)  %8.0f ms\n", figures.at("push_to_first_answer_ms"));
  std::printf("  first answer, cached bytes   %8.0f ms  (%.2f x a local directory's %.0f ms)\n",
              figures.at("warm_cache_first_answer_ms"), figures.at("warm_cache_over_local_dir"),
              figures.at("local_dir_first_answer_ms"));
  std::printf("  check of cached files         %6.1f ms (stamps; hashing every file: %.0f ms)\n",
              figures.at("cached_check_ms"), figures.at("cached_check_always_ms"));
  std::printf(
      "  fetch into the cache         %8.0f MB/s (%.2f x the store's raw read, %.0f MB/s)\n",
      figures.at("fetch_mb_per_s"), figures.at("fetch_over_raw_read"),
      figures.at("store_raw_read_mb_per_s"));
  if (!o.out.empty()) MergeFigures(o.out, figures);
  cluster.reset();
  fs::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app("Model store benchmark: push to first answer, cached loads, fetch rate");
  shoal::bench::AddFigureOptions(app, &o.out, &o.models_dir, &o.repeats);
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
