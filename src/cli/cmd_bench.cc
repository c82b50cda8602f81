// shoal bench: a load sweep against any Shoal gateway or OpenAI-compatible
// server (loadtest/sweep.h), closed loop (concurrency) or open loop (Poisson
// rate); the knee; a table on stdout, the report as JSON and an SVG figure.
// A progress line on stderr while it runs — one updating line on a
// terminal, a plain line every few seconds otherwise — never on stdout, so
// stdout is the table alone.
//
// Threading: one thread; the sweep calls the progress bar on it.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>

#include "cli/commands.h"
#include "loadtest/mix.h"
#include "loadtest/report.h"
#include "loadtest/svg_plot.h"
#include "loadtest/sweep.h"

namespace shoal::cli {
namespace {

using nlohmann::json;
using namespace shoal::loadtest;
using Clock = std::chrono::steady_clock;

struct BenchFlags {
  std::string url = "http://127.0.0.1:8080";
  std::string route = "embeddings";
  std::string model;
  std::string words = "16";
  int items = 1;
  int max_tokens = 16;
  int distinct = 64;
  std::string mix_file;
  std::string loop = "closed";
  std::vector<double> levels;
  double start = 0, factor = 2, max_level = 0;  // start, max: 0 = the loop's default
  double duration_s = 5, warmup_s = 1, drain_s = 10;
  double latency_target_ms = 0;
  double min_gain = 0.05, latency_factor = 4, max_errors = 0.01;
  int max_connections = 1024;
  std::string api_key;
  std::vector<std::string> headers;
  std::string out, svg, title;
  uint64_t seed = 1;
  bool no_progress = false;
};

// http://host[:port][/prefix]: the host, port and a path prefix for every
// request (a gateway behind a proxy at /shoal).
struct Url {
  std::string host;
  int port = 80;
  std::string prefix;
};

Result<Url> ParseUrl(const std::string& text) {
  std::string rest = text;
  if (rest.rfind("https://", 0) == 0) {
    return InvalidInput("--url " + text +
                        ": HTTPS is not supported; shoal bench speaks plain HTTP");
  }
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  if (rest.find("://") != std::string::npos)
    return InvalidInput("--url " + text + ": expected http://HOST:PORT");
  Url url;
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    url.prefix = rest.substr(slash);
    rest = rest.substr(0, slash);
    while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
  }
  std::string port;
  if (!rest.empty() && rest[0] == '[') {  // [::1]:8080
    const size_t close = rest.find(']');
    if (close == std::string::npos) return InvalidInput("--url " + text + ": unclosed [");
    url.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return InvalidInput("--url " + text + ": expected :PORT after ]");
      port = rest.substr(close + 2);
    }
  } else {
    const size_t colon = rest.rfind(':');
    url.host = rest.substr(0, colon);
    if (colon != std::string::npos) port = rest.substr(colon + 1);
  }
  if (url.host.empty()) return InvalidInput("--url " + text + ": no host");
  if (!port.empty()) {
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p < 1 || p > 65535)
      return InvalidInput("--url " + text + ": bad port '" + port + "'");
    url.port = static_cast<int>(p);
  }
  return url;
}

// The progress bar on stderr.
class Progress {
 public:
  Progress(bool closed, bool enabled)
      : closed_(closed), enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {}

  void operator()(const SweepProgress& p) {
    if (!enabled_) return;
    const std::string level = p.level_count ? "level " + std::to_string(p.level_index + 1) + "/" +
                                                  std::to_string(p.level_count)
                                            : "level " + std::to_string(p.level_index + 1);
    char offered[64];
    std::snprintf(offered, sizeof offered, closed_ ? "%g conn" : "%g req/s", p.offered);
    char line[256];
    if (p.finished) {
      const LevelResult& l = *p.finished;
      std::snprintf(line, sizeof line, "%s  %s: %.1f req/s, p50 %.1f ms, p99 %.1f ms, %llu errors",
                    level.c_str(), offered, l.throughput_rps, l.p50_ms, l.p99_ms,
                    static_cast<unsigned long long>(l.errors));
      Emit(line, /*final=*/true);
      return;
    }
    const double fraction =
        p.level_duration_s > 0 ? std::min(1.0, p.level_elapsed_s / p.level_duration_s) : 0;
    constexpr int kWidth = 24;
    const int filled = static_cast<int>(fraction * kWidth);
    const std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '-');
    std::snprintf(line, sizeof line, "%s  %s  [%s] %4.1f/%.1f s  ok %llu  errors %llu",
                  level.c_str(), offered, bar.c_str(), p.level_elapsed_s, p.level_duration_s,
                  static_cast<unsigned long long>(p.ok), static_cast<unsigned long long>(p.errors));
    if (!tty_) {
      // A log, not a terminal: a line every few seconds at most.
      const auto now = Clock::now();
      if (now - last_plain_ < std::chrono::seconds(5)) return;
      last_plain_ = now;
    }
    Emit(line, /*final=*/false);
  }

 private:
  void Emit(const std::string& line, bool final) {
    if (tty_) {
      std::fprintf(stderr, "\r%-*s%s", static_cast<int>(std::max(width_, line.size())),
                   line.c_str(), final ? "\n" : "");
      width_ = final ? 0 : line.size();
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }

  bool closed_, enabled_, tty_;
  size_t width_ = 0;
  Clock::time_point last_plain_ = Clock::now();
};

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return InvalidInput("cannot write " + path);
  f << text;
  f.close();
  if (!f) return InvalidInput("cannot write " + path);
  return Status::Ok();
}

