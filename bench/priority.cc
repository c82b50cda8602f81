// Priority classes (issue 24): what a flood of batch work does to
// interactive latency, through the whole serving path (gateway → JetStream
// → worker), on two workloads:
//   embed     an embedder (MiniLM-L6 shape, native f32): interactive
//             one-sentence /v1/embeddings requests; the flood 32 sentences
//             a request;
//   generate  a generator (qwen3-bench, native f32, continuous batching):
//             interactive completions of 16 tokens; the flood 128 tokens
//             a request;
// Interactive requests come at a fixed rate (open loop: latency counts
// from when a request was due) while, in turn:
//   alone        nothing else runs;
//   batch flood  closed-loop clients keep the flood's requests in flight as
//                X-Shoal-Priority: batch;
//   one class    the same flood, sent without the header (what a queue
//                without priority classes does);
//   batch job    the same flood as a Batch API job (/v1/files, /v1/batches):
//                the gateway's batch runner keeps as many of its lines in
//                flight as the flood has clients; cancelled at the round's
//                end, and drained before the next.
// Each figure is the median of --repeats rounds; the flood's requests/s
// shows that batch work still fills what interactive work leaves.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "admin/model_directory.h"
#include "bench_cluster.h"
#include "bench_options.h"
#include "figures.h"
#include "loadtest/load_generator.h"

