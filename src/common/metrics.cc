#include "common/metrics.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>

namespace shoal {

void AppendEscapedLabelValue(std::string_view v, std::string* out) {
  for (const char c : v) {
    if (c == '\\') out->append("\\\\");
    else if (c == '"') out->append("\\\"");
    else if (c == '\n') out->append("\\n");
    else out->push_back(c);
  }
}

namespace {

void AppendNumber(double v, std::string* out) {
  if (std::isinf(v)) {
    out->append(v > 0 ? "+Inf" : "-Inf");
    return;
  }
  // The shortest text that reads back as the same double ("0.1", not
  // "0.10000000000000001").
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

// name{a="x",b="y"[,extra]} value\n
void AppendSample(const std::string& name, const std::vector<std::string>& labels,
                  const std::vector<std::string>& values, const std::string& extra, double value, std::string* out) {
  out->append(name);
  if (!labels.empty() || !extra.empty()) {
    out->push_back('{');
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) out->push_back(',');
      out->append(labels[i]).append("=\"");
      AppendEscapedLabelValue(values[i], out);
      out->push_back('"');
    }
    if (!extra.empty()) out->append(labels.empty() ? "" : ",").append(extra);
    out->push_back('}');
  }
  out->push_back(' ');
  AppendNumber(value, out);
  out->push_back('\n');
}

void AppendHeader(const std::string& name, const std::string& help, const char* type, std::string* out) {
  out->append("# HELP ").append(name).append(" ").append(help).append("\n");
  out->append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::CumulativeCounts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) out[i] = running += counts_[i].load(std::memory_order_relaxed);
  return out;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  for (double b = start; count-- > 0; b *= factor) out.push_back(b);
  return out;
}

template <class Metric>
std::unique_ptr<Metric> Family<Metric>::Make() const {
  if constexpr (std::is_same_v<Metric, Histogram>) {
    return std::make_unique<Histogram>(bounds_);
  } else {
    return std::make_unique<Metric>();
  }
}

template <class Metric>
Metric& Family<Metric>::With(const std::vector<std::string>& values) {
  assert(values.size() == labels_.size());
  std::lock_guard lock(mu_);
  if (auto it = series_.find(values); it != series_.end()) return *it->second;
  // One value per label name, whatever the caller passed (render relies on it).
  std::vector<std::string> key = values;
  key.resize(labels_.size());
  // Past the bound, new label values share one series (one slot is kept
  // for it, so the bound holds).
  if (series_.size() + 1 >= max_series_) key.assign(labels_.size(), "other");
  auto& slot = series_[key];
  if (!slot) slot = Make();
  return *slot;
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

template <class Metric>
Family<Metric>& MetricsRegistry::Add(std::vector<std::unique_ptr<Family<Metric>>>& families, char kind,
                                     const std::string& name, const std::string& help,
                                     std::vector<std::string> labels, size_t max_series, std::vector<double> bounds) {
  std::lock_guard lock(mu_);
  for (auto& f : families) {
    if (f->name_ == name) return *f;
  }
  families.push_back(std::unique_ptr<Family<Metric>>(
      new Family<Metric>(name, help, std::move(labels), max_series, std::move(bounds))));
  order_.emplace_back(kind, families.size() - 1);
  return *families.back();
}

Family<Counter>& MetricsRegistry::AddCounter(const std::string& name, const std::string& help,
                                             std::vector<std::string> labels, size_t max_series) {
  return Add(counters_, 'c', name, help, std::move(labels), max_series, {});
}

Family<Gauge>& MetricsRegistry::AddGauge(const std::string& name, const std::string& help,
                                         std::vector<std::string> labels, size_t max_series) {
  return Add(gauges_, 'g', name, help, std::move(labels), max_series, {});
}

Family<Histogram>& MetricsRegistry::AddHistogram(const std::string& name, const std::string& help,
                                                 std::vector<double> bounds, std::vector<std::string> labels,
                                                 size_t max_series) {
  std::sort(bounds.begin(), bounds.end());
  return Add(histograms_, 'h', name, help, std::move(labels), max_series, std::move(bounds));
}

std::string MetricsRegistry::Render() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [kind, index] : order_) {
    if (kind == 'c' || kind == 'g') {
      const auto render = [&](const auto& f, const char* type) {
        AppendHeader(f.name_, f.help_, type, &out);
        std::lock_guard series_lock(f.mu_);
        for (const auto& [values, m] : f.series_) AppendSample(f.name_, f.labels_, values, "", m->value(), &out);
      };
      if (kind == 'c') render(*counters_[index], "counter");
      else render(*gauges_[index], "gauge");
      continue;
    }
    const Family<Histogram>& f = *histograms_[index];
    AppendHeader(f.name_, f.help_, "histogram", &out);
    std::lock_guard series_lock(f.mu_);
    for (const auto& [values, h] : f.series_) {
      const std::vector<uint64_t> counts = h->CumulativeCounts();
      for (size_t i = 0; i <= f.bounds_.size(); ++i) {
        std::string le = "le=\"";
        AppendNumber(i < f.bounds_.size() ? f.bounds_[i] : INFINITY, &le);
        le.push_back('"');
        AppendSample(f.name_ + "_bucket", f.labels_, values, le, static_cast<double>(counts[i]), &out);
      }
      AppendSample(f.name_ + "_sum", f.labels_, values, "", h->sum(), &out);
      AppendSample(f.name_ + "_count", f.labels_, values, "", static_cast<double>(counts.back()), &out);
    }
  }
  return out;
}

}  // namespace shoal