int RunBench(const BenchFlags& f) {
  auto url = ParseUrl(f.url);
  if (!url.ok()) return Fail(url.status());
  Target target;
  target.host = url->host;
  target.port = url->port;
  json mix_echo;
  if (!f.mix_file.empty()) {
    auto mix = ReadMixFile(f.mix_file);
    if (!mix.ok()) return Fail(mix.status());
    target.mix = std::move(mix).value();
    mix_echo = {{"file", f.mix_file}, {"entries", target.mix.size()}};
  } else {
    GeneratedMix g;
    auto route = ParseRoute(f.route);
    if (!route.ok()) return Fail(route.status());
    if (f.model.empty()) return Fail(InvalidInput("--model is required (or --mix FILE.jsonl)"));
    g.route = *route;
    g.model = f.model;
    if (Status s = ParseWordRange(f.words, &g.min_words, &g.max_words); !s.ok()) return Fail(s);
    g.items = f.items;
    g.max_tokens = f.max_tokens;
    g.distinct = f.distinct;
    g.seed = f.seed;
    auto mix = GenerateMix(g);
    if (!mix.ok()) return Fail(mix.status());
    target.mix = std::move(mix).value();
    mix_echo = {{"generated", f.route}, {"model", f.model},           {"text_words", f.words},
                {"items", f.items},     {"max_tokens", f.max_tokens}, {"distinct", f.distinct}};
  }
  for (auto& e : target.mix) e.path = url->prefix + e.path;
  if (!f.api_key.empty()) target.headers.emplace_back("Authorization", "Bearer " + f.api_key);
  json header_names = json::array();
  for (const auto& h : f.headers) {
    const size_t colon = h.find(':');
    if (colon == std::string::npos || colon == 0)
      return Fail(InvalidInput("--header '" + h + "': expected 'Name: value'"));
    std::string value = h.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    target.headers.emplace_back(h.substr(0, colon), value);
    header_names.push_back(h.substr(0, colon));  // never the values: they may be secrets
  }

  SweepOptions o;
  o.loop = f.loop == "open" ? LoopKind::kOpen : LoopKind::kClosed;
  const bool closed = o.loop == LoopKind::kClosed;
  o.levels = f.levels;
  o.start = f.start > 0 ? f.start : closed ? 1 : 50;
  o.factor = f.factor;
  o.max_level = f.max_level > 0 ? f.max_level : closed ? 1024 : 1e6;
  auto ms = [](double s) {
    return std::chrono::milliseconds(static_cast<int64_t>(s * 1000 + 0.5));
  };
  o.duration = ms(f.duration_s);
  o.warmup = ms(f.warmup_s);
  o.drain = ms(f.drain_s);
  o.max_connections = f.max_connections;
  o.seed = f.seed;
  o.knee.min_gain = f.min_gain;
  o.knee.latency_factor = f.latency_factor;
  o.knee.max_error_fraction = f.max_errors;
  o.knee.latency_target_ms = f.latency_target_ms;
  Progress progress(closed, !f.no_progress);
  o.progress = [&progress](const SweepProgress& p) { progress(p); };

  std::set<std::string> paths;
  for (const auto& e : target.mix) paths.insert(e.path);
  std::fprintf(stderr,
               "shoal bench: %s loop against %s:%d (%s), %.1f s a level after %.1f s of warm-up\n",
               closed ? "closed" : "open (Poisson)", target.host.c_str(), target.port,
               paths.size() == 1 ? paths.begin()->c_str()
                                 : (std::to_string(paths.size()) + " routes").c_str(),
               f.duration_s, f.warmup_s);
  auto report = RunSweep(target, o);
  if (!report.ok()) return Fail(report.status());

  std::fputs(SweepTable(*report).c_str(), stdout);
  std::fflush(stdout);
  if (!f.out.empty()) {
    json options = {{"url", f.url},
                    {"routes", std::vector<std::string>(paths.begin(), paths.end())},
                    {"mix", mix_echo},
                    {"headers", header_names},
                    {"loop", LoopName(o.loop)},
                    {"duration_ms", o.duration.count()},
                    {"warmup_ms", o.warmup.count()},
                    {"drain_ms", o.drain.count()},
                    {"seed", o.seed},
                    {"knee_criteria",
                     {{"min_gain", o.knee.min_gain},
                      {"latency_factor", o.knee.latency_factor},
                      {"latency_target_ms", o.knee.latency_target_ms},
                      {"max_error_fraction", o.knee.max_error_fraction}}}};
    if (!o.levels.empty()) {
      options["levels"] = o.levels;
    } else {
      options["start"] = o.start;
      options["factor"] = o.factor;
      options["max"] = o.max_level;
    }
    if (!closed) options["max_connections"] = o.max_connections;
    if (Status s = WriteFile(f.out, SweepJson(*report, options).dump(2) + "\n"); !s.ok())
      return Fail(s);
  }
  if (!f.svg.empty()) {
    std::string title = f.title;
    if (title.empty()) {
      title = "shoal bench: " +
              (paths.size() == 1 ? *paths.begin() : std::to_string(paths.size()) + " routes") +
              " on " + target.host + ":" + std::to_string(target.port) +
              (closed ? ", closed loop" : ", open loop");
    }
    if (Status s = WriteFile(f.svg, SweepSvg(*report, title)); !s.ok()) return Fail(s);
  }
  return 0;
}

}  // namespace