namespace shoal::bench {
namespace {

struct Options {
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string out = std::string(SHOAL_SOURCE_DIR) + "/docs/bench/priority.json";
  std::string models_dir;
  std::vector<std::string> workloads = {"embed", "generate"};
  int repeats = 3;
  int flood_clients = 4;  // batch requests in flight
  int seconds = 10;       // measured, per round
  int threads = 2;
};

// One workload: its model, what an interactive request and a flood request
// are, and the interactive rate.
struct Workload {
  std::string name;
  std::string path;
  std::string interactive_body, flood_body;
  double rate = 0;
};

std::string EmbeddingsBody(int sentences, int seed) {
  nlohmann::json input = nlohmann::json::array();
  for (int i = 0; i < sentences; ++i) {
    input.push_back("the river mill " + std::to_string(seed + i) +
                    " grinds grain for the village every morning before the market opens");
  }
  return nlohmann::json{{"model", "bench/minilm"}, {"input", input}}.dump();
}

std::string CompletionBody(int tokens) {
  return nlohmann::json{{"model", "bench/qwen3"},
                        {"prompt", "Describe the old mill by the river as a short note."},
                        {"max_tokens", tokens},
                        {"temperature", 0},
                        {"ignore_eos", true}}
      .dump();
}

// POST `body` to `path`; the JSON answer of a 200.
Result<nlohmann::json> PostForJson(int port, const std::string& path, const std::string& body,
                                   const std::string& content_type = "application/json") {
  auto a = loadtest::SendOnce("127.0.0.1", port, {path, content_type, body}, {}, std::chrono::seconds(60));
  if (!a.ok()) return a.status();
  if (a->status != 200) return Internal(path + ": " + std::to_string(a->status) + " " + a->body);
  return nlohmann::json::parse(a->body);
}

// Uploads a batch input of `lines` copies of `body` for `path`; its file id.
Result<std::string> UploadFloodFile(int port, const std::string& path, const std::string& body, int lines) {
  const nlohmann::json request = nlohmann::json::parse(body);
  std::string jsonl;
  for (int i = 0; i < lines; ++i) {
    jsonl += nlohmann::json{{"custom_id", "flood-" + std::to_string(i)}, {"method", "POST"}, {"url", path},
                            {"body", request}}
                 .dump() +
             "\n";
  }
  const std::string boundary = "priority-bench-flood";
  const std::string form = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--" +
                           boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"flood.jsonl\"\r\n\r\n" +
                           jsonl + "\r\n--" + boundary + "--\r\n";
  auto file = PostForJson(port, "/v1/files", form, "multipart/form-data; boundary=" + boundary);
  if (!file.ok()) return file.status();
  return (*file)["id"].get<std::string>();
}

struct RoundResult {
  double p50_ms = 0, p99_ms = 0;
  double flood_requests_per_s = 0;
  uint64_t errors = 0;
};

// One round: the interactive load, with a flood of `flood` class beside it
// ("" for none, else "batch" or "interactive"; "job": the Batch API job of
// `flood_file`).
RoundResult RunRound(const Options& o, int port, const Workload& w, const std::string& flood,
                     const std::string& flood_file) {
  loadtest::LoadSpec interactive;
  interactive.port = port;
  interactive.path = w.path;
  interactive.content_type = "application/json";
  interactive.body = w.interactive_body;
  interactive.connections = 8;
  interactive.rate = w.rate;
  interactive.warmup = std::chrono::milliseconds(1000);
  interactive.duration = std::chrono::seconds(o.seconds);

  loadtest::LoadSpec batch = interactive;
  batch.body = w.flood_body;
  batch.connections = o.flood_clients;
  batch.rate = 0;  // closed loop
  batch.warmup = std::chrono::milliseconds(500);
  batch.duration = std::chrono::seconds(o.seconds + 1);
  batch.drain = std::chrono::seconds(30);
  if (flood == "batch") batch.headers.emplace_back("X-Shoal-Priority", "batch");

  RoundResult r;
  if (flood == "job") {
    const auto started = SteadyClock::now();
    auto job = PostForJson(port, "/v1/batches",
                           nlohmann::json{{"input_file_id", flood_file}, {"endpoint", w.path},
                                          {"completion_window", "24h"}}
                               .dump());
    if (!job.ok()) {
      std::fprintf(stderr, "priority: %s\n", job.status().ToString().c_str());
      return {.errors = 1};
    }
    const loadtest::LoadResult measured = loadtest::RunLoad(interactive);
    const std::string cancel = "/v1/batches/" + (*job)["id"].get<std::string>() + "/cancel";
    auto cancelled = PostForJson(port, cancel, "");
    const double seconds = std::chrono::duration<double>(SteadyClock::now() - started).count();
    r.p50_ms = measured.Percentile(50);
    r.p99_ms = measured.Percentile(99);
    r.errors = measured.errors + (cancelled.ok() ? 0 : 1);
    if (cancelled.ok()) r.flood_requests_per_s = (*cancelled)["request_counts"]["completed"].get<double>() / seconds;
    // The lines in flight finish before the next round.
    while (cancelled.ok() && (*cancelled)["status"] != "cancelled") {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      cancelled = PostForJson(port, cancel, "");
    }
    return r;
  }
  loadtest::LoadResult flooded;
  std::thread flood_thread;
  if (!flood.empty()) flood_thread = std::thread([&] { flooded = loadtest::RunLoad(batch); });
  const loadtest::LoadResult measured = loadtest::RunLoad(interactive);
  if (flood_thread.joinable()) flood_thread.join();
  r.p50_ms = measured.Percentile(50);
  r.p99_ms = measured.Percentile(99);
  r.errors = measured.errors + flooded.errors;
  r.flood_requests_per_s = flood.empty() ? 0 : flooded.ok_in_window / (o.seconds + 1.0);
  return r;
}

void Measure(const Options& o, int port, const Workload& w, std::map<std::string, double>* figures) {
  std::printf("\n%s: %.0f interactive requests/s, %d flood clients, %d s rounds, median of %d\n", w.name.c_str(),
              w.rate, o.flood_clients, o.seconds, o.repeats);
  std::printf("%-12s %10s %10s %18s\n", "beside", "p50 ms", "p99 ms", "flood requests/s");
  // Enough lines that no round's job runs out.
  auto flood_file = UploadFloodFile(port, w.path, w.flood_body, 2000);
  if (!flood_file.ok()) {
    std::fprintf(stderr, "priority: %s\n", flood_file.status().ToString().c_str());
    return;
  }
  const std::pair<const char*, const char*> cases[] = {
      {"alone", ""}, {"batch", "batch"}, {"batch_job", "job"}, {"one_class", "interactive"}};
  for (const auto& [name, flood] : cases) {
    std::vector<double> p50, p99, rps;
    for (int i = 0; i < o.repeats; ++i) {
      std::fprintf(stderr, "priority: %s, %s, round %d/%d\n", w.name.c_str(), name, i + 1, o.repeats);
      const RoundResult r = RunRound(o, port, w, flood, *flood_file);
      if (r.errors) std::fprintf(stderr, "priority: %s: %llu errors\n", name, static_cast<unsigned long long>(r.errors));
      p50.push_back(r.p50_ms);
      p99.push_back(r.p99_ms);
      rps.push_back(r.flood_requests_per_s);
    }
    const std::string k = w.name + "_" + name;
    (*figures)[k + "_p50_ms"] = Median(p50);
    (*figures)[k + "_p99_ms"] = Median(p99);
    if (*flood) (*figures)[k + "_flood_requests_per_s"] = Median(rps);
    std::printf("%-12s %10.1f %10.1f %18.2f\n", name, (*figures)[k + "_p50_ms"], (*figures)[k + "_p99_ms"],
                Median(rps));
    std::fflush(stdout);
  }
  const std::string k = w.name + "_";
  (*figures)[k + "interactive_p99_with_batch_over_without"] = (*figures)[k + "batch_p99_ms"] / (*figures)[k + "alone_p99_ms"];
  (*figures)[k + "interactive_p99_with_batch_job_over_without"] =
      (*figures)[k + "batch_job_p99_ms"] / (*figures)[k + "alone_p99_ms"];
  (*figures)[k + "interactive_p99_one_class_over_without"] =
      (*figures)[k + "one_class_p99_ms"] / (*figures)[k + "alone_p99_ms"];
  std::printf("%s: interactive p99 over without: with a batch flood %.2f, with a batch job %.2f (one class: %.2f)\n",
              w.name.c_str(), (*figures)[k + "interactive_p99_with_batch_over_without"],
              (*figures)[k + "interactive_p99_with_batch_job_over_without"],
              (*figures)[k + "interactive_p99_one_class_over_without"]);
}

int Run(const Options& o) {
  const std::string models = GenerateBenchModels(o.source_dir, o.models_dir, "priority", "minilm-l6,qwen3-bench");
  if (models.empty()) return 1;
  auto embedder = admin::SpecFromDirectory(models + "/minilm-l6", "bench/minilm");
  if (!embedder.ok()) return std::fprintf(stderr, "%s\n", embedder.status().ToString().c_str()), 1;
  ModelSpec generator;
  generator.id = "bench/qwen3";
  generator.runtime = "native";
  generator.task = Task::kGenerate;
  generator.path = models + "/qwen3-bench";
  generator.runtime_options_json = R"({"max_context": 1024, "precision": "f32"})";
  std::vector<ModelSpec> specs = {*embedder, generator};
  for (ModelSpec& spec : specs) {
    spec.pinned = true;
    spec.batching.max_batch_requests = 32;
    spec.queue.ack_wait_ms = 60000;
  }
  specs[1].batching.max_batch_tokens = 512;
  worker::WorkerOptions wo;
  wo.threads_per_executor = o.threads;
  const std::string dir = std::filesystem::temp_directory_path() / ("shoal-priority-bench-" + std::to_string(::getpid()));
  gateway::GatewayOptions go;
  go.batch_in_flight = o.flood_clients;  // a job's flood as deep as the clients'
  auto cluster = BenchCluster::Start("priority", dir, specs, wo, go);
  if (!cluster) return 1;
  const int port = cluster->port();

  std::printf("Interactive latency beside a flood of batch work, %d threads\n", o.threads);
  const Workload workloads[] = {
      {"embed", "/v1/embeddings", EmbeddingsBody(1, 0), EmbeddingsBody(32, 1000), 20},
      {"generate", "/v1/completions", CompletionBody(16), CompletionBody(128), 4},
  };
  std::map<std::string, double> figures;
  for (const Workload& w : workloads) {
    if (std::find(o.workloads.begin(), o.workloads.end(), w.name) != o.workloads.end()) Measure(o, port, w, &figures);
  }
  // The headline: the worse of the workloads and of the two ways batch
  // work comes (a flood of batch-class requests, a Batch API job).
  for (const Workload& w : workloads) {
    for (const char* way : {"_interactive_p99_with_batch_over_without", "_interactive_p99_with_batch_job_over_without"}) {
      const auto it = figures.find(w.name + way);
      if (it == figures.end()) continue;
      double& worst = figures["interactive_p99_with_batch_over_without"];
      worst = std::max(worst, it->second);
    }
  }
  cluster.reset();
  WriteFigures(o.out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"Interactive latency beside a flood of batch work, with and without priority classes"};
  shoal::bench::AddFigureOptions(app, &o.out, &o.models_dir, &o.repeats);
  app.add_option("--workloads", o.workloads, "embed, generate")->delimiter(',');
  app.add_option("--flood-clients", o.flood_clients, "batch requests kept in flight");
  app.add_option("--seconds", o.seconds, "measured seconds per round");
  app.add_option("--threads", o.threads, "threads per executor");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
