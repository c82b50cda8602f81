#include "runtime/native/native_options.h"

#include <nlohmann/json.hpp>

namespace shoal::native {

Result<NativeOptions> ParseNativeOptions(const ModelSpec& spec) {
  NativeOptions o;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(spec.runtime_options_json);
  } catch (const std::exception& e) {
    return InvalidInput(std::string("native: ") + e.what());
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const auto& v = it.value();
    if (key == "precision") {
      if (v == "f32") {
        o.precision = cpu::Precision::kF32;
      } else if (v == "bf16") {
        o.precision = cpu::Precision::kBF16;
      } else {
        return InvalidInput("native.precision: expected f32 or bf16");
      }
    } else if (key == "pooling") {
      if (v == "cls") {
        o.pooling = Pooling::kCls;
      } else if (v == "mean") {
        o.pooling = Pooling::kMean;
      } else {
        return InvalidInput("native.pooling: expected cls or mean");
      }
    } else {
      return InvalidInput("native: unknown option '" + key + "'");
    }
  }
  return o;
}

}  // namespace shoal::native
