#include "runtime/native/tokenizers/converted_tokenizers.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <optional>
#include <unordered_map>
#include <vector>

#include "runtime/native/tokenizers/tokenizer_config.h"
#include "runtime/native/tokenizers/tokenizer_json_sections.h"

namespace shoal::native::tok {
namespace {

using JsonIn = nlohmann::json;
using JsonOut = TokenizerJson;

Status FileError(std::string_view file, const std::string& what) {
  return Status(Code::kModelLoadFailed, std::string(file) + ": " + what);
}

JsonOut AddedTokenJson(int64_t id, const std::string& content, bool lstrip = false) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", lstrip},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

// tokenizer_config.json's added_tokens_decoder, every entry with its flags;
// without one, `specials` (each found in the vocabulary by `id_of`).
struct SlowSpecial {
  std::optional<std::string> content;
  bool lstrip = false;
};
using IdOf = std::function<std::optional<int64_t>(const std::string&)>;

// Looks ids up in `ids` (which must outlive it).
IdOf Lookup(const std::unordered_map<std::string, int64_t>& ids) {
  return [&ids](const std::string& t) -> std::optional<int64_t> {
    auto it = ids.find(t);
    return it == ids.end() ? std::nullopt : std::optional<int64_t>(it->second);
  };
}

Result<JsonOut> SlowAddedTokens(const JsonIn& config, const std::vector<SlowSpecial>& specials,
                                std::string_view vocab_file, const IdOf& id_of) {
  JsonOut out = JsonOut::array();
  auto decoder = config.find("added_tokens_decoder");
  if (decoder != config.end() && decoder->is_object()) {
    for (const auto& [key, t] : decoder->items()) {
      int64_t id = -1;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
      if (ec != std::errc() || end != key.data() + key.size() || id < 0 || !t.is_object() ||
          !t.contains("content") || !t["content"].is_string()) {
        return FileError("tokenizer_config.json",
                         "added_tokens_decoder." + key + ": expected an id and a token");
      }
      JsonOut token = AddedTokenJson(id, t["content"].get<std::string>());
      for (const char* flag : {"single_word", "lstrip", "rstrip", "normalized", "special"}) {
        if (auto f = t.find(flag); f != t.end() && f->is_boolean()) token[flag] = f->get<bool>();
      }
      out.push_back(std::move(token));
    }
    return out;
  }
  for (const SlowSpecial& s : specials) {
    if (!s.content) continue;
    const std::optional<int64_t> id = id_of(*s.content);
    if (!id) return FileError(vocab_file, "the special token " + *s.content + " is not in it");
    out.push_back(AddedTokenJson(*id, *s.content, s.lstrip));
  }
  return out;
}

}  // namespace

Result<std::string> BertTokenizerJson(std::string_view vocab_txt, const JsonIn& config,
                                      WordPieceLayout layout) {
  const bool mpnet = layout == WordPieceLayout::kMpnet;
  if (!simdjson::validate_utf8(vocab_txt.data(), vocab_txt.size()))
    return FileError("vocab.txt", "not UTF-8");
  // vocab.txt as the slow tokenizer reads it: a token a line (its "\n"
  // removed, nothing else), the id its line's number, a repeated token
  // taking the later line's.
  JsonOut vocab = JsonOut::object();
  std::unordered_map<std::string, int64_t> ids;
  int64_t line = 0;
  for (size_t at = 0; at < vocab_txt.size(); ++line) {
    size_t nl = vocab_txt.find('\n', at);
    if (nl == std::string_view::npos) nl = vocab_txt.size();
    ids[std::string(vocab_txt.substr(at, nl - at))] = line;
    at = nl + 1;
  }
  if (ids.empty()) return FileError("vocab.txt", "empty");
  for (const auto& [token, id] : ids) vocab[token] = id;
  const IdOf id_of = Lookup(ids);

  SHOAL_ASSIGN_OR_RETURN(const bool basic, ConfigFlag(config, "do_basic_tokenize", true));
  SHOAL_ASSIGN_OR_RETURN(const bool lower, ConfigFlag(config, "do_lower_case", true));
  SHOAL_ASSIGN_OR_RETURN(const bool chinese, ConfigFlag(config, "tokenize_chinese_chars", true));
  JsonOut strip_accents = nullptr;  // null: as do_lower_case
  if (auto v = config.find("strip_accents"); v != config.end() && !v->is_null()) {
    if (!v->is_boolean())
      return FileError("tokenizer_config.json", "strip_accents: expected true, false or null");
    strip_accents = v->get<bool>();
  }
  SHOAL_ASSIGN_OR_RETURN(const auto unk, ConfigToken(config, "unk_token", "[UNK]"));
  SHOAL_ASSIGN_OR_RETURN(const auto sep,
                         ConfigToken(config, "sep_token", mpnet ? "</s>" : "[SEP]"));
  SHOAL_ASSIGN_OR_RETURN(const auto pad,
                         ConfigToken(config, "pad_token", mpnet ? "<pad>" : "[PAD]"));
  SHOAL_ASSIGN_OR_RETURN(const auto cls, ConfigToken(config, "cls_token", mpnet ? "<s>" : "[CLS]"));
  SHOAL_ASSIGN_OR_RETURN(const auto mask,
                         ConfigToken(config, "mask_token", mpnet ? "<mask>" : "[MASK]"));
  if (!unk || !sep || !cls)
    return FileError("tokenizer_config.json", "BERT's tokenizer needs unk, sep and cls tokens");
  const auto cls_id = id_of(*cls), sep_id = id_of(*sep);
  if (!cls_id || !sep_id || !id_of(*unk)) {
    return FileError("vocab.txt", "the special tokens " + *cls + ", " + *sep + " and " + *unk +
                                      " must be in it");
  }
  SHOAL_ASSIGN_OR_RETURN(
      JsonOut added,
      SlowAddedTokens(config, {{unk}, {sep}, {pad}, {cls}, {mask, mpnet}}, "vocab.txt", id_of));
  // MPNet separates a pair with two of its sep tokens.
  JsonOut pair = JsonOut::array({TemplatePieceJson("SpecialToken", *cls, 0),
                                 TemplatePieceJson("Sequence", "A", 0),
                                 TemplatePieceJson("SpecialToken", *sep, 0)});
  if (mpnet) pair.push_back(TemplatePieceJson("SpecialToken", *sep, 0));
  pair.push_back(TemplatePieceJson("Sequence", "B", 1));
  pair.push_back(TemplatePieceJson("SpecialToken", *sep, 1));

  JsonOut tokenizer = {
      {"version", "1.0"},
      {"added_tokens", std::move(added)},
      // Without a basic tokenizer the converter turns every option off.
      {"normalizer",
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", basic && chinese},
        {"strip_accents", basic ? strip_accents : JsonOut(false)},
        {"lowercase", basic && lower}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", JsonOut::array({TemplatePieceJson("SpecialToken", *cls, 0),
                                   TemplatePieceJson("Sequence", "A", 0),
                                   TemplatePieceJson("SpecialToken", *sep, 0)})},
        {"pair", std::move(pair)},
        {"special_tokens",
         {{*cls, {{"id", *cls}, {"ids", {*cls_id}}, {"tokens", {*cls}}}},
          {*sep, {{"id", *sep}, {"ids", {*sep_id}}, {"tokens", {*sep}}}}}}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", *unk},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100},
        {"vocab", std::move(vocab)}}},
  };
  return tokenizer.dump();
}

