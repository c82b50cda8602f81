#include "runtime/native/tokenizers/model_tokenizer.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/file.h"
#include "runtime/native/tokenizers/converted_tokenizers.h"
#include "runtime/native/tokenizers/sentencepiece_model.h"
#include "runtime/native/tokenizers/siglip_tokenizer.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;

Status ConfigError(const std::string& what) {
  return Status(Code::kModelLoadFailed, "tokenizer_config.json: " + what);
}

// A token as tokenizer_config.json saves it: a string, or an AddedToken
// object with its "content".
bool TokenContent(const nlohmann::json& v, std::string* out) {
  if (v.is_string()) {
    *out = v.get<std::string>();
    return true;
  }
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    *out = v["content"].get<std::string>();
    return true;
  }
  return false;
}

Result<std::unique_ptr<Tokenizer>> LoadSiglipTokenizer(const fs::path& dir,
                                                       const nlohmann::json& config) {
  tok::SiglipTokenizerOptions options;
  if (auto v = config.find("do_lower_case"); v != config.end()) {
    if (!v->is_boolean()) return ConfigError("do_lower_case: expected true or false");
    options.do_lower_case = v->get<bool>();
  }
  if (auto v = config.find("eos_token");
      v != config.end() && !TokenContent(*v, &options.eos_token)) {
    return ConfigError("eos_token: expected a token");
  }
  if (auto v = config.find("additional_special_tokens");
      v != config.end() && !v->is_null() && !v->empty()) {
    return ConfigError(
        "additional_special_tokens: SiglipTokenizer's are not read (only an empty list)");
  }
  const fs::path file = dir / "spiece.model";
  SHOAL_ASSIGN_OR_RETURN(std::string bytes, ReadFile(file.string()));
  SHOAL_ASSIGN_OR_RETURN(tok::SentencePieceModel model,
                         tok::ParseSentencePieceModel(bytes, "spiece.model"));
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
  if (t == "siglip") return "SiglipTokenizer";
  return cls;
}

Result<std::unique_ptr<Tokenizer>> Converted(const fs::path& dir, const std::string& cls,
                                             const nlohmann::json& config) {
  if (cls == "SiglipTokenizer") return LoadSiglipTokenizer(dir, config);
  const bool bert =
      cls == "BertTokenizer" || cls == "DistilBertTokenizer" || cls == "ElectraTokenizer";
  if (!bert && cls != "RobertaTokenizer" && cls != "XLMRobertaTokenizer") {
    return Status(
        Code::kModelLoadFailed,
        dir.string() + ": no tokenizer.json, and its slow tokenizer " + cls +
            " is not converted here (BertTokenizer, DistilBertTokenizer, ElectraTokenizer, "
            "RobertaTokenizer, XLMRobertaTokenizer and SiglipTokenizer are)");
  }
  // Tokens a legacy slow tokenizer added (added_tokens.json) are listed in
  // added_tokens_decoder by any transformers that saves both.
  std::error_code ec;
  if (!config.contains("added_tokens_decoder") && fs::exists(dir / "added_tokens.json", ec)) {
    return Status(Code::kModelLoadFailed,
                  "added_tokens.json: a legacy file not read here; saving the "
                  "tokenizer with a current transformers writes tokenizer.json");
  }
  std::string json;
  if (bert) {
    SHOAL_ASSIGN_OR_RETURN(std::string vocab, ReadFile((dir / "vocab.txt").string()));
    SHOAL_ASSIGN_OR_RETURN(json, tok::BertTokenizerJson(vocab, config));
  } else if (cls == "XLMRobertaTokenizer") {
    SHOAL_ASSIGN_OR_RETURN(std::string bytes, ReadFile((dir / "sentencepiece.bpe.model").string()));
    SHOAL_ASSIGN_OR_RETURN(auto model,
                           tok::ParseSentencePieceModel(bytes, "sentencepiece.bpe.model"));
    SHOAL_ASSIGN_OR_RETURN(json, tok::XlmRobertaTokenizerJson(model, config));
  } else {
    SHOAL_ASSIGN_OR_RETURN(std::string vocab, ReadFile((dir / "vocab.json").string()));
    SHOAL_ASSIGN_OR_RETURN(std::string merges, ReadFile((dir / "merges.txt").string()));
    SHOAL_ASSIGN_OR_RETURN(json, tok::RobertaTokenizerJson(vocab, merges, config));
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
