#include "runtime/native/vision_model.h"

#include <cmath>
#include <filesystem>
#include <fstream>

#include "image/decode.h"
#include "runtime/extraction.h"

namespace shoal::native {
namespace {

Result<nlohmann::json> ReadJsonFile(const std::filesystem::path& path) {
  std::ifstream f(path);
  if (!f) return InvalidInput(path.string() + ": cannot be read");
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded()) return InvalidInput(path.string() + ": not JSON");
  return j;
}

// The inputs' images (an empty one: a text input).
template <class In>
std::vector<std::string_view> ImagesOf(std::span<const In> in) {
  std::vector<std::string_view> images;
  images.reserve(in.size());
  for (const In& x : in) images.push_back(x.image);
  return images;
}

}  // namespace

bool IsVisionConfig(const std::string& dir) {
  auto config = ReadJsonFile(std::filesystem::path(dir) / "config.json");
  if (!config.ok() || !config->contains("architectures") || !(*config)["architectures"].is_array() ||
      (*config)["architectures"].empty()) {
    return false;
  }
  const auto& arch = (*config)["architectures"][0];
  return arch == "CLIPVisionModelWithProjection" || arch == "SiglipVisionModel" || arch == "ViTForImageClassification";
}

Result<std::unique_ptr<Model>> VisionModel::Load(const ModelConfig& spec, const NativeOptions& options,
                                                 const LoadContext& ctx) {
  const std::filesystem::path dir(spec.path);
  SHOAL_ASSIGN_OR_RETURN(const nlohmann::json config, ReadJsonFile(dir / "config.json"));
  SHOAL_ASSIGN_OR_RETURN(const VisionConfig vision, VisionConfig::FromJson(config));
  const Task want = vision.family == VisionConfig::Family::kVit ? Task::kExtract : Task::kEncode;
  if (spec.task != want) {
    return InvalidInput("task: " + spec.id + " is " +
                        (want == Task::kEncode ? "an image embedder (task encode)" : "an image classifier (task extract)") +
                        ", not " + std::string(TaskName(spec.task)));
  }
  SHOAL_ASSIGN_OR_RETURN(const nlohmann::json preprocessor, ReadJsonFile(dir / "preprocessor_config.json"));
  std::unique_ptr<VisionModel> m(new VisionModel());
  m->config_ = spec;
  m->threads_ = ctx.threads;
  SHOAL_ASSIGN_OR_RETURN(auto processor, image::ImageProcessor::FromConfig(preprocessor));
  if (processor.height() != vision.image_size || processor.width() != vision.image_size) {
    return InvalidInput("preprocessor_config.json: prepares " + std::to_string(processor.width()) + " × " +
                        std::to_string(processor.height()) + " images; the model takes " +
                        std::to_string(vision.image_size) + " × " + std::to_string(vision.image_size));
  }
  m->processor_ = std::make_unique<image::ImageProcessor>(std::move(processor));
  SHOAL_ASSIGN_OR_RETURN(m->tower_, VisionTransformer::Load(spec.path, vision, options.precision, ctx.progress));
  return std::unique_ptr<Model>(std::move(m));
}

Status VisionModel::Run(std::span<const std::string_view> images, std::vector<Status>* statuses,
                        std::vector<float>* outputs) const {
  statuses->assign(images.size(), Status::Ok());
  std::vector<image::PixelValues> pixels;
  std::vector<size_t> ran;  // the inputs whose images decoded, in order
  for (size_t i = 0; i < images.size(); ++i) {
    if (images[i].empty()) {
      (*statuses)[i] = InvalidInput("input: model '" + config_.id + "' takes images, not text");
      continue;
    }
    Result<image::Image> img = image::DecodeImage(images[i], limits_);
    if (!img.ok()) {
      (*statuses)[i] = img.status();
      continue;
    }
    pixels.push_back(processor_->Apply(*img));
    ran.push_back(i);
  }
  const size_t dim = tower_->output_dim();
  outputs->assign(images.size() * dim, 0.0f);
  if (pixels.empty()) return Status::Ok();
  std::vector<float> out;
  SHOAL_RETURN_IF_ERROR(tower_->Forward(pixels, &out, threads_));
  for (size_t k = 0; k < ran.size(); ++k) {
    std::copy_n(out.begin() + k * dim, dim, outputs->begin() + ran[k] * dim);
  }
  return Status::Ok();
}

Status VisionModel::Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) {
  if (tower_->config().family == VisionConfig::Family::kVit) {
    return InvalidInput("model '" + config_.id + "' classifies images (task extract); it does not encode");
  }
  std::vector<Status> statuses;
  std::vector<float> vectors;
  SHOAL_RETURN_IF_ERROR(Run(ImagesOf(in), &statuses, &vectors));
  const size_t dim = tower_->output_dim();
  const uint32_t positions = tower_->config().positions();
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] = EncodeOutput{};
    out[i].status = statuses[i];
    if (!statuses[i].ok()) continue;
    if (in[i].outputs != static_cast<OutputKinds>(OutputKind::kDense)) {
      out[i].status = InvalidInput("output: an image embedder produces dense vectors only");
      continue;
    }
    out[i].dense.assign(vectors.begin() + i * dim, vectors.begin() + (i + 1) * dim);
    if (in[i].normalize) {
      double norm = 0;
      for (float v : out[i].dense) norm += double{v} * v;
      const auto scale = static_cast<float>(norm > 0 ? 1.0 / std::sqrt(norm) : 0.0);
      for (float& v : out[i].dense) v *= scale;
    }
    out[i].tokens = positions;
  }
  return Status::Ok();
}

Status VisionModel::Extract(std::span<const ExtractInput> in, std::span<ExtractOutput> out) {
  const VisionConfig& c = tower_->config();
  if (c.family != VisionConfig::Family::kVit) {
    return InvalidInput("model '" + config_.id + "' embeds images (task encode); it does not classify them");
  }
  std::vector<Status> statuses;
  std::vector<float> logits;
  SHOAL_RETURN_IF_ERROR(Run(ImagesOf(in), &statuses, &logits));
  const size_t L = c.labels.size();
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] = ExtractOutput{};
    out[i].status = statuses[i];
    if (!statuses[i].ok()) continue;
    if (in[i].aggregation) {
      out[i].status = InvalidInput("aggregation: model '" + config_.id + "' labels whole images, not tokens");
      continue;
    }
    out[i].labels = RankLabels({logits.data() + i * L, L}, c.labels, c.multi_label, in[i].top_k);
    out[i].tokens = c.positions();
  }
  return Status::Ok();
}

}  // namespace shoal::native
