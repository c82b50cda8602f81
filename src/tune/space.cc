#include "tune/space.h"

#include <algorithm>
#include <filesystem>

#include "catalog/precision_option.h"

namespace shoal::tune {
namespace {

Dimension Grid(const std::string& name, std::vector<double> values, double baseline) {
  if (std::find(values.begin(), values.end(), baseline) == values.end()) values.push_back(baseline);
  std::sort(values.begin(), values.end());
  return Dimension{name, std::move(values), true};
}

std::vector<double> Powers(double lo, double hi) {
  std::vector<double> v;
  for (double x = lo; x <= hi; x *= 2) v.push_back(x);
  return v;
}

}  // namespace

std::string Params::Describe() const {
  std::string s = "requests " + std::to_string(max_batch_requests) + ", tokens " +
                  std::to_string(max_batch_tokens) + ", wait " + std::to_string(max_batch_wait_ms) +
                  " ms, threads " + std::to_string(threads);
  if (!precision.empty()) s += ", " + precision;
  return s;
}

std::vector<std::string> TunablePrecisions(const ModelSpec& spec) {
  if (spec.runtime != "native" || spec.path.empty()) return {};
  std::error_code ec;
  // USE-Lite (model.json + vocab.json) runs in f32 only.
  if (!std::filesystem::exists(std::filesystem::path(spec.path) / "config.json", ec)) return {};
  return {"f32", "bf16", "int8"};
}

Params ParamsOf(const ModelSpec& spec, int cores) {
  Params p;
  p.max_batch_tokens = spec.batching.max_batch_tokens;
  p.max_batch_requests = spec.batching.max_batch_requests;
  p.max_batch_wait_ms = spec.batching.max_batch_wait_ms;
  p.threads = spec.threads > 0 ? spec.threads : static_cast<uint32_t>(std::max(1, cores));
  if (!TunablePrecisions(spec).empty()) p.precision = PrecisionOf(spec.runtime_options_json);
  return p;
}

ModelSpec WithParams(const ModelSpec& base, const Params& p) {
  ModelSpec s = base.WithoutTuned();
  s.batching.max_batch_tokens = p.max_batch_tokens;
  s.batching.max_batch_requests = p.max_batch_requests;
  s.batching.max_batch_wait_ms = p.max_batch_wait_ms;
  s.threads = p.threads;
  if (!p.precision.empty()) s.runtime_options_json = WithPrecision(s.runtime_options_json, p.precision);
  return s;
}

Params Space::At(const Point& point) const {
  Params p;
  for (size_t d = 0; d < dims.size(); ++d) {
    const double v = dims[d].values[point[d]];
    const std::string& name = dims[d].name;
    if (name == "precision")
      p.precision = precisions.empty() ? "" : precisions[static_cast<size_t>(v)];
    if (name == "threads") p.threads = static_cast<uint32_t>(v);
    if (name == "max_batch_requests") p.max_batch_requests = static_cast<uint32_t>(v);
    if (name == "max_batch_tokens") p.max_batch_tokens = static_cast<uint32_t>(v);
    if (name == "max_batch_wait_ms") p.max_batch_wait_ms = static_cast<uint32_t>(v);
  }
  return p;
}

Result<Space> BuildSpace(const ModelSpec& base_spec, int cores,
                         const std::vector<std::string>& only,
                         const std::vector<std::string>& refused) {
  const ModelSpec base = base_spec.WithoutTuned();
  const Params b = ParamsOf(base, cores);
  for (const auto& name : only) {
    if (std::none_of(std::begin(kDimensionNames), std::end(kDimensionNames),
                     [&](const char* n) { return name == n; })) {
      return InvalidInput("parameter '" + name +
                          "': expected precision, threads, max_batch_requests, max_batch_tokens or "
                          "max_batch_wait_ms");
    }
  }
  const auto wanted = [&](const char* name) {
    return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
  };
  Space space;
  // Every dimension is present (so Space::At fills every field); one not
  // swept has only the baseline's value.
  space.precisions = TunablePrecisions(base);
  if (space.precisions.empty()) {
    if (!only.empty() && wanted("precision")) {
      return InvalidInput("precision: " + base.id +
                          " has none to tune (native Hugging Face models only)");
    }
    space.dims.push_back({"precision", {0}, false});
  } else {
    const auto at = std::find(space.precisions.begin(), space.precisions.end(), b.precision);
    if (at == space.precisions.end())
      return InvalidInput("precision '" + b.precision + "' is not one of f32, bf16, int8");
    const double index = static_cast<double>(at - space.precisions.begin());
    Dimension d{"precision", {}, false};
    if (wanted("precision")) {
      for (size_t i = 0; i < space.precisions.size(); ++i) {
        const bool is_refused =
            std::find(refused.begin(), refused.end(), space.precisions[i]) != refused.end();
        if (!is_refused || space.precisions[i] == b.precision) d.values.push_back(static_cast<double>(i));
      }
    } else {
      d.values = {index};
    }
    space.dims.push_back(d);
  }

  std::vector<double> threads;
  for (int t = 1; t <= cores; t *= 2) threads.push_back(t);
  if (threads.back() != cores) threads.push_back(cores);
  space.dims.push_back(wanted("threads") ? Grid("threads", threads, b.threads)
                                         : Grid("threads", {}, b.threads));
  space.dims.push_back(wanted("max_batch_requests")
                           ? Grid("max_batch_requests", Powers(1, 512), b.max_batch_requests)
                           : Grid("max_batch_requests", {}, b.max_batch_requests));
  double lo = 512;
  while (lo < base.max_input_tokens) lo *= 2;
  space.dims.push_back(
      wanted("max_batch_tokens")
          ? Grid("max_batch_tokens", Powers(lo, std::max(lo, 65536.0)), b.max_batch_tokens)
          : Grid("max_batch_tokens", {}, b.max_batch_tokens));
  if (base.batching.adaptive.enabled && !only.empty() && wanted("max_batch_wait_ms")) {
    return InvalidInput("max_batch_wait_ms: " + base.id +
                        " has adaptive batching, which sets the wait itself");
  }
  const bool wait = wanted("max_batch_wait_ms") && !base.batching.adaptive.enabled;
  space.dims.push_back(wait ? Grid("max_batch_wait_ms", {0, 1, 2, 5, 10, 20}, b.max_batch_wait_ms)
                            : Grid("max_batch_wait_ms", {}, b.max_batch_wait_ms));

  // The start is the baseline: each dimension's value for it is on its grid.
  const auto baseline = [&](const std::string& name) -> double {
    if (name == "precision") {
      const auto at = std::find(space.precisions.begin(), space.precisions.end(), b.precision);
      return at == space.precisions.end() ? 0 : static_cast<double>(at - space.precisions.begin());
    }
    if (name == "threads") return b.threads;
    if (name == "max_batch_requests") return b.max_batch_requests;
    if (name == "max_batch_tokens") return b.max_batch_tokens;
    return b.max_batch_wait_ms;
  };
  for (const Dimension& d : space.dims) space.start.push_back(NearestIndex(d, baseline(d.name)));
  return space;
}

}  // namespace shoal::tune
