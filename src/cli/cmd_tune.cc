// shoal tune MODEL: the tuning loop (tune/tuner.h) on a private cluster,
// and its outcome written into the model's profile as the `tuned:` entry
// for this machine's hardware class (tune/profile_writer.h).
//
// MODEL is a profile file (models/use-lite.yaml), a model directory with a
// shoal.yaml, or the id of a profile in --models-dir (default ./models, else
// the source tree's): the file found is the one rewritten.
//
// Progress on stderr; the summary table on stdout. Exit status 0 when the
// profile was written (or --dry-run), 3 when no configuration met the
// latency target (the profile is left alone), 1 on an error.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "common/log.h"
#include "catalog/model_spec.h"
#include "tune/profile_writer.h"
#include "tune/tune_report.h"
#include "tune/tuner.h"

namespace shoal::cli {
namespace {

namespace fs = std::filesystem;

struct TuneCliOptions {
  std::string model;
  std::string models_dir;
  std::string loop = "closed";
  std::string out;
  bool dry_run = false;
  bool verbose = false;
  tune::TuneOptions tune;
};

// The profile file MODEL names (see the top of the file).
Result<std::string> FindProfile(const std::string& model, const std::string& models_dir) {
  std::error_code ec;
  if (fs::is_regular_file(model, ec)) return model;
  if (fs::is_directory(model, ec)) {
    if (fs::is_regular_file(fs::path(model) / "shoal.yaml", ec))
      return (fs::path(model) / "shoal.yaml").string();
    return InvalidInput(
        model +
        " is a directory without a shoal.yaml profile; write one (docs/operations.md) first");
  }
  const std::string dir = models_dir.empty() ? DefaultModelsDir() : models_dir;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file() || e.path().extension() != ".yaml") continue;
    auto spec = ModelSpec::LoadFile(e.path().string(), "");
    if (spec.ok() && spec->id == model) return e.path().string();
  }
  return InvalidInput("no profile file " + model + ", and no profile with id '" + model + "' in " +
                      dir);
}

int Tune(TuneCliOptions& o) {
  if (!o.verbose && spdlog::get_level() == spdlog::level::info)
    spdlog::set_level(spdlog::level::warn);
  auto path = FindProfile(o.model, o.models_dir);
  if (!path.ok()) return Fail(path.status());
  auto spec = ModelSpec::LoadFile(*path);
  if (!spec.ok()) return Fail(spec.status());
  if (o.loop == "closed") {
    o.tune.loop = loadtest::LoopKind::kClosed;
  } else if (o.loop == "open") {
    o.tune.loop = loadtest::LoopKind::kOpen;
  } else {
    return Fail(InvalidInput("--loop: closed or open"));
  }
  o.tune.progress = [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  };
  auto result = tune::RunTune(*spec, o.tune);
  if (!result.ok()) return Fail(result.status());

  std::printf("%s", tune::SummaryTable(*result).c_str());
  if (!o.out.empty()) {
    std::ofstream out(o.out);
    out << tune::ResultJson(*result).dump(2) << "\n";
    if (!out) return Fail(Internal("cannot write " + o.out));
    std::printf("wrote %s\n", o.out.c_str());
  }
  if (!result->winner_feasible) {
    std::fprintf(stderr,
                 "tune: no configuration met the latency target of %.0f ms at its knee; %s is left "
                 "as it was "
                 "(raise --latency-target-ms)\n",
                 o.tune.latency_target_ms, path->c_str());
    return 3;
  }
  if (o.dry_run) {
    std::printf(
        "\n--dry-run: %s not written; its entry would be:\n%s", path->c_str(),
        tune::FormatTunedEntry(result->hardware_class, tune::TunedEntry(*result, spec->runtime))
            .c_str());
    return 0;
  }
  auto written = tune::WriteTunedProfile(*path, *result, spec->runtime);
  if (!written.ok()) return Fail(written.status());
  std::printf("wrote the tuned entry for %s into %s\n", result->hardware_class.c_str(),
              path->c_str());
  return 0;
}

}  // namespace

Subcommand AddTune(CLI::App& app) {
  auto* sub = app.add_subcommand("tune",
                                 "Find the batching, threads and precision with the highest knee "
                                 "throughput within a latency target "
                                 "on this hardware, and write them into the model's profile");
  auto o = std::make_shared<TuneCliOptions>();
  sub->add_option("model", o->model,
                  "a profile file, a model directory with shoal.yaml, or a profile's model id")
      ->required();
  sub->add_option("--models-dir", o->models_dir, "where to look a model id up (default: ./models)");
  sub->add_option("--latency-target-ms", o->tune.latency_target_ms,
                  "p99 at the knee must be within this")
      ->capture_default_str();
  sub->add_option("--budget-minutes", o->tune.budget_minutes,
                  "the whole loop, re-measurement included")
      ->capture_default_str();
  sub->add_option("--loop", o->loop,
                  "closed (levels are connections) or open (levels are requests/s)")
      ->capture_default_str();
  sub->add_option("--level-seconds", o->tune.level_seconds, "measured time per load level")
      ->capture_default_str();
  sub->add_option("--warmup-seconds", o->tune.warmup_seconds, "unmeasured time before each level")
      ->capture_default_str();
  sub->add_option("--min-answers", o->tune.min_answers,
                  "a level runs longer (up to 10x) until it has this many answers")
      ->capture_default_str();
  sub->add_option("--params", o->tune.params,
                  "sweep only these: precision, threads, max_batch_requests, max_batch_tokens, "
                  "max_batch_wait_ms "
                  "(default: all that apply)")
      ->delimiter(',');
  sub->add_option("--prune-fraction", o->tune.prune_fraction,
                  "stop measuring a candidate under this share of the best's throughput at the "
                  "reference load")
      ->capture_default_str();
  sub->add_option("--max-candidates", o->tune.max_candidates,
                  "at most this many besides the baseline (0: budget)")
      ->capture_default_str();
  sub->add_option("--executors", o->tune.executors, "the private worker's executors")
      ->capture_default_str();
  sub->add_option("--out", o->out, "write every candidate's figures here (JSON)");
  sub->add_flag("--dry-run", o->dry_run, "measure and report, but leave the profile as it is");
  sub->add_flag("--verbose", o->verbose, "the private cluster's logs too");
  return {sub, [o] { return Tune(*o); }};
}

}  // namespace shoal::cli
