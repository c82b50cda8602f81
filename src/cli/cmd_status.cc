// shoal status: the cluster — workers, memory, resident / loading / failed
// models, what waits for each model, and the batch jobs not finished — from
// the same sources the gateway's GET /v1/cluster reads (admin/cluster_view.h).
#include <cstdio>
#include <iostream>

#include "admin/catalog_admin.h"
#include "admin/cluster_view.h"
#include "cli/commands.h"
#include "queue/batch_store.h"
#include "queue/control_plane.h"

namespace shoal::cli {
namespace {

using nlohmann::json;

std::string Mb(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", bytes / 1e6);
  return buf;
}

std::string Join(const json& ids) {
  std::string out;
  for (const auto& id : ids) out += (out.empty() ? "" : ",") + id.get<std::string>();
  return out.empty() ? "-" : out;
}

void Print(const json& view) {
  std::printf("WORKERS\n%-28s %-8s %-15s %-9s %-11s %s\n", "ID", "POOL", "MEMORY MB", "MODELS", "LOADS/EVICT",
              "LOADING / FAILED / THRASHING");
  for (const auto& w : view["workers"]) {
    const std::string memory = Mb(w["memory"]["used"]) + " / " + Mb(w["memory"]["budget"]);
    const std::string counters = std::to_string(w["loads"].get<uint64_t>()) + "/" +
                                 std::to_string(w["evictions"].get<uint64_t>());
    std::printf("%-28s %-8s %-15s %-9zu %-11s %s / %s / %s\n", w["id"].get<std::string>().c_str(),
                w["pool"].get<std::string>().c_str(), memory.c_str(), w["resident"].size(), counters.c_str(),
                Join(w["loading"]).c_str(), Join(w["failed"]).c_str(), Join(w["thrashing"]).c_str());
  }
  std::printf("\nMODELS\n%-32s %-8s %-8s %-7s %-17s %s\n", "ID", "POOL", "MB", "PINNED", "WAITING", "LOADED ON");
  for (const auto& m : view["models"]) {
    std::string waiting = m["waiting"].is_null() ? "?" : std::to_string(m["waiting"].get<uint64_t>());
    if (m["waiting_batch"].is_number() && m["waiting_batch"].get<uint64_t>() > 0) {
      waiting += " (" + std::to_string(m["waiting_batch"].get<uint64_t>()) + " batch)";
    }
    std::string on = Join(m["resident_on"]);
    if (!m["loading_on"].empty()) on += " (loading on " + Join(m["loading_on"]) + ")";
    if (!m["failed_on"].empty()) on += " (FAILED on " + Join(m["failed_on"]) + ")";
    std::printf("%-32s %-8s %-8s %-7s %-17s %s\n", m["id"].get<std::string>().c_str(),
                m["pool"].get<std::string>().c_str(), Mb(m["memory_bytes"]).c_str(),
                m["pinned"].get<bool>() ? "yes" : "no", waiting.c_str(), on.c_str());
  }
  if (view["batch_jobs"].empty()) return;
  std::printf("\nBATCH JOBS\n%-32s %-12s %-22s %-16s %s\n", "ID", "STATUS", "ENDPOINT", "OWNER",
              "DONE / FAILED / TOTAL");
  for (const auto& j : view["batch_jobs"]) {
    const std::string owner = j["owner"].get<std::string>();
    std::printf("%-32s %-12s %-22s %-16s %llu / %llu / %llu\n", j["id"].get<std::string>().c_str(),
                j["status"].get<std::string>().c_str(), j["endpoint"].get<std::string>().c_str(),
                owner.empty() ? "-" : owner.c_str(), static_cast<unsigned long long>(j["completed"].get<uint64_t>()),
                static_cast<unsigned long long>(j["failed"].get<uint64_t>()),
                static_cast<unsigned long long>(j["total"].get<uint64_t>()));
  }
}

}  // namespace

Subcommand AddStatus(CLI::App& app) {
  auto* sub = app.add_subcommand("status", "The cluster: workers, memory, loaded models, what waits");
  auto nats = std::make_shared<std::string>("nats://127.0.0.1:4222");
  auto as_json = std::make_shared<bool>(false);
  sub->add_option("--nats", *nats, "NATS URL (tls://... for TLS)")->capture_default_str();
  auto security = std::make_shared<queue::NatsSecurity>();
  AddNatsSecurityOptions(sub, security.get());
  sub->add_flag("--json", *as_json, "print what GET /v1/cluster answers");
  return {sub, [=] {
            auto control = queue::ControlPlane::Connect(*nats, "shoal-status", *security);
            if (!control.ok()) {
              std::cerr << "error: " << control.status().ToString() << "\n";
              return 1;
            }
            admin::CatalogAdmin admin(control->models.get(), control->versions.get(), control->js.get());
            auto specs = admin.List();
            auto workers = queue::ReadHeartbeats(control->workers.get(), 4 * queue::kHeartbeatInterval);
            if (!specs.ok() || !workers.ok()) {
              std::cerr << "error: " << (specs.ok() ? workers.status() : specs.status()).ToString() << "\n";
              return 1;
            }
            queue::CatalogSnapshot snapshot;
            for (const auto& s : *specs) snapshot[s.id] = std::make_shared<const ModelSpec>(s);
            std::vector<queue::BatchRecord> jobs;
            auto batches = queue::BatchStore::Open(control->js.get());
            auto listed = batches.ok() ? (*batches)->List() : Result<std::vector<queue::VersionedBatch>>(batches.status());
            if (!listed.ok()) {
              std::cerr << "error: batch jobs: " << listed.status().ToString() << "\n";
              return 1;
            }
            for (auto& b : *listed) jobs.push_back(std::move(b.record));
            const json view = admin::ClusterView(snapshot, *workers, control->js.get(), jobs);
            if (*as_json) {
              std::cout << view.dump(2) << "\n";
            } else {
              Print(view);
            }
            return 0;
          }};
}

}  // namespace shoal::cli
