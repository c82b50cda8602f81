// Sections of a tokenizer.json, as the converters of slow tokenizers
// (converted_tokenizers.h, siglip_tokenizer.h) write them for Tokenizer::Parse.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/base64.h"
#include "runtime/native/tokenizers/sentencepiece_model.h"

namespace shoal::native::tok {

using TokenizerJson = nlohmann::ordered_json;

inline TokenizerJson ReplaceJson(const char* regex, const char* content) {
  return {{"type", "Replace"}, {"pattern", {{"Regex", regex}}}, {"content", content}};
}

inline TokenizerJson StripJson(bool left, bool right) {
  return {{"type", "Strip"}, {"strip_left", left}, {"strip_right", right}};
}

// A SentencePiece model's rules, as the Precompiled normalizer.
inline TokenizerJson PrecompiledJson(const SentencePieceModel& model) {
  std::string charsmap;
  AppendBase64(model.precompiled_charsmap, &charsmap);
  return {{"type", "Precompiled"}, {"precompiled_charsmap", charsmap}};
}

// SentencePiece's "▁" before every word, as pre-tokenizer and decoder.
inline TokenizerJson MetaspaceJson() {
  return {{"type", "Metaspace"},
          {"replacement", "\u2581"},
          {"prepend_scheme", "always"},
          {"split", true}};
}

// One piece of a TemplateProcessing template: {"SpecialToken"|"Sequence": ...}.
inline TokenizerJson TemplatePieceJson(const char* kind, const std::string& id, int type_id) {
  return {{kind, {{"id", id}, {"type_id", type_id}}}};
}

}  // namespace shoal::native::tok
