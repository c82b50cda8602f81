#include "runtime/native/native_options.h"

#include <charconv>

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
  bool f32_asked = false;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const auto& v = it.value();
    if (key == "precision") {
      if (v == "f32") {
        o.precision = cpu::Precision::kF32;
        f32_asked = true;
      } else if (v == "bf16") {
        o.precision = cpu::Precision::kBF16;
      } else {
        return InvalidInput("native.precision: expected f32 or bf16");
      }
    } else if (key == "device") {
      const std::string d = v.is_string() ? v.get<std::string>() : "";
      int index = -1;
      if (d == "cpu") {
        index = -1;
      } else if (d == "cuda") {
        index = 0;
      } else if (d.starts_with("cuda:")) {
        const char* first = d.data() + 5;
        const char* last = d.data() + d.size();
        auto [end, ec] = std::from_chars(first, last, index);
        if (ec != std::errc() || end != last || first == last || index < 0) index = -2;
      } else {
        index = -2;
      }
      if (index == -2) return InvalidInput("native.device: expected cpu, cuda or cuda:N");
      o.cuda_device = index;
    } else if (key == "pooling") {
      if (v == "cls") {
        o.pooling = Pooling::kCls;
      } else if (v == "mean") {
        o.pooling = Pooling::kMean;
      } else {
        return InvalidInput("native.pooling: expected cls or mean");
      }
    } else if (key == "lora_budget_mb") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 || v.get<uint64_t>() > (uint64_t{1} << 24)) {
        return InvalidInput("native.lora_budget_mb: expected a positive number of MB");
      }
      o.lora_budget_bytes = v.get<uint64_t>() << 20;
    } else if (key == "max_context" || key == "kv_cache_tokens" || key == "kv_block_tokens") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() > (1u << 24) || (key == "kv_block_tokens" && v == 0)) {
        return InvalidInput("native." + key + ": expected a positive count up to 16777216");
      }
      const auto n = v.get<uint32_t>();
      (key == "max_context" ? o.max_context : key == "kv_cache_tokens" ? o.kv_cache_tokens : o.kv_block_tokens) = n;
    } else {
      return InvalidInput("native: unknown option '" + key + "'");
    }
  }
  if (o.cuda_device >= 0) {
    if (f32_asked) return InvalidInput("native.precision: the CUDA backend runs bf16 (f32 is CPU only)");
    o.precision = cpu::Precision::kBF16;
  }
  return o;
}

}  // namespace shoal::native
