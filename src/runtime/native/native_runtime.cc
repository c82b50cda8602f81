#include "runtime/native/native_runtime.h"

#include <filesystem>

#include "common/log.h"
#include "common/clock.h"
#include "runtime/native/encoder_model.h"
#include "runtime/native/native_options.h"
#include "runtime/native/use_lite_model.h"

namespace shoal {

Result<std::unique_ptr<Model>> NativeRuntime::Load(const ModelSpec& spec, const LoadContext& ctx) {
  namespace fs = std::filesystem;
  if (spec.path.empty()) return InvalidInput("path: the native runtime needs the model's directory");
  std::error_code ec;
  if (!fs::is_directory(spec.path, ec)) return InvalidInput("path: " + spec.path + " is not a directory");
  auto options = native::ParseNativeOptions(spec);
  if (!options.ok()) return options.status();

  const auto t0 = SteadyClock::now();
  Result<std::unique_ptr<Model>> model = InvalidInput("");
  if (fs::exists(fs::path(spec.path) / "config.json", ec)) {
    spdlog::info("native: loading {} (BERT family) from {}", spec.id, spec.path);
    model = native::EncoderModel::Load(spec, *options, ctx.threads);
  } else if (fs::exists(fs::path(spec.path) / "model.json", ec) &&
             fs::exists(fs::path(spec.path) / "vocab.json", ec)) {
    spdlog::info("native: loading {} (Universal Sentence Encoder Lite) from {}", spec.id, spec.path);
    model = native::UseLiteModel::Load(spec, ctx.threads);
  } else {
    return InvalidInput("path: " + spec.path +
                        " holds neither config.json (Hugging Face) nor model.json + vocab.json (USE-Lite)");
  }
  if (!model.ok()) return model.status();
  spdlog::info("native: {} loaded in {} ms, {:.1f} MB, {} thread(s) per batch", spec.id,
               MicrosSince(t0) / 1000, (*model)->memory_bytes() / 1e6, ctx.threads);
  return model;
}

}  // namespace shoal
