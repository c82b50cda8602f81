#include "admin/variant_gate.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace shoal::admin {
namespace {

using nlohmann::json;

std::string Fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

void AtLeast(double got, double bound, const std::string& what, int digits,
             std::vector<std::string>* failures) {
  if (!(got >= bound))
    failures->push_back(what + " " + Fixed(got, digits) + " < " + Fixed(bound, digits));
}

const EvalReport* Find(const std::vector<EvalReport>& reports, const std::string& name) {
  for (const EvalReport& r : reports) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

}  // namespace

VariantGate JudgeVariant(std::string precision, uint32_t of, std::string_view task,
                         const GoldenAgreement& golden, const std::vector<EvalReport>& original,
                         const std::vector<EvalReport>& variant, const VariantBounds& bounds) {
  VariantGate g{.precision = std::move(precision),
                .of = of,
                .passed = false,
                .bounds = bounds,
                .golden = golden,
                .evaluations = {},
                .failures = {}};
  if (task == "encode") {
    AtLeast(golden.mean_cosine, bounds.min_mean_cosine, "mean cosine", 6, &g.failures);
    AtLeast(golden.min_cosine, bounds.min_cosine, "min cosine", 6, &g.failures);
  }
  AtLeast(golden.agreement, bounds.min_agreement, "probe agreement", 3, &g.failures);
  for (const EvalReport& o : original) {
    const EvalReport* v = Find(variant, o.name);
    if (!v || o.metrics.empty() || v->metrics.empty()) {
      g.failures.push_back("evaluation " + o.name + " did not run on both");
      continue;
    }
    // The measures the set gates on; all of them where it names none.
    std::vector<std::string> measures;
    for (const auto& [m, _] : o.thresholds.empty() ? o.metrics : o.thresholds)
      measures.push_back(m);
    for (const std::string& m : measures) {
      const auto a = o.metrics.find(m), b = v->metrics.find(m);
      if (a == o.metrics.end() || b == v->metrics.end()) continue;
      g.evaluations.push_back({o.name, m, a->second, b->second});
      AtLeast(b->second, a->second * (1 - bounds.max_eval_drop), o.name + " " + m, 4, &g.failures);
    }
  }
  g.passed = g.failures.empty();
  return g;
}

Result<VariantBounds> VariantBounds::Tightened(std::string_view text) {
  const json o = json::parse(text, nullptr, false);
  if (!o.is_object()) return InvalidInput("bounds: expected an object");
  VariantBounds b;
  for (auto it = o.begin(); it != o.end(); ++it) {
    if (!it->is_number()) return InvalidInput("bounds." + it.key() + ": expected a number");
    const double v = it->get<double>();
    double* field = it.key() == "min_mean_cosine" ? &b.min_mean_cosine
                    : it.key() == "min_cosine"    ? &b.min_cosine
                    : it.key() == "min_agreement" ? &b.min_agreement
                    : it.key() == "max_eval_drop" ? &b.max_eval_drop
                                                  : nullptr;
    if (!field) {
      return InvalidInput("bounds: unknown field '" + it.key() +
                          "' (min_mean_cosine, min_cosine, min_agreement, max_eval_drop)");
    }
    const bool is_drop = field == &b.max_eval_drop;
    if (is_drop ? (v < 0 || v > *field) : (v < *field || v > 1)) {
      return InvalidInput("bounds." + it.key() + ": " + Fixed(v, 4) +
                          " would loosen the bound of " + Fixed(*field, 4) +
                          " (it may only be tightened)");
    }
    *field = v;
  }
  return b;
}

std::string VariantGate::ToJson(std::string_view task) const {
  const VariantBounds& b = bounds;
  json evals = json::array();
  for (const EvalDelta& d : evaluations) {
    evals.push_back({{"evaluation", d.evaluation},
                     {"measure", d.measure},
                     {"original", d.original},
                     {"variant", d.variant}});
  }
  json j = {{"precision", precision},
            {"of", of},
            {"passed", passed},
            {"bounds",
             {{"min_mean_cosine", b.min_mean_cosine},
              {"min_cosine", b.min_cosine},
              {"min_agreement", b.min_agreement},
              {"max_eval_drop", b.max_eval_drop}}},
            {"golden", json::parse(golden.ToJson(task))},
            {"evaluations", evals},
            {"failures", failures}};
  return j.dump();
}

Result<VariantGate> VariantGate::Parse(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return InvalidInput("variant gate: not a JSON object");
  VariantGate g;
  g.precision = j.value("precision", "");
  g.of = j.value("of", 0u);
  g.passed = j.value("passed", false);
  if (auto f = j.find("failures"); f != j.end() && f->is_array()) {
    for (const json& s : *f) {
      if (s.is_string()) g.failures.push_back(s.get<std::string>());
    }
  }
  return g;
}

}  // namespace shoal::admin