Result<std::string> RobertaTokenizerJson(std::string_view vocab_json, std::string_view merges_txt,
                                         const JsonIn& config) {
  JsonIn vocab = JsonIn::parse(vocab_json, nullptr, /*allow_exceptions=*/false);
  if (vocab.is_discarded() || !vocab.is_object())
    return FileError("vocab.json", "expected a JSON object of tokens");
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0)
      return FileError("vocab.json", token + ": expected an id");
  }
  const IdOf id_of = [&](const std::string& t) -> std::optional<int64_t> {
    auto it = vocab.find(t);
    return it == vocab.end() ? std::nullopt : std::optional<int64_t>(it->get<int64_t>());
  };

  if (!simdjson::validate_utf8(merges_txt.data(), merges_txt.size()))
    return FileError("merges.txt", "not UTF-8");
  // merges.txt as the slow tokenizer reads it: split at "\n", the first line
  // ("#version: ...") and the last (empty after the final newline) dropped,
  // each a pair split at whitespace.
  std::vector<std::string_view> lines;
  for (size_t at = 0;;) {
    const size_t nl = merges_txt.find('\n', at);
    lines.push_back(
        merges_txt.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  JsonOut merges = JsonOut::array();
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    std::vector<std::string> parts;
    for (size_t at = 0; at < lines[i].size();) {
      const size_t start = lines[i].find_first_not_of(" \t\r\f\v", at);
      if (start == std::string_view::npos) break;
      const size_t end = std::min(lines[i].find_first_of(" \t\r\f\v", start), lines[i].size());
      parts.emplace_back(lines[i].substr(start, end - start));
      at = end;
    }
    if (parts.size() != 2)
      return FileError("merges.txt", "line " + std::to_string(i + 1) + " is not a pair of tokens");
    merges.push_back(JsonOut::array({parts[0], parts[1]}));
  }

  SHOAL_ASSIGN_OR_RETURN(const bool prefix_space, ConfigFlag(config, "add_prefix_space", false));
  SHOAL_ASSIGN_OR_RETURN(const bool trim_offsets, ConfigFlag(config, "trim_offsets", true));
  SHOAL_ASSIGN_OR_RETURN(const auto bos, ConfigToken(config, "bos_token", "<s>"));
  SHOAL_ASSIGN_OR_RETURN(const auto eos, ConfigToken(config, "eos_token", "</s>"));
  SHOAL_ASSIGN_OR_RETURN(const auto unk, ConfigToken(config, "unk_token", "<unk>"));
  SHOAL_ASSIGN_OR_RETURN(const auto sep, ConfigToken(config, "sep_token", "</s>"));
  SHOAL_ASSIGN_OR_RETURN(const auto cls, ConfigToken(config, "cls_token", "<s>"));
  SHOAL_ASSIGN_OR_RETURN(const auto pad, ConfigToken(config, "pad_token", "<pad>"));
  SHOAL_ASSIGN_OR_RETURN(const auto mask, ConfigToken(config, "mask_token", "<mask>"));
  if (!sep || !cls || !id_of(*sep) || !id_of(*cls)) {
    return FileError("vocab.json", "RoBERTa's tokenizer needs its sep and cls tokens in it");
  }
  // The slow tokenizer's <mask> takes the space before it (lstrip).
  SHOAL_ASSIGN_OR_RETURN(
      JsonOut added,
      SlowAddedTokens(config, {{bos}, {pad}, {eos}, {unk}, {mask, true}}, "vocab.json", id_of));
  JsonOut byte_level = {{"type", "ByteLevel"},
                        {"add_prefix_space", prefix_space},
                        {"trim_offsets", true},
                        {"use_regex", true}};
  JsonOut tokenizer = {
      {"version", "1.0"},
      {"added_tokens", std::move(added)},
      {"pre_tokenizer", byte_level},
      {"post_processor",
       {{"type", "RobertaProcessing"},
        {"sep", {*sep, *id_of(*sep)}},
        {"cls", {*cls, *id_of(*cls)}},
        {"trim_offsets", trim_offsets},
        {"add_prefix_space", prefix_space}}},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"vocab", std::move(vocab)},
        {"merges", std::move(merges)}}},
  };
  return tokenizer.dump();
}

