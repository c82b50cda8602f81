// The tuning loop's benchmark (issue 8): `shoal tune`'s loop (tune/tuner.h)
// on the bundled default embedder (models/use-lite.yaml) and on a generated
// BERT-base-shaped encoder, each on its own private cluster, one after the
// other. For each: the knee throughput of the tuned configuration against
// the profile's untuned one — both measured back to back at the end of the
// loop, at the same loads (target: tuned >= 1.3x) — and the minutes the loop
// took.
//
// Latency targets: 100 ms for USE-Lite; 1000 ms for BERT-base, which on a
// 2-core CPU takes ~35 ms for one 40-token text in f32 and whose knee lies
// at a dozen connections (a tighter target would measure the target, not
// the tuning).
//
// Writes the tuned entry into models/use-lite.yaml (the bundled profile is
// produced by the tool, not typed; --no-write skips it) and into the
// generated BERT-base profile (build-models/bert-base.tune.yaml, written
// afresh each run so its baseline is the untuned defaults), and the figures
// to --out: default_embedder_tuned_over_default, bertbase_tuned_over_default,
// tune_minutes (both loops together) and per-model knee figures and minutes.
//
// Time: --budget-minutes per model (default 10) plus the model generation on
// a first run: about 20-25 minutes.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "common/log.h"
#include "catalog/model_spec.h"
#include "figures.h"
#include "tune/tune_report.h"
#include "tune/tuner.h"

namespace shoal::bench {
namespace {

struct Options {
  std::string out = "docs/bench/tune.json";
  std::string source_dir = SHOAL_SOURCE_DIR;
  std::string models_dir;  // generated bench models (default: <source>/build-models)
  double budget_minutes = 10;
  double level_seconds = 3;
  double use_lite_target_ms = 100;
  double bert_target_ms = 1000;
  int max_candidates = 0;
  bool write_profiles = true;
  bool use_lite = true, bert = true;
};

constexpr const char* kBertProfile =
    R"(# BERT-base-shaped encoder with random weights (scripts/make-test-models --bench),
# for bench/tune.cc; written afresh by every run, so the tuned entry below is
# always measured against these untuned defaults.
id: bench/bert-base
runtime: native
path: bert-base
task: encode
max_input_tokens: 512
batching:
  max_batch_tokens: 16384
  max_batch_requests: 64
  max_batch_wait_ms: 0
native:
  precision: f32
)";

Result<tune::TuneResult> TuneOne(const std::string& profile, double target_ms, const Options& o,
                                 const char* name) {
  auto spec = ModelSpec::LoadFile(profile);
  if (!spec.ok()) return spec.status();
  tune::TuneOptions t;
  t.latency_target_ms = target_ms;
  t.budget_minutes = o.budget_minutes;
  t.level_seconds = o.level_seconds;
  t.max_candidates = o.max_candidates;
  t.progress = [name](const std::string& line) {
    std::fprintf(stderr, "[%s] %s\n", name, line.c_str());
    std::fflush(stderr);
  };
  auto result = tune::RunTune(*spec, t);
  if (!result.ok()) return result.status();
  std::printf("\n== %s ==\n%s", name, tune::SummaryTable(*result).c_str());
  if (o.write_profiles && result->winner_feasible) {
    auto written = tune::WriteTunedProfile(profile, *result, spec->runtime);
    if (!written.ok()) return written.status();
    std::printf("wrote the tuned entry for %s into %s\n", result->hardware_class.c_str(),
                profile.c_str());
  }
  std::fflush(stdout);
  return result;
}

int Run(const Options& o) {
  if (spdlog::get_level() == spdlog::level::info) spdlog::set_level(spdlog::level::warn);
  std::map<std::string, double> figures;
  double minutes = 0;
  const auto record = [&](const std::string& prefix, const tune::TuneResult& r) {
    figures[prefix + "_tuned_over_default"] = r.tuned_over_default;
    figures[prefix + "_tuned_knee_rps"] = r.final_winner.knee_rps;
    figures[prefix + "_default_knee_rps"] = r.final_baseline.knee_rps;
    figures[prefix + "_held_tuned_over_default"] = r.held_tuned_over_default;
    figures[prefix + "_tune_minutes"] = r.minutes;
    figures[prefix + "_candidates"] = static_cast<double>(r.candidates.size());
    minutes += r.minutes;
  };
  if (o.use_lite) {
    auto r = TuneOne(o.source_dir + "/models/use-lite.yaml", o.use_lite_target_ms, o, "use-lite");
    if (!r.ok()) {
      std::fprintf(stderr, "tune bench: use-lite: %s\n", r.status().ToString().c_str());
      return 1;
    }
    record("default_embedder", *r);
  }
  if (o.bert) {
    const std::string models = GenerateBenchModels(o.source_dir, o.models_dir, "tune");
    if (models.empty()) return 1;
    const std::string profile = models + "/bert-base.tune.yaml";
    std::ofstream(profile) << kBertProfile;
    auto r = TuneOne(profile, o.bert_target_ms, o, "bert-base");
    if (!r.ok()) {
      std::fprintf(stderr, "tune bench: bert-base: %s\n", r.status().ToString().c_str());
      return 1;
    }
    record("bertbase", *r);
  }
  figures["tune_minutes"] = minutes;
  std::printf(
      "\ntuned over untuned knee throughput: use-lite %.2fx, bert-base %.2fx (target 1.3x); %.1f "
      "min\n",
      figures.count("default_embedder_tuned_over_default")
          ? figures["default_embedder_tuned_over_default"]
          : 0,
      figures.count("bertbase_tuned_over_default") ? figures["bertbase_tuned_over_default"] : 0,
      minutes);
  if (!o.out.empty()) WriteFigures(o.out, figures);
  return 0;
}

}  // namespace
}  // namespace shoal::bench

int main(int argc, char** argv) {
  shoal::bench::Options o;
  CLI::App app{"The tuning loop: tuned against untuned knee throughput on USE-Lite and BERT-base"};
  app.add_option("--out", o.out, "where the figures go (empty: nowhere)")->capture_default_str();
  app.add_option("--models", o.models_dir,
                 "the generated bench models (default: <source>/build-models)");
  app.add_option("--budget-minutes", o.budget_minutes, "per model")->capture_default_str();
  app.add_option("--level-seconds", o.level_seconds, "measured time per load level")
      ->capture_default_str();
  app.add_option("--use-lite-target-ms", o.use_lite_target_ms, "USE-Lite's latency target")
      ->capture_default_str();
  app.add_option("--bert-target-ms", o.bert_target_ms, "BERT-base's latency target")
      ->capture_default_str();
  app.add_option("--max-candidates", o.max_candidates,
                 "per model, besides the baseline (0: the budget decides)");
  app.add_flag("!--no-write", o.write_profiles,
               "leave models/use-lite.yaml (and the BERT-base profile) alone");
  app.add_flag("!--no-use-lite", o.use_lite, "skip USE-Lite");
  app.add_flag("!--no-bert", o.bert, "skip BERT-base");
  CLI11_PARSE(app, argc, argv);
  return shoal::bench::Run(o);
}
