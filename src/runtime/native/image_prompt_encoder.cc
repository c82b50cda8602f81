#include "runtime/native/image_prompt_encoder.h"

#include <filesystem>

#include "image/decode.h"
#include "runtime/native/loaders/config_fields.h"
#include "runtime/native/loaders/hf_config.h"
#include "runtime/native/loaders/weight_reader.h"

namespace shoal::native {

namespace fs = std::filesystem;
using nlohmann::json;

ImagePromptEncoder::~ImagePromptEncoder() = default;

Result<std::unique_ptr<ImagePromptEncoder>> ImagePromptEncoder::Load(const std::string& dir,
                                                                     const json& config,
                                                                     size_t text_hidden,
                                                                     cpu::Precision precision) {
  std::unique_ptr<ImagePromptEncoder> m(new ImagePromptEncoder());
  // Two spellings of one field (image_token_id since transformers 4.47).
  const char* token_key =
      config.contains("image_token_id") ? "image_token_id" : "image_token_index";
  SHOAL_ASSIGN_OR_RETURN(const int64_t token, ConfigInt(config, "", token_key, -1));
  if (token < 0 || token > INT32_MAX) {
    return ConfigError(token_key, "a vision-language model needs its image token");
  }
  m->image_token_ = static_cast<int32_t>(token);
  if (config.contains("vision_feature_layer") &&
      !config["vision_feature_layer"].is_number_integer()) {
    return ConfigError("vision_feature_layer",
                       "one layer (an integer); states of several layers are not read");
  }
  SHOAL_ASSIGN_OR_RETURN(const int64_t layer, ConfigInt(config, "", "vision_feature_layer", -2));
  SHOAL_ASSIGN_OR_RETURN(const std::string strategy,
                         ConfigString(config, "", "vision_feature_select_strategy", "default"));
  if (strategy != "default" && strategy != "full") {
    return ConfigError("vision_feature_select_strategy",
                       "'" + strategy + "' is not default or full");
  }
  SHOAL_ASSIGN_OR_RETURN(const std::string act,
                         ConfigString(config, "", "projector_hidden_act", "gelu"));
  if (act != "gelu") {
    return ConfigError("projector_hidden_act", "'" + act + "' is not supported (gelu)");
  }
  if (!config.contains("vision_config")) {
    return ConfigError("vision_config", "a llava model needs its vision_config");
  }
  SHOAL_ASSIGN_OR_RETURN(VisionConfig vision,
                         VisionConfig::FeatureTower(config["vision_config"], "vision_config.",
                                                    layer, strategy == "default"));

  SHOAL_ASSIGN_OR_RETURN(m->weights_, SafeTensors::OpenDir(dir));
  const std::string p =
      m->weights_->Find("model.vision_tower.vision_model.embeddings.patch_embedding.weight")
          ? "model."
          : "";
  vision.prefix = p + "vision_tower.";
  SHOAL_ASSIGN_OR_RETURN(m->tower_, VisionTransformer::Load(dir, vision, precision));
  WeightReader r(*m->weights_, &m->converted_, precision);
  const std::string proj = p + "multi_modal_projector.";
  SHOAL_ASSIGN_OR_RETURN(m->linear_1_,
                         r.Linear({proj + "linear_1"}, {text_hidden}, vision.hidden_size));
  SHOAL_ASSIGN_OR_RETURN(m->linear_2_, r.Linear({proj + "linear_2"}, {text_hidden}, text_hidden));

  SHOAL_ASSIGN_OR_RETURN(const json preprocessor,
                         ReadJsonFile((fs::path(dir) / "preprocessor_config.json").string()));
  SHOAL_ASSIGN_OR_RETURN(auto processor, image::ImageProcessor::FromConfig(preprocessor));
  if (processor.height() != vision.image_size || processor.width() != vision.image_size) {
    return InvalidInput("preprocessor_config.json: prepares " + std::to_string(processor.width()) +
                        " × " + std::to_string(processor.height()) +
                        " images; the vision tower takes " + std::to_string(vision.image_size) +
                        " × " + std::to_string(vision.image_size));
  }
  m->processor_ = std::make_unique<image::ImageProcessor>(std::move(processor));
  return m;
}

size_t ImagePromptEncoder::memory_bytes() const {
  return tower_->memory_bytes() + linear_1_->memory_bytes() + linear_2_->memory_bytes();
}

Result<std::vector<float>> ImagePromptEncoder::Embed(std::string_view encoded, int threads) const {
  SHOAL_ASSIGN_OR_RETURN(const image::Image img, image::DecodeImage(encoded, limits_));
  const image::PixelValues pixels = processor_->Apply(img);
  std::vector<float> states;
  SHOAL_RETURN_IF_ERROR(tower_->Features({&pixels, 1}, &states, threads));
  const size_t rows = positions();
  std::vector<float> mid(rows * linear_1_->out()), out(rows * linear_2_->out());
  linear_1_->Forward(states.data(), rows, mid.data(), cpu::Activation::kGelu, threads);
  linear_2_->Forward(mid.data(), rows, out.data(), cpu::Activation::kNone, threads);
  return out;
}

}  // namespace shoal::native
