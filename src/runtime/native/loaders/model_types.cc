#include "runtime/native/loaders/model_types.h"

#include <algorithm>
#include <array>

namespace shoal::native {
namespace {

constexpr std::array<std::string_view, 10> kEncoders = {"bert",   "roberta", "xlm-roberta", "camembert",  "distilbert",
                                                        "mpnet",  "electra", "modernbert",  "nomic_bert", "deberta-v2"};
constexpr std::array<std::string_view, 4> kDecoders = {"llama", "mistral", "qwen2", "qwen3"};
constexpr std::array<std::string_view, 6> kImageModels = {"clip", "clip_vision_model", "siglip", "siglip_vision_model",
                                                          "vit",  "llava"};

template <size_t N>
bool In(const std::array<std::string_view, N>& types, std::string_view type) {
  return std::find(types.begin(), types.end(), type) != types.end();
}

}  // namespace

bool IsNativeEncoderType(std::string_view model_type) { return In(kEncoders, model_type); }

bool IsNativeDecoderType(std::string_view model_type) { return In(kDecoders, model_type); }

bool NativeRunsModelType(std::string_view model_type) {
  return model_type.empty() || IsNativeEncoderType(model_type) || IsNativeDecoderType(model_type) ||
         In(kImageModels, model_type);
}

std::string NativeEncoderTypes() {
  std::string out;
  for (std::string_view type : kEncoders) out += (out.empty() ? "" : ", ") + std::string(type);
  return out;
}

}  // namespace shoal::native
