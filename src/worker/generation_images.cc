// GenerationEngine's images (generation_engine.h): a vision-language chat's
// placeholder tokens widened to its images' positions, and the images
// embedded once, when the sequence is prepared (on the engine's thread: a
// step waits for them).
#include "common/sha256.h"
#include "worker/generation_engine.h"
#include "worker/generation_sequence.h"

namespace shoal::worker {

Status GenerationEngine::PlaceImages(Sequence& s, const std::vector<RequestImage>& images,
                                     std::vector<int32_t>* ids) {
  const GeneratorInfo& info = gen_->info();
  if (info.image_positions == 0) {
    return InvalidInput(images[0].field + ": model '" + model_->spec->id +
                        "' reads no images (a text-only model)");
  }
  const auto spelled = static_cast<size_t>(std::count(ids->begin(), ids->end(), info.image_token));
  if (spelled != images.size()) {
    return InvalidInput("messages: the model's chat template placed " + std::to_string(spelled) +
                        " images in the prompt; the messages carry " +
                        std::to_string(images.size()));
  }
  s.image_rows.reserve(images.size());
  std::string digests;
  for (const RequestImage& image : images) {
    auto rows = gen_->EmbedImage(image.bytes, threads_);
    if (!rows.ok()) return Status(rows.status().code(), image.field + ": " + rows.status().message());
    s.image_rows.push_back(std::move(rows).value());
    digests += Sha256Hex(image.bytes);
  }
  // Each placeholder widened to its image's positions, in order.
  std::vector<int32_t> widened;
  widened.reserve(ids->size() + images.size() * info.image_positions);
  for (int32_t id : *ids) {
    if (id != info.image_token) {
      widened.push_back(id);
      continue;
    }
    const size_t k = s.placed.size();
    s.placed.push_back(
        {static_cast<uint32_t>(widened.size()), info.image_positions, s.image_rows[k].data()});
    widened.insert(widened.end(), info.image_positions, info.image_token);
  }
  *ids = std::move(widened);
  s.prefix_key += "\x1fimages:" + Sha256Hex(digests);
  return Status::Ok();
}

}  // namespace shoal::worker
