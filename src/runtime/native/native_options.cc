#include "runtime/native/native_options.h"

#include <algorithm>
#include <charconv>
#include <string_view>


namespace shoal::native {

namespace {

// The model kinds each option applies to.
struct Applies {
  std::string_view key;
  std::initializer_list<NativeModelKind> kinds;
};
using enum NativeModelKind;
const Applies kApplies[] = {
    {"precision", {kEncoder, kDecoderEmbedder, kGenerator, kUseLite, kVision}},
    {"pooling", {kEncoder, kDecoderEmbedder}},
    {"attention", {kDecoderEmbedder}},
    {"lora_budget_mb", {kEncoder, kGenerator}},
    {"max_context", {kGenerator}},
    {"kv_cache_tokens", {kGenerator}},
    {"kv_block_tokens", {kGenerator}},
};

std::string_view KindName(NativeModelKind kind) {
  switch (kind) {
    case kEncoder: return "an encoder";
    case kDecoderEmbedder: return "a decoder embedder";
    case kGenerator: return "a generator";
    case kUseLite: return "USE-Lite";
    case kVision: return "an image model";
  }
  return "?";
}

}  // namespace

Result<NativeOptions> ParseNativeOptions(const RuntimeOptions& options, NativeModelKind kind) {
  NativeOptions o;
  OptionReader read(options);
  for (const Applies& a : kApplies) {
    if (read.Has(a.key) && std::find(a.kinds.begin(), a.kinds.end(), kind) == a.kinds.end()) {
      return read.Invalid(a.key, std::string("does not apply to ") + std::string(KindName(kind)));
    }
  }
  std::string precision = "f32";
  SHOAL_RETURN_IF_ERROR(read.OneOf("precision", {"f32", "bf16", "int8"}, &precision));
  o.precision = precision == "bf16"   ? cpu::Precision::kBF16
                : precision == "int8" ? cpu::Precision::kInt8
                                      : cpu::Precision::kF32;
  if (kind == kUseLite && o.precision != cpu::Precision::kF32) return read.Invalid("precision", "USE-Lite runs f32");
  std::string device = "cpu";
  if (!read.String("device", &device).ok()) return read.Invalid("device", "expected cpu, cuda or cuda:N");
  if (device == "cuda") {
    o.cuda_device = 0;
  } else if (device.starts_with("cuda:")) {
    const char* first = device.data() + 5;
    const char* last = device.data() + device.size();
    auto [end, ec] = std::from_chars(first, last, o.cuda_device);
    if (ec != std::errc() || end != last || first == last || o.cuda_device < 0) {
      return read.Invalid("device", "expected cpu, cuda or cuda:N");
    }
  } else if (device != "cpu") {
    return read.Invalid("device", "expected cpu, cuda or cuda:N");
  }
  if (read.Has("pooling")) {
    std::string pooling;
    SHOAL_RETURN_IF_ERROR(read.OneOf("pooling", {"cls", "mean", "lasttoken"}, &pooling));
    o.pooling = pooling == "cls" ? Pooling::kCls : pooling == "mean" ? Pooling::kMean : Pooling::kLastToken;
  }
  if (read.Has("attention")) {
    std::string attention;
    SHOAL_RETURN_IF_ERROR(read.OneOf("attention", {"causal", "bidirectional"}, &attention));
    o.bidirectional = attention == "bidirectional";
  }
  uint64_t lora_budget_mb = o.lora_budget_bytes >> 20;
  SHOAL_RETURN_IF_ERROR(read.Count("lora_budget_mb", 1, uint64_t{1} << 24, &lora_budget_mb));
  o.lora_budget_bytes = lora_budget_mb << 20;
  SHOAL_RETURN_IF_ERROR(read.Count("max_context", 0, 1u << 24, &o.max_context));
  SHOAL_RETURN_IF_ERROR(read.Count("kv_cache_tokens", 0, 1u << 24, &o.kv_cache_tokens));
  SHOAL_RETURN_IF_ERROR(read.Count("kv_block_tokens", 1, 1u << 24, &o.kv_block_tokens));
  SHOAL_RETURN_IF_ERROR(read.Finish());
  if (o.cuda_device >= 0) {
    if (read.Has("precision") && precision != "bf16") {
      return read.Invalid("precision", "the CUDA backend runs bf16 (" + precision + " is CPU only)");
    }
    o.precision = cpu::Precision::kBF16;
  }
  return o;
}

}  // namespace shoal::native