Result<std::string> XlmRobertaTokenizerJson(const SentencePieceModel& model, const JsonIn& config) {
  using Type = SentencePieceModel::PieceType;
  // The converter drops SentencePiece's first three pieces for fairseq's
  // four: they must be its unknown and control pieces.
  if (model.model_type != SentencePieceModel::ModelType::kUnigram || model.pieces.size() < 3 ||
      model.pieces[0].type != Type::kUnknown || model.pieces[1].type != Type::kControl ||
      model.pieces[2].type != Type::kControl) {
    return FileError("sentencepiece.bpe.model",
                     "not XLM-R's layout (a Unigram model whose first pieces are <unk> <s> </s>)");
  }
  JsonOut vocab = JsonOut::array({JsonOut::array({"<s>", 0.0}), JsonOut::array({"<pad>", 0.0}),
                                  JsonOut::array({"</s>", 0.0}), JsonOut::array({"<unk>", 0.0})});
  std::unordered_map<std::string, int64_t> ids = {
      {"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}};
  for (size_t i = 3; i < model.pieces.size(); ++i) {
    if (model.pieces[i].type == Type::kUserDefined) {
      return FileError("sentencepiece.bpe.model",
                       "user-defined piece '" + model.pieces[i].piece + "' is not supported");
    }
    ids.emplace(model.pieces[i].piece, static_cast<int64_t>(vocab.size()));
    vocab.push_back(
        JsonOut::array({model.pieces[i].piece, static_cast<double>(model.pieces[i].score)}));
  }
  ids.emplace("<mask>", static_cast<int64_t>(vocab.size()));
  vocab.push_back(JsonOut::array({"<mask>", 0.0}));
  const IdOf id_of = Lookup(ids);
  SHOAL_ASSIGN_OR_RETURN(const auto bos, ConfigToken(config, "bos_token", "<s>"));
  SHOAL_ASSIGN_OR_RETURN(const auto pad, ConfigToken(config, "pad_token", "<pad>"));
  SHOAL_ASSIGN_OR_RETURN(const auto eos, ConfigToken(config, "eos_token", "</s>"));
  SHOAL_ASSIGN_OR_RETURN(const auto unk, ConfigToken(config, "unk_token", "<unk>"));
  SHOAL_ASSIGN_OR_RETURN(const auto mask, ConfigToken(config, "mask_token", "<mask>"));
  SHOAL_ASSIGN_OR_RETURN(JsonOut added,
                         SlowAddedTokens(config, {{bos}, {pad}, {eos}, {unk}, {mask, true}},
                                         "sentencepiece.bpe.model", id_of));

  JsonOut normalizers = JsonOut::array();
  if (!model.precompiled_charsmap.empty()) normalizers.push_back(PrecompiledJson(model));
  normalizers.push_back(StripJson(false, true));
  normalizers.push_back(ReplaceJson(" {2,}", "\u2581"));
  const JsonOut metaspace = MetaspaceJson();
  JsonOut tokenizer = {
      {"version", "1.0"},
      {"added_tokens", std::move(added)},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", std::move(normalizers)}}},
      {"pre_tokenizer", metaspace},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", JsonOut::array({TemplatePieceJson("SpecialToken", "<s>", 0),
                                   TemplatePieceJson("Sequence", "A", 0),
                                   TemplatePieceJson("SpecialToken", "</s>", 0)})},
        {"pair",
         JsonOut::array(
             {TemplatePieceJson("SpecialToken", "<s>", 0), TemplatePieceJson("Sequence", "A", 0),
              TemplatePieceJson("SpecialToken", "</s>", 0),
              TemplatePieceJson("SpecialToken", "</s>", 0), TemplatePieceJson("Sequence", "B", 0),
              TemplatePieceJson("SpecialToken", "</s>", 0)})},
        {"special_tokens",
         {{"<s>", {{"id", "<s>"}, {"ids", {0}}, {"tokens", {"<s>"}}}},
          {"</s>", {{"id", "</s>"}, {"ids", {2}}, {"tokens", {"</s>"}}}}}}}},
      {"decoder", metaspace},
      {"model",
       {{"type", "Unigram"}, {"unk_id", 3}, {"vocab", std::move(vocab)}, {"byte_fallback", false}}},
  };
  return tokenizer.dump();
}

