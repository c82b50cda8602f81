#include "gateway/canary_monitor.h"

#include "common/str_printf.h"

namespace shoal::gateway {
namespace {

double ErrorRate(const CanaryMonitor::Side& s) {
  return s.requests ? static_cast<double>(s.errors) / static_cast<double>(s.requests) : 0;
}

}  // namespace

void CanaryMonitor::Record(const std::string& model, const CanarySpec& canary, bool on_canary,
                           int status, SteadyClock::duration latency) {
  std::string why;
  {
    std::lock_guard lock(mu_);
    View& v = views_[model];
    if (v.version != canary.version)
      v = View{.version = canary.version, .serving = {}, .canary = {}};
    Side& side = on_canary ? v.canary : v.serving;
    ++side.requests;
    side.errors += status >= 500;
    side.seconds += std::chrono::duration<double>(latency).count();
    const double rate = ErrorRate(v.canary);
    if (!on_canary || v.canary.requests < canary.min_requests || rate <= canary.max_error_rate ||
        rate <= ErrorRate(v.serving) || !tripped_.insert({model, canary.version}).second) {
      return;
    }
    why = StrPrintf("error rate %.3f over %llu requests, above %.3f (the serving version's: %.3f)",
                    rate, static_cast<unsigned long long>(v.canary.requests), canary.max_error_rate,
                    ErrorRate(v.serving));
  }
  on_trip_(model, canary.version, why);
}

CanaryMonitor::View CanaryMonitor::Stats(const std::string& model) const {
  std::lock_guard lock(mu_);
  auto it = views_.find(model);
  return it == views_.end() ? View{} : it->second;
}

std::string CanaryMonitor::Text() const {
  std::lock_guard lock(mu_);
  if (views_.empty()) return {};
  std::string out =
      "# HELP shoal_canary_requests_total Requests for a model with a canary, by the side that "
      "answered.\n"
      "# TYPE shoal_canary_requests_total counter\n";
  std::string errors =
      "# HELP shoal_canary_errors_total Those answered with a 5xx.\n"
      "# TYPE shoal_canary_errors_total counter\n";
  for (const auto& [model, v] : views_) {
    for (const auto& [side, s] :
         {std::pair{"serving", &v.serving}, std::pair{"canary", &v.canary}}) {
      const std::string labels =
          StrPrintf("{model=\"%s\",version=\"%u\",side=\"%s\"}", model.c_str(), v.version, side);
      out += "shoal_canary_requests_total" + labels + " " + std::to_string(s->requests) + "\n";
      errors += "shoal_canary_errors_total" + labels + " " + std::to_string(s->errors) + "\n";
    }
  }
  return out + errors;
}

}  // namespace shoal::gateway
