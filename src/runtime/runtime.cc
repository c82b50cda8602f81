// What a Model (and a Runtime) does for what it does not have.
#include "runtime/runtime.h"

namespace shoal {

namespace {
template <class Out>
Status Unsupported(const Model& m, std::string_view task, std::span<Out> out) {
  const Status s = InvalidInput("model '" + m.spec().id + "' does not " + std::string(task));
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
Status Model::Tokenize(std::span<const TokenizeInput>, std::span<TokenizeOutput> out) {
  return Unsupported(*this, "tokenize", out);
}

Status Model::UpdateLoras(std::span<const LoraSpec> loras) {
  if (loras.empty()) return Status::Ok();
  return InvalidInput("model '" + spec().id + "' runs no LoRA adapters (its runtime has none)");
}

Result<uint64_t> Runtime::CheckLora(const ModelSpec& base, const LoraSpec&) {
  return InvalidInput("runtime '" + std::string(name()) + "' runs no LoRA adapters; model '" + base.id +
                      "' cannot take one");
}

}  // namespace shoal
