#include "gateway/canary_monitor.h"

#include <nlohmann/json.hpp>

#include "common/str_printf.h"

namespace shoal::gateway {
namespace {

double ErrorRate(const CanaryMonitor::Side& s) {
  return s.requests ? static_cast<double>(s.errors) / static_cast<double>(s.requests) : 0;
}

nlohmann::json SideJson(const CanaryMonitor::Side& s) {
  return {{"requests", s.requests},
          {"errors", s.errors},
          {"mean_ms", s.requests ? 1000 * s.seconds / static_cast<double>(s.requests) : 0.0}};
}

}  // namespace

std::string CanaryMonitor::View::ToJson() const {
  using nlohmann::json;
  const bool cosines = answers.vectors > 0, judged = answers.judged > 0;
  return json{{"version", version},
              {"serving", SideJson(serving)},
              {"canary", SideJson(canary)},
              {"compared",
               {{"requests", compared},
                {"mean_cosine", cosines ? json(answers.mean_cosine()) : json(nullptr)},
                {"min_cosine", cosines ? json(answers.min_cosine) : json(nullptr)},
                {"agreement", judged ? json(answers.agreement()) : json(nullptr)}}}}
      .dump();
}

CanaryMonitor::View& CanaryMonitor::ViewOf(const std::string& model, const CanarySpec& canary) {
  View& v = views_[model];
  if (v.version != canary.version) v = View{.version = canary.version};
  return v;
}

std::string CanaryMonitor::Verdict(const std::string& model, const View& v,
                                   const CanarySpec& canary) {
  std::string why;
  const double rate = ErrorRate(v.canary);
  const AnswerComparison& a = v.answers;
  if (v.canary.requests >= canary.min_requests && rate > canary.max_error_rate &&
      rate > ErrorRate(v.serving)) {
    why = StrPrintf("error rate %.3f over %llu requests, above %.3f (the serving version's: %.3f)",
                    rate, static_cast<unsigned long long>(v.canary.requests), canary.max_error_rate,
                    ErrorRate(v.serving));
  } else if (v.compared >= canary.min_requests && a.vectors > 0 &&
             a.mean_cosine() < canary.min_cosine) {
    why = StrPrintf("mean cosine %.4f to the serving version over %llu compared requests, below %.4f",
                    a.mean_cosine(), static_cast<unsigned long long>(v.compared), canary.min_cosine);
  } else if (v.compared >= canary.min_requests && a.judged > 0 &&
             a.agreement() < canary.min_agreement) {
    why = StrPrintf("agreement %.4f with the serving version over %llu compared requests, below %.4f",
                    a.agreement(), static_cast<unsigned long long>(v.compared),
                    canary.min_agreement);
  }
  if (why.empty() || !tripped_.insert({model, canary.version}).second) return {};
  return why;
}

void CanaryMonitor::Record(const std::string& model, const CanarySpec& canary, bool on_canary,
                           int status, SteadyClock::duration latency) {
  std::string why;
  {
    std::lock_guard lock(mu_);
    View& v = ViewOf(model, canary);
    Side& side = on_canary ? v.canary : v.serving;
    ++side.requests;
    side.errors += status >= 500;
    side.seconds += std::chrono::duration<double>(latency).count();
    why = Verdict(model, v, canary);
  }
  if (!why.empty()) on_trip_(model, canary.version, why);
}

void CanaryMonitor::RecordComparison(const std::string& model, const CanarySpec& canary,
                                     const AnswerComparison& compared) {
  std::string why;
  {
    std::lock_guard lock(mu_);
    View& v = ViewOf(model, canary);
    ++v.compared;
    v.answers.Add(compared);
    why = Verdict(model, v, canary);
  }
  if (!why.empty()) on_trip_(model, canary.version, why);
}

CanaryMonitor::View CanaryMonitor::Stats(const std::string& model) const {
  std::lock_guard lock(mu_);
  auto it = views_.find(model);
  return it == views_.end() ? View{} : it->second;
}

std::string CanaryMonitor::Text() const {
  std::lock_guard lock(mu_);
  if (views_.empty()) return {};
  std::string requests =
      "# HELP shoal_canary_requests_total Requests for a model with a canary, by the side that "
      "answered.\n"
      "# TYPE shoal_canary_requests_total counter\n";
  std::string errors =
      "# HELP shoal_canary_errors_total Those answered with a 5xx.\n"
      "# TYPE shoal_canary_errors_total counter\n";
  std::string seconds =
      "# HELP shoal_canary_seconds_total Their latencies, summed.\n"
      "# TYPE shoal_canary_seconds_total counter\n";
  std::string compared =
      "# HELP shoal_canary_compared_total Shadowed requests whose two answers were compared.\n"
      "# TYPE shoal_canary_compared_total counter\n";
  std::string cosine =
      "# HELP shoal_canary_mean_cosine Mean embedding cosine of the shadow's answers to the "
      "serving version's.\n"
      "# TYPE shoal_canary_mean_cosine gauge\n";
  std::string agreement =
      "# HELP shoal_canary_agreement Ranking and label agreement of the shadow's answers with "
      "the serving version's.\n"
      "# TYPE shoal_canary_agreement gauge\n";
  for (const auto& [model, v] : views_) {
    for (const auto& [side, s] :
         {std::pair{"serving", &v.serving}, std::pair{"canary", &v.canary}}) {
      const std::string labels =
          StrPrintf("{model=\"%s\",version=\"%u\",side=\"%s\"}", model.c_str(), v.version, side);
      requests += "shoal_canary_requests_total" + labels + " " + std::to_string(s->requests) + "\n";
      errors += "shoal_canary_errors_total" + labels + " " + std::to_string(s->errors) + "\n";
      seconds += StrPrintf("shoal_canary_seconds_total%s %.6f\n", labels.c_str(), s->seconds);
    }
    if (v.compared == 0) continue;
    const std::string labels = StrPrintf("{model=\"%s\",version=\"%u\"}", model.c_str(), v.version);
    compared += "shoal_canary_compared_total" + labels + " " + std::to_string(v.compared) + "\n";
    if (v.answers.vectors) {
      cosine += StrPrintf("shoal_canary_mean_cosine%s %.6f\n", labels.c_str(), v.answers.mean_cosine());
    }
    if (v.answers.judged) {
      agreement += StrPrintf("shoal_canary_agreement%s %.6f\n", labels.c_str(), v.answers.agreement());
    }
  }
  return requests + errors + seconds + compared + cosine + agreement;
}

}  // namespace shoal::gateway
