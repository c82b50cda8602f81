#include "runtime/native/chat/chat_template.h"

#include <filesystem>

#include "common/file.h"
#include "runtime/native/chat/jinja_interpreter.h"
#include "runtime/native/chat/jinja_lexer.h"
#include "runtime/native/chat/jinja_parser.h"

namespace shoal::native {
namespace {

class JinjaChatTemplate final : public ChatTemplate {
 public:
  JinjaChatTemplate(std::string source, jinja::Program program)
      : source_(std::move(source)), program_(std::move(program)) {}

  Result<std::string> Render(const nlohmann::json& variables) const override {
    if (!variables.is_object())
      return InvalidInput("chat template variables must be a JSON object");
    SHOAL_ASSIGN_OR_RETURN(jinja::Value vars, jinja::FromJson(variables));
    return jinja::Render(source_, program_, vars);
  }

 private:
  const std::string source_;  // for the positions in errors
  const jinja::Program program_;
};

Status LoadFailed(const std::string& path, const std::string& message) {
  return Status(Code::kModelLoadFailed, path + ": " + message);
}

// "bos_token": "<s>", {"content": "<s>", ...}, null or absent.
Result<std::string> TokenString(const nlohmann::json& config, const char* key,
                                const std::string& path) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) {
    auto content = it->find("content");
    if (content != it->end() && content->is_string()) return content->get<std::string>();
  }
  return LoadFailed(path, std::string(key) + " must be a string, {\"content\": string} or null");
}

// The "chat_template" string, or the template of the list entry named
// "default"; empty when there is none.
Result<std::string> TemplateSource(const nlohmann::json& config, const std::string& path) {
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const auto& entry : *it) {
      if (!entry.is_object()) break;
      auto name = entry.find("name");
      auto source = entry.find("template");
      if (name != entry.end() && *name == "default" && source != entry.end() &&
          source->is_string()) {
        return source->get<std::string>();
      }
    }
    return std::string();
  }
  return LoadFailed(path, "chat_template must be a string or a list of {name, template}");
}

// Where tokenizer_config.json has none, the template saved beside it: a
// chat_template.jinja (transformers ≥ 4.50), or a processor's
// chat_template.json ({"chat_template": ...}, vision-language models);
// empty when neither is there.
Result<std::string> TemplateBeside(const std::string& tokenizer_config_path) {
  const std::filesystem::path dir = std::filesystem::path(tokenizer_config_path).parent_path();
  std::error_code ec;
  if (std::filesystem::exists(dir / "chat_template.jinja", ec)) {
    auto text = ReadFile((dir / "chat_template.jinja").string());
    if (!text.ok()) return Status(Code::kModelLoadFailed, text.status().message());
    return std::move(text).value();
  }
  const std::string json_path = (dir / "chat_template.json").string();
  if (!std::filesystem::exists(json_path, ec)) return std::string();
  auto text = ReadFile(json_path);
  if (!text.ok()) return Status(Code::kModelLoadFailed, text.status().message());
  auto config = nlohmann::json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return LoadFailed(json_path, "not a JSON object");
  return TemplateSource(config, json_path);
}

}  // namespace

Result<std::unique_ptr<ChatTemplate>> ChatTemplate::Parse(std::string_view source) {
  SHOAL_ASSIGN_OR_RETURN(std::vector<jinja::Token> tokens, jinja::Tokenize(source));
  SHOAL_ASSIGN_OR_RETURN(jinja::Program program, jinja::Parse(source, tokens));
  return std::unique_ptr<ChatTemplate>(
      std::make_unique<JinjaChatTemplate>(std::string(source), std::move(program)));
}

Result<ChatConfig> LoadChatConfig(const std::string& tokenizer_config_path) {
  const std::string& path = tokenizer_config_path;
  auto text = ReadFile(path);
  if (!text.ok()) return Status(Code::kModelLoadFailed, text.status().message());
  auto config = nlohmann::json::parse(text.value(), nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return LoadFailed(path, "not a JSON object");

  ChatConfig out;
  SHOAL_ASSIGN_OR_RETURN(out.bos_token, TokenString(config, "bos_token", path));
  SHOAL_ASSIGN_OR_RETURN(out.eos_token, TokenString(config, "eos_token", path));
  SHOAL_ASSIGN_OR_RETURN(std::string source, TemplateSource(config, path));
  if (source.empty()) {
    SHOAL_ASSIGN_OR_RETURN(source, TemplateBeside(path));
  }
  if (!source.empty()) {
    auto parsed = ChatTemplate::Parse(source);
    if (!parsed.ok()) return LoadFailed(path, parsed.status().message());
    out.chat_template = std::move(parsed).value();
  }
  return out;
}

}  // namespace shoal::native
