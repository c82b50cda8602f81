// What a Model does for the tasks it does not have.
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

}  // namespace shoal
