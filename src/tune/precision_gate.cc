#include "tune/precision_gate.h"

#include <nlohmann/json.hpp>

#include "admin/catalog_admin.h"
#include "admin/golden_agreement.h"
#include "admin/variant_gate.h"
#include "catalog/precision_option.h"
#include "common/str_printf.h"

namespace shoal::tune {

std::string PrecisionCheck::Summary() const {
  const auto j = nlohmann::json::parse(gate_json, nullptr, false);
  std::string s = precision + ": " + (passed ? "within the bound" : "outside the bound");
  if (!j.is_object()) return s;
  const auto& g = j["golden"];
  std::string figures;
  if (g.contains("mean_cosine")) {
    figures = StrPrintf("cosine mean %.6f, min %.6f, ", g["mean_cosine"].get<double>(),
                        g["min_cosine"].get<double>());
  }
  figures += StrPrintf("agreement %.0f %%", 100 * g.value("agreement", 0.0));
  for (const auto& f : j["failures"]) figures += "; " + f.get<std::string>();
  return s + " (" + figures + ")";
}

Result<std::vector<PrecisionCheck>> CheckPrecisions(
    const ModelSpec& base, const std::vector<std::string>& precisions,
    const std::function<void(const std::string&)>& progress) {
  std::vector<PrecisionCheck> checks;
  if (precisions.size() < 2) return checks;
  auto at = [&](const std::string& precision) {
    ModelSpec s = base;
    s.runtime_options_json = WithPrecision(base.runtime_options_json, precision);
    return s;
  };
  progress("tune: checking precisions against f32 on the probe set (loading the model once each)");
  SHOAL_ASSIGN_OR_RETURN(admin::ModelCheck full, admin::CheckModel(at("f32")));
  for (const std::string& precision : precisions) {
    if (precision == "f32") continue;
    SHOAL_ASSIGN_OR_RETURN(admin::ModelCheck variant, admin::CheckModel(at(precision)));
    SHOAL_ASSIGN_OR_RETURN(
        admin::GoldenAgreement golden,
        admin::CompareGolden(variant.probes.golden_json, full.probes.golden_json));
    const std::string task(TaskName(base.task));
    const admin::VariantGate gate = admin::JudgeVariant(precision, 0, task, golden, {}, {});
    checks.push_back({precision, gate.passed, gate.ToJson(task)});
    progress("tune: " + checks.back().Summary());
  }
  return checks;
}

}  // namespace shoal::tune
