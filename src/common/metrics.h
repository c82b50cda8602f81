// Metrics: counters, gauges and histograms in labelled families, rendered in
// the Prometheus text exposition format (version 0.0.4) for /metrics.
//
// A family's name, help and label names are fixed when it is registered;
// each distinct tuple of label values is one series. Cardinality is bounded
// per family: past `max_series`, new label values are folded into one series
// whose every label is "other", so a client sending a million model names
// costs a million increments, not a million series.
//
// Threading: everything is thread-safe. Updating a series is lock-free (an
// atomic); With() takes the family's mutex, so hot paths look a series up
// once and keep the reference (series live as long as the registry).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace shoal {

class Counter {
 public:
  void Inc(double v = 1) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, ascending (+Inf is implied).
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);

  const std::vector<double>& bounds() const { return bounds_; }
  // Observations at or below each bound, cumulative as Prometheus wants,
  // then the count of all (the +Inf bucket).
  std::vector<uint64_t> CumulativeCounts() const;
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, +Inf last
  std::atomic<double> sum_{0};
};

// Bucket bounds growing by `factor` from `start`: {start, start*f, ...}.
std::vector<double> ExponentialBuckets(double start, double factor, int count);

template <class Metric>
class Family {
 public:
  // The series for these label values (as many as the family has names).
  Metric& With(const std::vector<std::string>& values);

 private:
  friend class MetricsRegistry;
  Family(std::string name, std::string help, std::vector<std::string> labels, size_t max_series,
         std::vector<double> bounds)
      : name_(std::move(name)),
        help_(std::move(help)),
        labels_(std::move(labels)),
        max_series_(max_series),
        bounds_(std::move(bounds)) {}
  std::unique_ptr<Metric> Make() const;

  const std::string name_, help_;
  const std::vector<std::string> labels_;
  const size_t max_series_;
  const std::vector<double> bounds_;  // histograms only
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<Metric>> series_;  // guarded by mu_
};

// A Prometheus label value as the text format writes it: backslash, double
// quote and newline escaped (for pages rendered outside a registry).
void AppendEscapedLabelValue(std::string_view v, std::string* out);

class MetricsRegistry {
 public:
  // Names must be valid Prometheus metric names; a name registered twice
  // returns the first family (its help and labels win).
  Family<Counter>& AddCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> labels = {}, size_t max_series = 1000);
  Family<Gauge>& AddGauge(const std::string& name, const std::string& help, std::vector<std::string> labels = {},
                          size_t max_series = 1000);
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help, std::vector<double> bounds,
                                  std::vector<std::string> labels = {}, size_t max_series = 1000);

  // Every family, in the order registered: the body of GET /metrics
  // (Content-Type: text/plain; version=0.0.4).
  std::string Render() const;

 private:
  // The family `name` of `families`, registered as `kind` if new.
  template <class Metric>
  Family<Metric>& Add(std::vector<std::unique_ptr<Family<Metric>>>& families, char kind, const std::string& name,
                      const std::string& help, std::vector<std::string> labels, size_t max_series,
                      std::vector<double> bounds);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family<Counter>>> counters_;      // guarded by mu_
  std::vector<std::unique_ptr<Family<Gauge>>> gauges_;          // guarded by mu_
  std::vector<std::unique_ptr<Family<Histogram>>> histograms_;  // guarded by mu_
  std::vector<std::pair<char, size_t>> order_;  // (kind, index) as registered; guarded by mu_
};

}  // namespace shoal
