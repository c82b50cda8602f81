#include "runtime/native/tokenizers/model_tokenizer.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/file.h"
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

}  // namespace

Result<std::unique_ptr<Tokenizer>> LoadModelTokenizer(const std::string& dir) {
  const fs::path root(dir);
  const fs::path fast = root / "tokenizer.json";
  std::error_code ec;
  if (fs::exists(fast, ec)) return Tokenizer::LoadFile(fast.string());
  // No fast tokenizer: the slow one tokenizer_config.json names, where this
  // file converts it.
  auto text = ReadFile((root / "tokenizer_config.json").string());
  if (text.ok()) {
    nlohmann::json config = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded() || !config.is_object()) return ConfigError("not a JSON object");
    std::string cls;
    if (auto v = config.find("tokenizer_class"); v != config.end() && v->is_string())
      cls = v->get<std::string>();
    if (cls == "SiglipTokenizer") return LoadSiglipTokenizer(root, config);
    if (!cls.empty()) {
      return Status(Code::kModelLoadFailed,
                    dir + ": no tokenizer.json, and tokenizer_config.json's tokenizer_class " +
                        cls + " is not converted here (SiglipTokenizer's spiece.model is)");
    }
  }
  return Tokenizer::LoadFile(fast.string());
}

}  // namespace shoal::native
