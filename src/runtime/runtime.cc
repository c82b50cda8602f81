// What a Model (and a Runtime) does for what it does not have.
#include "runtime/runtime.h"

namespace shoal {

namespace {
template <class Out>
Status Unsupported(const Model& m, std::string_view task, std::span<Out> out) {
  const Status s = InvalidInput("model '" + m.config().id + "' does not " + std::string(task));
  for (auto& o : out) o.status = s;
  return Status::Ok();
}
}  // namespace

Status Model::Encode(std::span<const EncodeInput>, std::span<EncodeOutput> out) {
  return Unsupported(*this, "encode", out);
}
Status Model::Score(std::span<const ScoreInput>, std::span<ScoreOutput> out) {
  return Unsupported(*this, "score text pairs", out);
}
Status Model::Extract(std::span<const ExtractInput>, std::span<ExtractOutput> out) {
  return Unsupported(*this, "extract", out);
}
Status Model::Tokenize(std::span<const TokenizeInput>, std::span<TokenizeOutput> out) {
  return Unsupported(*this, "tokenize", out);
}

Status Model::Run(std::span<const Tensor>, RunOutputs, std::vector<Tensor>*) {
  return InvalidInput("model '" + config().id + "' is not a graph (it was not loaded as a pipeline's stage)");
}

Status Model::UpdateLoras(std::span<const LoraConfig> loras) {
  if (loras.empty()) return Status::Ok();
  return InvalidInput("model '" + config().id + "' runs no LoRA adapters (its runtime has none)");
}

Result<uint64_t> Runtime::CheckLora(const ModelConfig& base, const LoraConfig&) {
  return InvalidInput("runtime '" + std::string(name()) + "' runs no LoRA adapters; model '" + base.id +
                      "' cannot take one");
}

Result<std::unique_ptr<TextTokenizer>> Runtime::LoadTokenizer(const std::string&) {
  return InvalidInput("runtime '" + std::string(name()) + "' has no tokenizer of its own to load");
}

}  // namespace shoal