Result<std::string> DebertaV2TokenizerJson(const SentencePieceModel& model, const JsonIn& config) {
  if (model.model_type != SentencePieceModel::ModelType::kUnigram) {
    return FileError("spm.model", "only a Unigram model is read");
  }
  // SentencePiece's own ids; [MASK], which the slow tokenizer adds, one past.
  JsonOut vocab = JsonOut::array();
  std::unordered_map<std::string, int64_t> ids;
  for (const SentencePieceModel::Piece& p : model.pieces) {
    if (p.type == SentencePieceModel::PieceType::kUserDefined) {
      return FileError("spm.model", "user-defined piece '" + p.piece + "' is not supported");
    }
    ids.emplace(p.piece, static_cast<int64_t>(vocab.size()));
    vocab.push_back(JsonOut::array({p.piece, static_cast<double>(p.score)}));
  }
  SHOAL_ASSIGN_OR_RETURN(const auto mask, ConfigToken(config, "mask_token", "[MASK]"));
  if (mask) ids.emplace(*mask, static_cast<int64_t>(model.pieces.size()));
  const IdOf id_of = Lookup(ids);
  SHOAL_ASSIGN_OR_RETURN(const bool lower, ConfigFlag(config, "do_lower_case", false));
  SHOAL_ASSIGN_OR_RETURN(const bool split_by_punct, ConfigFlag(config, "split_by_punct", false));
  SHOAL_ASSIGN_OR_RETURN(const auto unk, ConfigToken(config, "unk_token", "[UNK]"));
  SHOAL_ASSIGN_OR_RETURN(const auto sep, ConfigToken(config, "sep_token", "[SEP]"));
  SHOAL_ASSIGN_OR_RETURN(const auto pad, ConfigToken(config, "pad_token", "[PAD]"));
  SHOAL_ASSIGN_OR_RETURN(const auto cls, ConfigToken(config, "cls_token", "[CLS]"));
  if (!sep || !cls || !id_of(*sep) || !id_of(*cls)) {
    return FileError("spm.model",
                     "DeBERTa's tokenizer needs its sep and cls tokens among its pieces");
  }
  SHOAL_ASSIGN_OR_RETURN(
      JsonOut added,
      SlowAddedTokens(config, {{pad}, {cls}, {sep}, {unk}, {mask}}, "spm.model", id_of));

  JsonOut normalizers = JsonOut::array();
  if (lower) normalizers.push_back({{"type", "Lowercase"}});
  normalizers.push_back(StripJson(true, true));
  if (!model.precompiled_charsmap.empty()) normalizers.push_back(PrecompiledJson(model));
  normalizers.push_back(ReplaceJson(" {2,}", " "));
  const JsonOut metaspace = MetaspaceJson();
  JsonOut pre = JsonOut::array();
  if (split_by_punct) pre.push_back({{"type", "Punctuation"}, {"behavior", "Isolated"}});
  pre.push_back(metaspace);
  const int64_t cls_id = *id_of(*cls), sep_id = *id_of(*sep);
  JsonOut tokenizer = {
      {"version", "1.0"},
      {"added_tokens", std::move(added)},
      {"normalizer", {{"type", "Sequence"}, {"normalizers", std::move(normalizers)}}},
      {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", std::move(pre)}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", JsonOut::array({TemplatePieceJson("SpecialToken", *cls, 0),
                                   TemplatePieceJson("Sequence", "A", 0),
                                   TemplatePieceJson("SpecialToken", *sep, 0)})},
        {"pair",
         JsonOut::array(
             {TemplatePieceJson("SpecialToken", *cls, 0), TemplatePieceJson("Sequence", "A", 0),
              TemplatePieceJson("SpecialToken", *sep, 0), TemplatePieceJson("Sequence", "B", 1),
              TemplatePieceJson("SpecialToken", *sep, 1)})},
        {"special_tokens",
         {{*cls, {{"id", *cls}, {"ids", {cls_id}}, {"tokens", {*cls}}}},
          {*sep, {{"id", *sep}, {"ids", {sep_id}}, {"tokens", {*sep}}}}}}}},
      {"decoder", metaspace},
      {"model",
       {{"type", "Unigram"},
        {"unk_id", model.unk_id},
        {"vocab", std::move(vocab)},
        {"byte_fallback", false}}},
  };
  return tokenizer.dump();
}

}  // namespace shoal::native::tok
