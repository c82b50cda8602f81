#include "runtime/native/native_runtime.h"

#include <filesystem>

#include "common/log.h"
#include "common/clock.h"
#include "runtime/native/decoder_embedder.h"
#include "runtime/native/decoder_model.h"
#include "runtime/native/encoder_model.h"
#include "runtime/native/lora/lora_adapter.h"
#include "runtime/native/models/bert.h"
#include "runtime/native/models/modernbert.h"
#include "runtime/native/models/llama.h"
#include "runtime/native/loaders/decoder_config.h"
#include "runtime/native/native_options.h"
#include "runtime/native/tokenizers/model_tokenizer.h"
#include "runtime/native/tokenizers/tokenizer.h"
#include "runtime/native/use_lite_model.h"
#include "runtime/native/vision_model.h"

namespace shoal {

namespace {

// A Hugging Face tokenizer.json, alone (`shoal tokenize`).
class NativeTokenizer final : public TextTokenizer {
 public:
  explicit NativeTokenizer(std::unique_ptr<native::Tokenizer> t) : t_(std::move(t)) {}
  Result<std::vector<int32_t>> Encode(std::string_view text, bool add_special_tokens) const override {
    native::EncodeOptions options;
    options.add_special_tokens = add_special_tokens;
    auto enc = t_->Encode(text, options);
    if (!enc.ok()) return enc.status();
    return std::move(enc->ids);
  }

 private:
  std::unique_ptr<native::Tokenizer> t_;
};

}  // namespace

Result<std::unique_ptr<TextTokenizer>> NativeRuntime::LoadTokenizer(const std::string& path) {
  std::error_code ec;
  auto t = std::filesystem::is_directory(path, ec) ? native::LoadModelTokenizer(path)
                                                    : native::Tokenizer::LoadFile(path);
  if (!t.ok()) return t.status();
  return std::unique_ptr<TextTokenizer>(std::make_unique<NativeTokenizer>(std::move(t).value()));
}

Result<std::unique_ptr<Model>> NativeRuntime::Load(const ModelConfig& spec, const LoadContext& ctx) {
  namespace fs = std::filesystem;
  if (spec.path.empty()) return InvalidInput("path: the native runtime needs the model's directory");
  std::error_code ec;
  if (!fs::is_directory(spec.path, ec)) return InvalidInput("path: " + spec.path + " is not a directory");
  // What the directory holds decides the architecture.
  const fs::path dir(spec.path);
  const bool hugging_face = fs::exists(dir / "config.json", ec);
  const bool use_lite = !hugging_face && fs::exists(dir / "model.json", ec) && fs::exists(dir / "vocab.json", ec);
  if (!hugging_face && !use_lite) {
    return InvalidInput("path: " + spec.path +
                        " holds neither config.json (Hugging Face) nor model.json + vocab.json (USE-Lite)");
  }
  const bool decoder = hugging_face && native::IsDecoderConfig(spec.path);
  const bool vision = hugging_face && !decoder && native::IsVisionConfig(spec.path);
  using Kind = native::NativeModelKind;
  // A decoder registered to encode is an embedder.
  const Kind kind = use_lite  ? Kind::kUseLite
                    : vision  ? Kind::kVision
                    : decoder ? (spec.task == Task::kEncode ? Kind::kDecoderEmbedder : Kind::kGenerator)
                              : Kind::kEncoder;
  auto options = native::ParseNativeOptions(spec.options, kind);
  if (!options.ok()) return options.status();
  if (options->cuda_device >= 0 && (decoder || use_lite || vision)) {
    return InvalidInput("native.device: the CUDA backend runs BERT-family encoders; " + spec.id + " is " +
                        (decoder ? "a decoder" : vision ? "an image model" : "USE-Lite") +
                        ", which runs on the CPU (device: cpu)");
  }
  spdlog::info("native: loading {} ({}) from {}", spec.id,
               decoder  ? "Llama family"
               : vision ? "image tower"
               : hugging_face ? "encoder"
                              : "Universal Sentence Encoder Lite",
               spec.path);
  const auto t0 = SteadyClock::now();
  auto model = kind == Kind::kDecoderEmbedder ? native::DecoderEmbedder::Load(spec, *options, ctx)
               : kind == Kind::kGenerator    ? native::DecoderModel::Load(spec, *options, ctx)
               : kind == Kind::kEncoder      ? native::EncoderModel::Load(spec, *options, ctx)
               : kind == Kind::kVision       ? native::VisionModel::Load(spec, *options, ctx)
                                             : native::UseLiteModel::Load(spec, ctx.threads);
  if (!model.ok()) return model.status();
  spdlog::info("native: {} loaded in {} ms, {:.1f} MB, {} thread(s) per batch", spec.id,
               MicrosSince(t0) / 1000, (*model)->memory_bytes() / 1e6, ctx.threads);
  return model;
}

Result<uint64_t> NativeRuntime::CheckLora(const ModelConfig& base, const LoraConfig& lora) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(fs::path(base.path) / "config.json", ec)) {
    return InvalidInput("model '" + base.id + "' (" + base.path + ") is not a Hugging Face model: it takes no LoRA");
  }
  native::LoraTargets targets;
  if (native::IsDecoderConfig(base.path)) {
    if (base.task == Task::kEncode) {
      return InvalidInput("model '" + base.id + "' is a decoder embedder: the native runtime runs no LoRA adapters on "
                          "one yet");
    }
    SHOAL_ASSIGN_OR_RETURN(const native::DecoderConfig config, native::LoadDecoderConfig(base.path));
    targets = native::Llama::LoraTargetsOf(config);
  } else {
    SHOAL_ASSIGN_OR_RETURN(const native::EncoderConfig config, native::LoadEncoderConfig(base.path));
    if (config.non_bert_family() && !config.is_modernbert()) {
      return InvalidInput("model '" + base.id + "' is a " + config.non_bert_family() +
                          ": the native runtime runs no LoRA adapters on it yet");
    }
    SHOAL_ASSIGN_OR_RETURN(const auto weights, native::SafeTensors::OpenDir(base.path));
    targets = config.is_modernbert() ? native::ModernBert::LoraTargetsOf(config, *weights)
                                     : native::Bert::LoraTargetsOf(config, *weights);
  }
  SHOAL_ASSIGN_OR_RETURN(const auto adapter, native::LoraAdapter::Load(lora.path, targets));
  return static_cast<uint64_t>(adapter->memory_bytes());
}

}  // namespace shoal