Subcommand AddBench(CLI::App& app) {
  auto* sub = app.add_subcommand("bench",
                                 "Load sweep against a Shoal gateway or an OpenAI-compatible "
                                 "server: throughput, tokens/s, p50/p95/p99 "
                                 "and errors per level, and the knee (plain HTTP only, no TLS)");
  auto f = std::make_shared<BenchFlags>();
  sub->add_option("--url", f->url, "the server, http://HOST[:PORT][/PREFIX] (HTTP only; no https)")
      ->capture_default_str();
  sub->add_option("--route", f->route,
                  "generated requests for: encode, score, generate (native, /v1/.../MODEL), "
                  "embeddings, chat, "
                  "completions, rerank (OpenAI/Cohere)")
      ->capture_default_str();
  sub->add_option("--model", f->model, "the model the generated requests name");
  sub->add_option("--text-words", f->words, "words per text: N, or MIN-MAX drawn uniformly")
      ->capture_default_str();
  sub->add_option("--items", f->items, "texts per request (items, inputs, texts or documents)")
      ->capture_default_str();
  sub->add_option("--max-tokens", f->max_tokens, "tokens to generate (generate, chat, completions)")
      ->capture_default_str();
  sub->add_option("--distinct", f->distinct, "distinct generated requests, drawn at random")
      ->capture_default_str();
  sub->add_option(
         "--mix", f->mix_file,
         "recorded requests instead: JSONL, one a line: {\"path\", \"body\" or \"body_text\", "
         "\"content_type\", \"weight\"}")
      ->check(CLI::ExistingFile);
  sub->add_option("--loop", f->loop,
                  "closed: levels are connections; open: levels are requests/s (Poisson)")
      ->check(CLI::IsMember({"closed", "open"}))
      ->capture_default_str();
  sub->add_option("--levels", f->levels,
                  "the levels, increasing (1,2,4,8); default: --start, x --factor up to --max "
                  "until the knee")
      ->delimiter(',');
  sub->add_option("--start", f->start, "first level (default 1 connection, or 50 req/s open)");
  sub->add_option("--factor", f->factor, "growth per level")->capture_default_str();
  sub->add_option("--max", f->max_level,
                  "highest level (default 1024 connections, or 1e6 req/s open)");
  sub->add_option("--duration", f->duration_s, "seconds measured per level")->capture_default_str();
  sub->add_option("--warmup", f->warmup_s, "seconds of load before each level is measured")
      ->capture_default_str();
  sub->add_option("--drain", f->drain_s,
                  "seconds a level's last answers are awaited (later: errors)")
      ->capture_default_str();
  sub->add_option("--latency-target-ms", f->latency_target_ms,
                  "levels with p99 above it are past the knee");
  sub->add_option("--min-gain", f->min_gain,
                  "throughput gain under which a level does not count as rising")
      ->capture_default_str();
  sub->add_option("--latency-factor", f->latency_factor,
                  "p99 over this times the lowest p99: past the knee")
      ->capture_default_str();
  sub->add_option("--max-errors", f->max_errors,
                  "error fraction above which a level is past the knee")
      ->capture_default_str();
  sub->add_option("--max-connections", f->max_connections, "open loop: most connections per level")
      ->capture_default_str();
  sub->add_option("--api-key", f->api_key, "sent as Authorization: Bearer KEY")
      ->envname("SHOAL_API_KEY");
  sub->add_option("--header", f->headers, "an extra request header, 'Name: value' (repeatable)");
  sub->add_option("--out", f->out, "write the report as JSON here");
  sub->add_option("--svg", f->svg, "write throughput and latency against offered load as SVG here");
  sub->add_option("--title", f->title, "the SVG's title");
  sub->add_option("--seed", f->seed, "seed of the texts, the draws and the arrivals")
      ->capture_default_str();
  sub->add_flag("--no-progress", f->no_progress, "no progress line on stderr");
  return {sub, [f] { return RunBench(*f); }};
}

}  // namespace shoal::cli
