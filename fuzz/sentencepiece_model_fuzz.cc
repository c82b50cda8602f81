// SentencePiece model files (runtime/native/tokenizers/sentencepiece_model.h:
// ParseSentencePieceModel), then SigLIP's, XLM-R's and DeBERTa's tokenizers made of one
// (siglip_tokenizer.h, converted_tokenizers.h) and, when they parse, a text
// encoded. What must hold:
// a parsed model's special ids lie inside its pieces; the tokenizer's ids lie
// inside the vocabulary, one offset each, inside the text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "runtime/native/tokenizers/converted_tokenizers.h"
#include "runtime/native/tokenizers/sentencepiece_model.h"
#include "runtime/native/tokenizers/siglip_tokenizer.h"
#include "runtime/native/tokenizers/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::native;
  auto model = tok::ParseSentencePieceModel(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!model.ok()) return 0;
  const auto n = static_cast<int32_t>(model->pieces.size());
  FUZZ_CHECK(model->unk_id >= 0 && model->unk_id < n);
  FUZZ_CHECK(model->bos_id < n && model->eos_id < n && model->pad_id < n);
  tok::SiglipTokenizerOptions options;
  options.eos_token = model->eos_id >= 0 ? model->pieces[model->eos_id].piece : "</s>";
  for (auto json : {tok::SiglipTokenizerJson(*model, options),
                    tok::XlmRobertaTokenizerJson(*model, nlohmann::json::object()),
                    tok::DebertaV2TokenizerJson(*model, nlohmann::json::object())}) {
    if (!json.ok()) continue;
    auto t = Tokenizer::Parse(*json);
    if (!t.ok()) continue;
    const std::string text = "Hello, WORLD! naïve café 123 — 日本語 😀  ΣΑΣ\t\x1c end <mask> ";
    auto e = (*t)->Encode(text, EncodeOptions{});
    if (!e.ok()) continue;
    FUZZ_CHECK(e->offsets.size() == e->ids.size());
    for (size_t i = 0; i < e->ids.size(); ++i) {
      FUZZ_CHECK(e->ids[i] >= 0 && static_cast<size_t>(e->ids[i]) < (*t)->vocab_size());
      FUZZ_CHECK(e->offsets[i].first <= e->offsets[i].second &&
                 e->offsets[i].second <= text.size());
    }
  }
  return 0;
}
