#include "runtime/native/vision_model.h"

#include <cmath>
#include <filesystem>

#include "image/decode.h"
#include "runtime/extraction.h"
#include "runtime/native/loaders/config_fields.h"
#include "runtime/native/loaders/hf_config.h"
#include "runtime/native/loaders/weight_reader.h"
#include "runtime/native/tokenizers/model_tokenizer.h"
#include "runtime/native/tokenizers/tokenize_task.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;

// The inputs' images (an empty one: a text input).
template <class In>
std::vector<std::string_view> ImagesOf(std::span<const In> in) {
  std::vector<std::string_view> images;
  images.reserve(in.size());
  for (const In& x : in) images.push_back(x.image);
  return images;
}

void Normalize(std::span<float> v) {
  double norm = 0;
  for (float x : v) norm += double{x} * x;
  const auto scale = static_cast<float>(norm > 0 ? 1.0 / std::sqrt(norm) : 0.0);
  for (float& x : v) x *= scale;
}

// exp(logit_scale) and logit_bias (SigLIP) of a two-tower checkpoint: CLIP
// keeps the scale as a 0-d tensor, SigLIP both as one-element vectors.
Status ReadLogitScale(const std::string& dir, bool siglip, cpu::Precision precision, float* scale, float* bias) {
  SHOAL_ASSIGN_OR_RETURN(const auto weights, SafeTensors::OpenDir(dir));
  std::vector<std::vector<float>> converted;
  WeightReader r(*weights, &converted, precision);
  const std::vector<int64_t> shape = siglip ? std::vector<int64_t>{1} : std::vector<int64_t>{};
  SHOAL_ASSIGN_OR_RETURN(const float* s, r.Tensor("logit_scale", shape));
  *scale = std::exp(*s);
  if (siglip) {
    SHOAL_ASSIGN_OR_RETURN(const float* b, r.Tensor("logit_bias", shape));
    *bias = *b;
  }
  return Status::Ok();
}

}  // namespace

bool IsVisionConfig(const std::string& dir) {
  auto config = ReadJsonFile((fs::path(dir) / "config.json").string());
  if (!config.ok()) return false;
  const std::string arch = ConfigArchitecture(*config);
  return arch == "CLIPVisionModelWithProjection" || arch == "SiglipVisionModel" ||
         arch == "ViTForImageClassification" || HasTextTower(*config);
}

Result<std::unique_ptr<Model>> VisionModel::Load(const ModelConfig& spec, const NativeOptions& options,
                                                 const LoadContext& ctx) {
  const fs::path dir(spec.path);
  SHOAL_ASSIGN_OR_RETURN(const nlohmann::json config, ReadJsonFile((dir / "config.json").string()));
  SHOAL_ASSIGN_OR_RETURN(const VisionConfig vision, VisionConfig::FromJson(config));
  const Task want = vision.family == VisionConfig::Family::kVit ? Task::kExtract : Task::kEncode;
  if (spec.task != want) {
    return InvalidInput("task: " + spec.id + " is " +
                        (want == Task::kEncode ? "an image embedder (task encode)" : "an image classifier (task extract)") +
                        ", not " + std::string(TaskName(spec.task)));
  }
  SHOAL_ASSIGN_OR_RETURN(const nlohmann::json preprocessor,
                         ReadJsonFile((dir / "preprocessor_config.json").string()));
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
  const bool two_towers = HasTextTower(config);
  // The image tower's share of the progress, then the text tower's.
  auto part = [&](double from, double to) -> std::function<void(double)> {
    if (!ctx.progress) return {};
    return [&ctx, from, to](double f) { ctx.progress(from + f * (to - from)); };
  };
  SHOAL_ASSIGN_OR_RETURN(m->tower_, VisionTransformer::Load(spec.path, vision, options.precision,
                                                            part(0.0, two_towers ? 0.5 : 1.0)));
  if (!two_towers) return std::unique_ptr<Model>(std::move(m));

  SHOAL_ASSIGN_OR_RETURN(const TextTowerConfig text, TextTowerConfig::FromJson(config));
  if (text.projection_dim != m->tower_->output_dim()) {
    return InvalidInput("config.json: the text tower's embeddings have " + std::to_string(text.projection_dim) +
                        " dimensions, the image tower's " + std::to_string(m->tower_->output_dim()));
  }
  SHOAL_ASSIGN_OR_RETURN(m->tokenizer_, LoadModelTokenizer(spec.path));
  if (m->tokenizer_->vocab_size() > text.vocab_size) {
    return InvalidInput("the tokenizer has " + std::to_string(m->tokenizer_->vocab_size()) +
                        " ids; the text tower embeds " + std::to_string(text.vocab_size));
  }
  m->max_tokens_ = std::min<size_t>(spec.max_input_tokens, text.max_position_embeddings);
  SHOAL_RETURN_IF_ERROR(ReadLogitScale(spec.path, text.family == TextTowerConfig::Family::kSiglip, options.precision,
                                       &m->logit_scale_, &m->logit_bias_));
  SHOAL_ASSIGN_OR_RETURN(m->text_, TextTransformer::Load(spec.path, text, options.precision, part(0.5, 1.0)));
  return std::unique_ptr<Model>(std::move(m));
}

