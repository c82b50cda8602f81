#include "runtime/llamacpp/llamacpp_runtime.h"

#include <algorithm>
#include <filesystem>

#include "runtime/llamacpp/llamacpp_backend.h"
#include "runtime/llamacpp/llamacpp_decoder.h"
#include "runtime/llamacpp/llamacpp_embedder.h"
#include "runtime/llamacpp/llamacpp_options.h"

namespace shoal::llamacpp {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kDefaultMaxContext = 4096;

Status LoadFailed(const ModelConfig& config, const std::string& why) {
  return Status(Code::kModelLoadFailed, "model '" + config.id + "': " + why);
}

// The GGUF file of the model: `path` itself, the `file` in it, or its one .gguf.
Result<std::string> FindGguf(const ModelConfig& config, const std::string& file) {
  std::error_code ec;
  if (fs::is_regular_file(config.path, ec)) {
    if (!file.empty()) return InvalidInput("llamacpp.file: the model's path is a file, not a directory");
    return config.path;
  }
  if (!fs::is_directory(config.path, ec)) return LoadFailed(config, "no directory " + config.path);
  if (!file.empty()) {
    const fs::path p = fs::path(config.path) / file;
    if (!fs::is_regular_file(p, ec)) return InvalidInput("llamacpp.file: no file " + p.string());
    return p.string();
  }
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(config.path, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".gguf") found.push_back(e.path().filename().string());
  }
  std::sort(found.begin(), found.end());
  if (found.empty()) return LoadFailed(config, "no .gguf file in " + config.path);
  if (found.size() > 1) {
    std::string names;
    for (const std::string& n : found) names += (names.empty() ? "" : ", ") + n;
    return InvalidInput("model '" + config.id + "': " + config.path + " holds several .gguf files (" + names +
                        "); name one with llamacpp.file");
  }
  return (fs::path(config.path) / found[0]).string();
}

}  // namespace

Result<std::unique_ptr<Model>> LlamaCppRuntime::Load(const ModelConfig& config, const LoadContext& ctx) {
  SHOAL_ASSIGN_OR_RETURN(LlamaCppOptions options, ParseLlamaCppOptions(config.options));
  if (config.task != Task::kEncode && config.task != Task::kGenerate) {
    return InvalidInput("model '" + config.id + "': the llamacpp runtime serves encode and generate models");
  }
  SHOAL_ASSIGN_OR_RETURN(std::string gguf, FindGguf(config, options.file));
  InitBackend();

  llama_model_params params = llama_model_default_params();
  params.n_gpu_layers = 0;  // this build of llama.cpp runs on the CPU
  const auto* progress = ctx.progress ? &ctx.progress : nullptr;
  if (progress) {
    params.progress_callback = [](float fraction, void* user) {
      (*static_cast<const std::function<void(double)>*>(user))(fraction);
      return true;
    };
    params.progress_callback_user_data = const_cast<std::function<void(double)>*>(progress);
  }
  LogCapture capture;
  ModelPtr model(llama_model_load_from_file(gguf.c_str(), params));
  if (!model) {
    const std::string reason = capture.Reason();
    return LoadFailed(config, "llama.cpp could not load " + gguf + (reason.empty() ? "" : ": " + reason));
  }

  const int32_t trained = llama_model_n_ctx_train(model.get());
  const uint32_t context =
      options.context ? options.context : std::min(trained > 0 ? static_cast<uint32_t>(trained) : kDefaultMaxContext,
                                                   kDefaultMaxContext);
  const int threads = static_cast<int>(options.threads ? options.threads : std::max(1, ctx.threads));
  SHOAL_ASSIGN_OR_RETURN(std::unique_ptr<Threadpool> pool, Threadpool::Create(threads, options.poll));
  if (config.task == Task::kEncode) return LlamaCppEmbedder::Create(std::move(model), config, context, std::move(pool));
  return LlamaCppDecoder::Create(std::move(model), config, context, std::move(pool));
}

}  // namespace shoal::llamacpp
