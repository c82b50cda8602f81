// ParseModel: dispatch on the model's "type".
// Threading: load time only.
#include "runtime/native/tokenizers/model.h"

namespace shoal::native::tok {

Result<std::unique_ptr<Model>> ParseModel(Json json, bool byte_level) {
  std::string_view type = TypeOf(json);
  if (type.empty()) {
    // Files written before "type" existed: infer it from the fields, as the
    // Python library does.
    simdjson::dom::array arr;
    bool array_vocab = false;
    if (auto v = OptField(json, "vocab"))
      array_vocab = v->get_array().get(arr) == simdjson::SUCCESS;
    if (array_vocab) {
      type = "Unigram";
    } else if (OptField(json, "merges")) {
      type = "BPE";
    } else if (OptField(json, "continuing_subword_prefix")) {
      type = "WordPiece";
    } else {
      return LoadError("model", "missing \"type\"");
    }
  }
  if (type != "BPE" && byte_level) {
    return LoadError("model", "a ByteLevel pre-tokenizer with a " + std::string(type) +
                                  " model is not supported (only BPE)");
  }
  if (type == "BPE") return ParseBpe(json, byte_level);
  if (type == "WordPiece") return ParseWordPiece(json);
  if (type == "Unigram") return ParseUnigram(json);
  return LoadError("model.type", "model type \"" + std::string(type) +
                                     "\" is not supported (WordPiece, BPE, Unigram)");
}

}  // namespace shoal::native::tok
