#include "runtime/native/tokenizers/model_tokenizer.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/file.h"
#include "runtime/native/tokenizers/converted_tokenizers.h"
#include "runtime/native/tokenizers/sentencepiece_model.h"
#include "runtime/native/tokenizers/siglip_tokenizer.h"
#include "runtime/native/tokenizers/tokenizer_config.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;

Status ConfigError(const std::string& what) {
  return Status(Code::kModelLoadFailed, "tokenizer_config.json: " + what);
}

// A file of `dir`'s slow tokenizer `cls`; missing, it is named beside the
// tokenizer.json that is missing too.
Result<std::string> ReadSlowFile(const fs::path& dir, const char* name, const std::string& cls) {
  std::error_code ec;
  if (!fs::exists(dir / name, ec)) {
    return Status(Code::kModelLoadFailed, dir.string() + " has no tokenizer.json, nor the " + name +
                                              " of its slow tokenizer " + cls);
  }
  return ReadFile((dir / name).string());
}

// The SentencePiece model file `name` of `dir`, parsed.
Result<tok::SentencePieceModel> ReadSentencePiece(const fs::path& dir, const char* name,
                                                  const std::string& cls) {
  SHOAL_ASSIGN_OR_RETURN(std::string bytes, ReadSlowFile(dir, name, cls));
  return tok::ParseSentencePieceModel(bytes, name);
}

Result<std::unique_ptr<Tokenizer>> LoadSiglipTokenizer(const fs::path& dir,
                                                       const nlohmann::json& config) {
  tok::SiglipTokenizerOptions options;
  SHOAL_ASSIGN_OR_RETURN(options.do_lower_case, tok::ConfigFlag(config, "do_lower_case", true));
  SHOAL_ASSIGN_OR_RETURN(const auto eos, tok::ConfigToken(config, "eos_token", "</s>"));
  if (!eos) return ConfigError("eos_token: SiglipTokenizer appends one");
  options.eos_token = *eos;
  if (auto v = config.find("additional_special_tokens");
      v != config.end() && !v->is_null() && !v->empty()) {
    return ConfigError(
        "additional_special_tokens: SiglipTokenizer's are not read (only an empty list)");
  }
  SHOAL_ASSIGN_OR_RETURN(tok::SentencePieceModel model,
                         ReadSentencePiece(dir, "spiece.model", "SiglipTokenizer"));
  SHOAL_ASSIGN_OR_RETURN(std::string json, tok::SiglipTokenizerJson(model, options));
  return Tokenizer::Parse(json);
}

// The slow tokenizer's class: tokenizer_config.json's tokenizer_class
// (a "...Fast" name read as its slow one, whose files are the same), else
// the one transformers maps config.json's model_type to.
std::string SlowClass(const fs::path& dir, const nlohmann::json& config) {
  std::string cls;
  if (auto v = config.find("tokenizer_class"); v != config.end() && v->is_string()) {
    cls = v->get<std::string>();
  }
  if (cls.size() > 4 && cls.ends_with("Fast")) cls.resize(cls.size() - 4);
  if (!cls.empty()) return cls;
  auto text = ReadFile((dir / "config.json").string());
  if (!text.ok()) return cls;
  const nlohmann::json model = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!model.is_object()) return cls;
  const auto type = model.find("model_type");
  if (type == model.end() || !type->is_string()) return cls;
  const std::string t = type->get<std::string>();
  if (t == "bert" || t == "distilbert" || t == "electra") return "BertTokenizer";
  if (t == "roberta") return "RobertaTokenizer";
  if (t == "xlm-roberta") return "XLMRobertaTokenizer";
  if (t == "mpnet") return "MPNetTokenizer";
  if (t == "deberta-v2") return "DebertaV2Tokenizer";
  if (t == "siglip") return "SiglipTokenizer";
  return cls;
}

// The tokenizer.json a converter makes of `dir`'s slow tokenizer `cls`.
Result<std::string> ConvertedJson(const fs::path& dir, const std::string& cls,
                                  const nlohmann::json& config) {
  if (cls == "BertTokenizer" || cls == "DistilBertTokenizer" || cls == "ElectraTokenizer" ||
      cls == "MPNetTokenizer") {
    SHOAL_ASSIGN_OR_RETURN(std::string vocab, ReadSlowFile(dir, "vocab.txt", cls));
    return tok::BertTokenizerJson(
        vocab, config,
        cls == "MPNetTokenizer" ? tok::WordPieceLayout::kMpnet : tok::WordPieceLayout::kBert);
  }
  if (cls == "RobertaTokenizer") {
    SHOAL_ASSIGN_OR_RETURN(std::string vocab, ReadSlowFile(dir, "vocab.json", cls));
    SHOAL_ASSIGN_OR_RETURN(std::string merges, ReadSlowFile(dir, "merges.txt", cls));
    return tok::RobertaTokenizerJson(vocab, merges, config);
  }
  if (cls == "XLMRobertaTokenizer") {
    SHOAL_ASSIGN_OR_RETURN(auto model, ReadSentencePiece(dir, "sentencepiece.bpe.model", cls));
    return tok::XlmRobertaTokenizerJson(model, config);
  }
  if (cls == "DebertaV2Tokenizer") {
    SHOAL_ASSIGN_OR_RETURN(auto model, ReadSentencePiece(dir, "spm.model", cls));
    return tok::DebertaV2TokenizerJson(model, config);
  }
  return Status(Code::kModelLoadFailed, dir.string() +
                                            ": no tokenizer.json, and its slow tokenizer " + cls +
                                            " is not converted here (Bert, DistilBert, Electra, "
                                            "MPNet, Roberta, XLMRoberta, DebertaV2 and "
                                            "Siglip tokenizers are)");
}

Result<std::unique_ptr<Tokenizer>> Converted(const fs::path& dir, const std::string& cls,
                                             const nlohmann::json& config) {
  if (cls == "SiglipTokenizer") return LoadSiglipTokenizer(dir, config);
  SHOAL_ASSIGN_OR_RETURN(std::string json, ConvertedJson(dir, cls, config));
  // Tokens a legacy slow tokenizer added (added_tokens.json) are listed in
  // added_tokens_decoder by any transformers that saves both.
  std::error_code ec;
  if (!config.contains("added_tokens_decoder") && fs::exists(dir / "added_tokens.json", ec)) {
    return Status(Code::kModelLoadFailed,
                  "added_tokens.json: a legacy file not read here; saving the "
                  "tokenizer with a current transformers writes tokenizer.json");
  }
  return Tokenizer::Parse(json);
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& dir) {
  const fs::path root(dir);
  const fs::path fast = root / "tokenizer.json";
  std::error_code ec;
  if (fs::exists(fast, ec)) return Tokenizer::LoadFile(fast.string());
  // No fast tokenizer: the slow one the directory names, converted.
  nlohmann::json config = nlohmann::json::object();
  if (auto text = ReadFile((root / "tokenizer_config.json").string()); text.ok()) {
    config = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded() || !config.is_object()) return ConfigError("not a JSON object");
  }
  const std::string cls = SlowClass(root, config);
  if (!cls.empty()) return Converted(root, cls, config);
  return Tokenizer::LoadFile(fast.string());
}

}  // namespace shoal::native
