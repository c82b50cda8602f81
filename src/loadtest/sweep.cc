// RunSweep: the levels one after another, each a RunLoad with its own
// warm-up, and the knee after each (sweep.h).
#include "loadtest/sweep.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace shoal::loadtest {
namespace {

double Secs(std::chrono::milliseconds d) { return std::chrono::duration<double>(d).count(); }

Status Validate(const Target& target, const SweepOptions& o) {
  if (target.host.empty()) return InvalidInput("no host to send the load to");
  if (target.port <= 0 || target.port > 65535)
    return InvalidInput("port " + std::to_string(target.port) + ": out of range");
  if (target.mix.empty()) return InvalidInput("the request mix is empty");
  for (const MixEntry& e : target.mix) {
    if (e.path.empty() || e.path[0] != '/')
      return InvalidInput("request path '" + e.path + "': must start with /");
    if (!(e.weight > 0) || !std::isfinite(e.weight))
      return InvalidInput("request weight must be a positive number");
  }
  if (o.duration.count() <= 0) return InvalidInput("the duration of a level must be positive");
  if (o.warmup.count() < 0 || o.drain.count() < 0)
    return InvalidInput("warm-up and drain cannot be negative");
  if (o.loop == LoopKind::kOpen && o.max_connections < 1)
    return InvalidInput("max_connections must be at least 1");
  for (size_t i = 0; i < o.levels.size(); ++i) {
    if (!(o.levels[i] > 0) || !std::isfinite(o.levels[i]))
      return InvalidInput("levels must be positive numbers");
    if (i > 0 && !(o.levels[i] > o.levels[i - 1])) return InvalidInput("levels must increase");
  }
  if (o.levels.empty()) {
    if (!(o.start > 0) || !std::isfinite(o.start))
      return InvalidInput("start must be a positive number");
    if (!(o.factor > 1) || !std::isfinite(o.factor)) return InvalidInput("factor must be above 1");
    if (!(o.max_level >= o.start)) return InvalidInput("the maximum level is below the start");
  }
  return Status::Ok();
}

// The reachability check: one request per distinct path.
Status Probe(const Target& target) {
  std::set<std::string> paths;
  for (const MixEntry& e : target.mix) {
    if (paths.size() == 8 || !paths.insert(e.path).second) continue;
    // Long enough for a model to load on first use.
    auto answer = SendOnce(target.host, target.port, e, target.headers, std::chrono::seconds(60));
    const std::string where = target.host + ":" + std::to_string(target.port);
    if (!answer.ok())
      return Status(answer.status().code(), where + ": " + answer.status().message());
    const int s = answer->status;
    if (s >= 400 && s < 500 && s != 408 && s != 429) {
      std::string body = answer->body.substr(0, 300);
      std::replace(body.begin(), body.end(), '\n', ' ');
      return InvalidInput("POST " + e.path + " on " + where + " answered " + std::to_string(s) +
                          ": " + body);
    }
  }
  return Status::Ok();
}

LevelResult Summarize(double offered, const LoadResult& r, std::chrono::milliseconds duration) {
  LevelResult l;
  const double seconds = Secs(duration);
  l.offered = offered;
  l.throughput_rps = static_cast<double>(r.ok_in_window) / seconds;
  l.tokens_per_s = static_cast<double>(r.input_tokens) / seconds;
  l.output_tokens_per_s = static_cast<double>(r.output_tokens) / seconds;
  l.tokens_estimated = r.tokens_estimated > 0;
  if (!r.latencies_ms.empty()) {
    l.p50_ms = r.Percentile(50);
    l.p95_ms = r.Percentile(95);
    l.p99_ms = r.Percentile(99);
  }
  l.ok = r.ok;
  l.errors = r.errors;
  l.status_counts = r.status_counts;
  return l;
}

}  // namespace

Result<SweepReport> RunSweep(const Target& target, const SweepOptions& o) {
  SHOAL_RETURN_IF_ERROR(Validate(target, o));
  SHOAL_RETURN_IF_ERROR(Probe(target));
  const bool closed = o.loop == LoopKind::kClosed;
  SweepReport report;
  report.loop = o.loop;
  const size_t count = o.levels.size();
  for (size_t i = 0;; ++i) {
    double level;
    if (count) {
      if (i == count) break;
      level = o.levels[i];
      if (closed) level = std::max(1.0, std::round(level));
      if (i > 0 && level <= report.levels.back().offered) continue;  // rounded onto the last one
    } else {
      level = i == 0 ? o.start : report.levels.back().offered * o.factor;
      if (closed)
        level = std::max(i == 0 ? 1.0 : report.levels.back().offered + 1, std::round(level));
      if (level > o.max_level * (1 + 1e-9)) break;
    }
    LoadSpec spec;
    spec.host = target.host;
    spec.port = target.port;
    spec.mix = target.mix;
    spec.headers = target.headers;
    spec.seed = o.seed + 1000003 * i;
    spec.warmup = o.warmup;
    spec.duration = o.duration;
    spec.drain = o.drain.count() > 0 ? o.drain : std::chrono::milliseconds(1);
    spec.reconnect = true;
    spec.count_tokens = true;
    if (closed) {
      spec.connections = static_cast<int>(level);
    } else {
      spec.rate = level;
      spec.arrivals = Arrivals::kPoisson;
      spec.connections = o.max_connections;
    }
    SweepProgress progress;
    progress.level_index = i;
    progress.level_count = count;
    progress.offered = level;
    progress.level_duration_s = Secs(o.warmup + o.duration);
    if (o.progress) {
      spec.progress = [&](const LoadProgress& p) {
        progress.level_elapsed_s = p.elapsed_s;
        progress.ok = p.ok;
        progress.errors = p.errors;
        o.progress(progress);
      };
    }
    const LoadResult r = RunLoad(spec);
    report.levels.push_back(Summarize(level, r, o.duration));
    report.tokens_estimated = report.tokens_estimated || report.levels.back().tokens_estimated;
    if (o.progress) {
      progress.level_elapsed_s = progress.level_duration_s;
      progress.ok = r.ok;
      progress.errors = r.errors;
      progress.finished = &report.levels.back();
      o.progress(progress);
    }
    if (!count) {
      const Knee knee = FindKnee(report.levels, o.knee);
      const size_t last = report.levels.size() - 1;
      if (knee.found &&
          (last >= knee.index + 2 || !OutsideCriteria(report.levels, last, o.knee).empty()))
        break;
    }
  }
  report.knee = FindKnee(report.levels, o.knee);
  return report;
}

}  // namespace shoal::loadtest
