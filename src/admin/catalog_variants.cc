// CatalogAdmin's quantized variants (catalog_admin.h, variant_gate.h).
#include "admin/catalog_admin.h"
#include "admin/golden_agreement.h"
#include "common/log.h"

namespace shoal::admin {
namespace {

// `original` at `precision`: the same files and profile, without the
// `tuned:` entries (measured at the original's precision, and one naming a
// precision would override the variant's on a worker of that class).
ModelSpec VariantSpec(const ModelSpec& original, const std::string& precision) {
  ModelSpec spec = original;
  if (!spec.tuned.applied_class.empty()) {
    spec.batching = spec.tuned.base_batching;
    spec.runtime_options_json = spec.tuned.base_runtime_options_json;
    spec.threads = spec.tuned.base_threads;
  }
  spec.tuned = {};
  spec.runtime_options_json = WithPrecision(spec.runtime_options_json, precision);
  spec.version = 0;
  spec.memory_bytes = 0;
  spec.canary = {};
  return spec;
}

}  // namespace

Status CatalogAdmin::Admitted(const VersionView& v) {
  if (v.version.record.variant_json.empty()) return Status::Ok();
  auto gate = VariantGate::Parse(v.version.record.variant_json);
  if (!gate.ok()) return gate.status();
  if (gate->passed) return Status::Ok();
  std::string why;
  for (const std::string& f : gate->failures) why += (why.empty() ? "" : "; ") + f;
  return InvalidInput("version " + std::to_string(v.version.version) + " of '" + v.version.spec.id +
                      "' is a " + gate->precision + " variant of version " +
                      std::to_string(gate->of) + " outside its bound (" + why +
                      "); it cannot serve");
}

Result<VersionView> CatalogAdmin::Quantize(std::string_view id, uint32_t of,
                                           const std::string& precision,
                                           const RegisterOptions& options,
                                           const VariantBounds& bounds) {
  if (precision != "int8" && precision != "bf16") {
    return InvalidInput("quantize: precision is int8 or bf16 (got '" + precision + "')");
  }
  SHOAL_ASSIGN_OR_RETURN(VersionView original, Version(id, of));
  const ModelVersion& o = original.version;
  if (o.spec.runtime != "native") {
    return InvalidInput("quantize: '" + std::string(id) + "' runs on the " + o.spec.runtime +
                        " runtime; variants are made on the native runtime");
  }
  if (!o.spec.artifact.empty() && !fetch_) {
    return InvalidInput("quantize: version " + std::to_string(o.version) + " of '" +
                        std::string(id) +
                        "' comes from the model store; its variant is made where its files can be "
                        "fetched, through a gateway (shoal models quantize --gateway)");
  }
  if (PrecisionOf(o.spec.runtime_options_json) != "f32") {
    return InvalidInput("quantize: version " + std::to_string(o.version) + " of '" +
                        std::string(id) + "' runs " + PrecisionOf(o.spec.runtime_options_json) +
                        "; a variant is made from an f32 version");
  }
  if (o.record.golden_json.empty()) {
    return InvalidInput(
        "quantize: version " + std::to_string(o.version) +
        " has no golden outputs to compare against (it was adopted from before versions; "
        "register it again)");
  }
  SHOAL_ASSIGN_OR_RETURN(std::vector<EvalSet> sets, Evaluations(id));
  if (!sets.empty() && !serve_) {
    return InvalidInput(
        "quantize: '" + std::string(id) +
        "' has evaluations attached; a variant is judged where they can run, through a gateway "
        "(POST /v1/admin/models/" +
        std::string(id) + "/quantize, or shoal models quantize --gateway)");
  }
  RegisterOptions register_options = options;
  register_options.candidate = true;
  if (register_options.license.empty() && o.record.license_source == "registrant") {
    register_options.license = o.record.license;  // stated for the original: the same files
  }
  ModelSpec spec = VariantSpec(o.spec, precision);
  if (!spec.artifact.empty()) {
    SHOAL_ASSIGN_OR_RETURN(spec.path, fetch_(spec.artifact));
  }
  SHOAL_ASSIGN_OR_RETURN(VersionView variant, Register(std::move(spec), register_options));
  const uint32_t n = variant.version.version;
  SHOAL_ASSIGN_OR_RETURN(GoldenAgreement golden,
                         CompareGolden(variant.version.record.golden_json, o.record.golden_json));
  std::vector<EvalReport> before, after;
  if (!sets.empty()) {
    SHOAL_ASSIGN_OR_RETURN(before, Evaluate(id, o.version, sets));
    SHOAL_ASSIGN_OR_RETURN(after, Evaluate(id, n, sets));
  }
  const std::string task(TaskName(o.spec.task));
  const VariantGate gate = JudgeVariant(precision, o.version, task, golden, before, after, bounds);
  SHOAL_RETURN_IF_ERROR(
      UpdateRecord(id, n, [&](ModelVersion& v) { v.record.variant_json = gate.ToJson(task); }));
  if (gate.passed) {
    spdlog::info("catalog: {} version {} ({} of version {}) is within its bound", id, n, precision,
                 o.version);
  } else {
    spdlog::warn("catalog: {} version {} ({} of version {}) is outside its bound: {} failure(s)",
                 id, n, precision, o.version, gate.failures.size());
  }
  return Version(id, n);
}

}  // namespace shoal::admin