size_t VisionModel::memory_bytes() const { return tower_->memory_bytes() + (text_ ? text_->memory_bytes() : 0); }

Status VisionModel::RunImages(std::span<const std::string_view> images, TowerRun* run) const {
  const size_t dim = tower_->output_dim();
  run->statuses.assign(images.size(), Status::Ok());
  run->vectors.assign(images.size() * dim, 0.0f);
  run->tokens.assign(images.size(), tower_->config().positions());
  run->truncated.assign(images.size(), 0);
  std::vector<image::PixelValues> pixels;
  std::vector<size_t> ran;  // the images that decoded, in order
  for (size_t i = 0; i < images.size(); ++i) {
    Result<image::Image> img = image::DecodeImage(images[i], limits_);
    if (!img.ok()) {
      run->statuses[i] = img.status();
      continue;
    }
    pixels.push_back(processor_->Apply(*img));
    ran.push_back(i);
  }
  if (pixels.empty()) return Status::Ok();
  std::vector<float> out;
  SHOAL_RETURN_IF_ERROR(tower_->Forward(pixels, &out, threads_));
  for (size_t k = 0; k < ran.size(); ++k) {
    std::copy_n(out.begin() + k * dim, dim, run->vectors.begin() + ran[k] * dim);
  }
  return Status::Ok();
}

Status VisionModel::RunTexts(std::span<const std::string_view> texts, std::span<const uint8_t> truncate,
                             TowerRun* run) const {
  const size_t dim = text_->output_dim();
  run->statuses.assign(texts.size(), Status::Ok());
  run->vectors.assign(texts.size() * dim, 0.0f);
  run->tokens.assign(texts.size(), 0);
  run->truncated.assign(texts.size(), 0);
  std::vector<std::vector<int32_t>> sequences;
  std::vector<size_t> ran;
  {
    StageTimer tokenizing(&ThisCallStages().tokenize_us);
    for (size_t i = 0; i < texts.size(); ++i) {
      EncodeOptions limit;
      limit.max_length = max_tokens_;
      limit.truncate = truncate[i] != 0;
      Result<Encoding> e = tokenizer_->Encode(texts[i], limit);
      if (!e.ok()) {
        run->statuses[i] = e.status();
        continue;
      }
      run->tokens[i] = static_cast<uint32_t>(e->ids.size());
      run->truncated[i] = e->truncated;
      sequences.push_back(std::move(e->ids));
      ran.push_back(i);
    }
  }
  if (sequences.empty()) return Status::Ok();
  std::vector<float> out;
  SHOAL_RETURN_IF_ERROR(text_->Forward(sequences, &out, threads_));
  for (size_t k = 0; k < ran.size(); ++k) {
    std::copy_n(out.begin() + k * dim, dim, run->vectors.begin() + ran[k] * dim);
  }
  return Status::Ok();
}

