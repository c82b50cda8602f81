#include "runtime/native/tokenizers/siglip_tokenizer.h"

#include <nlohmann/json.hpp>

#include "runtime/native/tokenizers/tokenizer_json_sections.h"

namespace shoal::native::tok {
namespace {

using JsonOut = TokenizerJson;

// Python's string.punctuation, as a PCRE class.
constexpr const char* kAsciiPunctuation = R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])";
// What Python's str.isspace() holds true (and so re's \s and str.strip()):
// not PCRE's \s, which leaves out U+001C–U+001F.
constexpr const char* kPythonWhitespace =
    R"([\t\n\x{0b}\x{0c}\r\x{1c}-\x{1f} \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]+)";

constexpr const char* kFinalCapitalSigma =
    R"((?<=[\p{Lu}\p{Ll}\p{Lt}])\x{03a3}(?![\p{Lu}\p{Ll}\p{Lt}]))";

Status Unsupported(const std::string& what) {
  return Status(Code::kModelLoadFailed,
                "spiece.model: " + what + " (SiglipTokenizer's conversion)");
}

}  // namespace

Result<std::string> SiglipTokenizerJson(const SentencePieceModel& model,
                                        const SiglipTokenizerOptions& options) {
  if (model.model_type != SentencePieceModel::ModelType::kUnigram) {
    return Unsupported("only a Unigram model is read");
  }
  if (!model.escape_whitespaces) return Unsupported("escape_whitespaces false is not read");
  JsonOut vocab = JsonOut::array();
  int32_t eos = -1;
  for (size_t id = 0; id < model.pieces.size(); ++id) {
    const SentencePieceModel::Piece& p = model.pieces[id];
    if (p.type == SentencePieceModel::PieceType::kUserDefined) {
      return Unsupported("user-defined piece '" + p.piece + "' is not supported");
    }
    if (p.piece == options.eos_token) eos = static_cast<int32_t>(id);
    vocab.push_back(JsonOut::array({p.piece, static_cast<double>(p.score)}));
  }
  if (eos < 0) return Unsupported("eos_token '" + options.eos_token + "' is not one of its pieces");

  // canonicalize_text, then do_lower_case, then SentencePiece's own rules.
  JsonOut normalizers =
      JsonOut::array({ReplaceJson(kAsciiPunctuation, ""), ReplaceJson(kPythonWhitespace, " "),
                      StripJson(true, true)});
  if (options.do_lower_case) {
    // Python's str.lower() ends a word's capital sigma as "ς" (Unicode's
    // Final_Sigma; case-ignorable characters between are not looked past).
    normalizers.push_back(ReplaceJson(kFinalCapitalSigma, "\u03c2"));
    normalizers.push_back({{"type", "Lowercase"}});
  }
  if (!model.precompiled_charsmap.empty()) normalizers.push_back(PrecompiledJson(model));
  if (model.remove_extra_whitespaces) {
    // SentencePiece's, on "▁" + text: spaces its rules made are collapsed and
    // trailing ones dropped; a leading one stays (it follows the "▁").
    normalizers.push_back(ReplaceJson(" {2,}", " "));
    normalizers.push_back(StripJson(false, true));
  }

  const JsonOut eos_token = TemplatePieceJson("SpecialToken", options.eos_token, 0);
  const JsonOut a = TemplatePieceJson("Sequence", "A", 0);
  const JsonOut b = TemplatePieceJson("Sequence", "B", 0);
  JsonOut tokenizer = {
      {"version", "1.0"},
      {"added_tokens", JsonOut::array()},  // the text is canonicalized before any could match
      {"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
      {"pre_tokenizer", MetaspaceJson()},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", JsonOut::array({a, eos_token})},
        {"pair", JsonOut::array({a, eos_token, b, eos_token})},
        {"special_tokens",
         {{options.eos_token,
           {{"id", options.eos_token}, {"ids", {eos}}, {"tokens", {options.eos_token}}}}}}}},
      {"decoder", MetaspaceJson()},
      {"model",
       {{"type", "Unigram"},
        {"unk_id", model.unk_id},
        {"vocab", vocab},
        {"byte_fallback", model.byte_fallback}}},
  };
  return tokenizer.dump();
}

}  // namespace shoal::native::tok
