// Agreement with @huggingface/jinja: every template of reference_templates.json
// on every case of reference_cases.json, byte for byte, or raising the same
// message. Run by reference_test.sh, which has Node write the expected
// renderings (tests/reference/chat_template_reference.mjs) and names the file
// in SHOAL_CHAT_REFERENCE (and the cases file in SHOAL_CHAT_CASES); skipped
// without it.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "runtime/native/chat/chat_template.h"

namespace shoal::native {
namespace {

const std::string kSourceDir = SHOAL_SOURCE_DIR;

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// Where two renderings part, with a little context, JSON-quoted.
std::string FirstDifference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  size_t from = i < 40 ? 0 : i - 40;
  return "first difference at byte " + std::to_string(i) +
         "\n  reference: " + nlohmann::json(want.substr(from, 100)).dump() +
         "\n  shoal:     " + nlohmann::json(got.substr(from, 100)).dump();
}

struct LoadedTemplate {
  std::unique_ptr<ChatTemplate> chat_template;
  nlohmann::json variables;  // bos/eos tokens and the entry's extra variables
};

LoadedTemplate Load(const nlohmann::json& entry) {
  LoadedTemplate out;
  out.variables = entry.value("variables", nlohmann::json::object());
  if (entry.contains("tokenizer_config")) {
    auto config = LoadChatConfig(kSourceDir + "/" + entry["tokenizer_config"].get<std::string>());
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    if (!config.ok()) return out;
    out.chat_template = std::move(config->chat_template);
    out.variables["bos_token"] = config->bos_token;
    out.variables["eos_token"] = config->eos_token;
  } else {
    std::ifstream in(kSourceDir + "/" + entry["template"].get<std::string>());
    std::stringstream source;
    source << in.rdbuf();
    auto parsed = ChatTemplate::Parse(source.str());
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
    if (!parsed.ok()) return out;
    out.chat_template = std::move(parsed).value();
    out.variables["bos_token"] = entry["bos_token"];
    out.variables["eos_token"] = entry["eos_token"];
  }
  return out;
}

TEST(ChatTemplateReference, MatchesHuggingFaceJinja) {
  const char* expected_path = std::getenv("SHOAL_CHAT_REFERENCE");
  if (expected_path == nullptr) GTEST_SKIP() << "run by tests/chat/reference_test.sh";

  std::map<std::pair<std::string, std::string>, nlohmann::json> expected;
  std::ifstream in(expected_path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto e = nlohmann::json::parse(line);
    expected[{e["template"], e["case"]}] = e;
  }
  const auto entries = ReadJson(kSourceDir + "/tests/chat/reference_templates.json");
  const char* cases_path = std::getenv("SHOAL_CHAT_CASES");
  const auto cases = ReadJson(cases_path ? cases_path : kSourceDir + "/tests/chat/reference_cases.json");
  ASSERT_EQ(expected.size(), entries.size() * cases.size());

  int identical = 0, raised = 0;
  for (const auto& entry : entries) {
    const std::string name = entry["name"];
    LoadedTemplate t = Load(entry);
    ASSERT_NE(t.chat_template, nullptr) << name;
    for (const auto& c : cases) {
      const std::string case_name = c["name"];
      nlohmann::json variables = t.variables;
      variables.update(c["variables"]);
      const nlohmann::json& want = expected.at({name, case_name});
      auto got = t.chat_template->Render(variables);
      SCOPED_TRACE(name + " / " + case_name);
      if (want.contains("error")) {
        ASSERT_FALSE(got.ok()) << "the reference raised \"" << want["error"].get<std::string>()
                               << "\"; shoal rendered " << nlohmann::json(got.value()).dump();
        EXPECT_EQ(got.status().code(), Code::kInvalidInput);
        EXPECT_EQ(got.status().message(), want["error"].get<std::string>());
        ++raised;
        continue;
      }
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      const std::string& output = want["output"].get_ref<const std::string&>();
      EXPECT_EQ(got.value(), output) << FirstDifference(output, got.value());
      identical += got.value() == output;
    }
  }
  std::cout << entries.size() << " templates x " << cases.size() << " cases: " << identical
            << " renderings identical, " << raised << " raise in both\n";
}

}  // namespace
}  // namespace shoal::native