Status VisionModel::Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) {
  if (tower_->config().family == VisionConfig::Family::kVit) {
    return InvalidInput("model '" + config_.id + "' classifies images (task extract); it does not encode");
  }
  // Images to the image tower, texts to the text tower (where there is one).
  std::vector<size_t> image_of, text_of;
  std::vector<std::string_view> images, texts;
  std::vector<uint8_t> truncate;
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] = EncodeOutput{};
    if (in[i].outputs != static_cast<OutputKinds>(OutputKind::kDense)) {
      out[i].status = InvalidInput("output: an image–text model produces dense vectors only");
    } else if (!in[i].image.empty()) {
      image_of.push_back(i);
      images.push_back(in[i].image);
    } else if (!text_) {
      out[i].status = InvalidInput("input: model '" + config_.id + "' takes images, not text");
    } else {
      text_of.push_back(i);
      texts.push_back(in[i].text);
      truncate.push_back(in[i].truncate);
    }
  }
  auto deliver = [&](const std::vector<size_t>& of, const TowerRun& run, size_t dim) {
    for (size_t k = 0; k < of.size(); ++k) {
      EncodeOutput& o = out[of[k]];
      o.status = run.statuses[k];
      if (!o.status.ok()) continue;
      o.dense.assign(run.vectors.begin() + k * dim, run.vectors.begin() + (k + 1) * dim);
      if (in[of[k]].normalize) Normalize(o.dense);
      o.tokens = run.tokens[k];
      o.truncated = run.truncated[k];
    }
  };
  TowerRun run;
  if (!images.empty()) {
    SHOAL_RETURN_IF_ERROR(RunImages(images, &run));
    deliver(image_of, run, tower_->output_dim());
  }
  if (!texts.empty()) {
    SHOAL_RETURN_IF_ERROR(RunTexts(texts, truncate, &run));
    deliver(text_of, run, text_->output_dim());
  }
  return Status::Ok();
}

Status VisionModel::Score(std::span<const ScoreInput> in, std::span<ScoreOutput> out) {
  if (!text_) return Model::Score(in, out);
  std::vector<size_t> ok;
  std::vector<std::string_view> images, texts;
  std::vector<uint8_t> truncate;
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] = ScoreOutput{};
    if (in[i].image.empty()) {
      out[i].status = InvalidInput("input: model '" + config_.id + "' scores a text against an image, not two texts");
      continue;
    }
    ok.push_back(i);
    images.push_back(in[i].image);
    texts.push_back(in[i].text);
    truncate.push_back(in[i].truncate);
  }
  if (ok.empty()) return Status::Ok();
  TowerRun image_run, text_run;
  SHOAL_RETURN_IF_ERROR(RunImages(images, &image_run));
  SHOAL_RETURN_IF_ERROR(RunTexts(texts, truncate, &text_run));
  const size_t dim = text_->output_dim();
  for (size_t k = 0; k < ok.size(); ++k) {
    ScoreOutput& o = out[ok[k]];
    o.status = !text_run.statuses[k].ok() ? text_run.statuses[k] : image_run.statuses[k];
    if (!o.status.ok()) continue;
    const std::span<float> t(text_run.vectors.data() + k * dim, dim), v(image_run.vectors.data() + k * dim, dim);
    Normalize(t);
    Normalize(v);
    double dot = 0;
    for (size_t j = 0; j < dim; ++j) dot += double{t[j]} * v[j];
    o.logits = {static_cast<float>(logit_scale_ * dot + logit_bias_)};
    o.tokens = text_run.tokens[k] + image_run.tokens[k];
    o.truncated = text_run.truncated[k];
  }
  return Status::Ok();
}

Status VisionModel::Extract(std::span<const ExtractInput> in, std::span<ExtractOutput> out) {
  const VisionConfig& c = tower_->config();
  if (c.family != VisionConfig::Family::kVit) {
    return InvalidInput("model '" + config_.id + "' embeds images (task encode); it does not classify them");
  }
  std::vector<size_t> image_of;
  std::vector<std::string_view> images;
  for (size_t i = 0; i < in.size(); ++i) {
    out[i] = ExtractOutput{};
    if (in[i].image.empty()) {
      out[i].status = InvalidInput("input: model '" + config_.id + "' takes images, not text");
    } else if (in[i].aggregation) {
      out[i].status = InvalidInput("aggregation: model '" + config_.id + "' labels whole images, not tokens");
    } else {
      image_of.push_back(i);
      images.push_back(in[i].image);
    }
  }
  if (images.empty()) return Status::Ok();
  TowerRun run;
  SHOAL_RETURN_IF_ERROR(RunImages(images, &run));
  const size_t L = c.labels.size();
  for (size_t k = 0; k < image_of.size(); ++k) {
    ExtractOutput& o = out[image_of[k]];
    o.status = run.statuses[k];
    if (!o.status.ok()) continue;
    o.labels = RankLabels({run.vectors.data() + k * L, L}, c.labels, c.multi_label, in[image_of[k]].top_k);
    o.tokens = run.tokens[k];
  }
  return Status::Ok();
}

Status VisionModel::Tokenize(std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) {
  if (!tokenizer_) return Model::Tokenize(in, out);
  return RunTokenize(*tokenizer_, in, out);
}

}  // namespace shoal::native
