// Output held to a format (src/runtime/structured): UTF-8 ranges against an
// encoder written here, GBNF grammars matched byte by byte, JSON Schema
// grammars whose sentences nlohmann::json parses and a hand-written check
// validates, regular expressions against std::regex (ECMAScript), masks
// over a vocabulary against checking each token alone, and constrained
// sampling against the renormalised distribution it must draw from.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "runtime/sampler.h"
#include "runtime/structured/gbnf.h"
#include "runtime/structured/grammar_cache.h"
#include "runtime/structured/grammar_state.h"
#include "runtime/structured/json_schema_grammar.h"
#include "runtime/structured/output_constraint.h"
#include "runtime/structured/regex_grammar.h"
#include "runtime/structured/token_grammar.h"
#include "runtime/structured/tool_calls.h"
#include "runtime/structured/utf8_ranges.h"

namespace shoal::structured {
namespace {

using nlohmann::json;

std::string EncodeUtf8(uint32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

bool SequencesMatch(const std::vector<Utf8Sequence>& seqs, const std::string& bytes) {
  for (const Utf8Sequence& seq : seqs) {
    if (seq.size() != bytes.size()) continue;
    bool all = true;
    for (size_t i = 0; i < seq.size(); ++i) {
      const uint8_t b = static_cast<uint8_t>(bytes[i]);
      all = all && b >= seq[i].first && b <= seq[i].second;
    }
    if (all) return true;
  }
  return false;
}

TEST(Utf8Ranges, EveryCodePointMatchesExactlyWhenInTheRange) {
  const std::pair<uint32_t, uint32_t> ranges[] = {
      {0x20, 0x10FFFF}, {0x7A, 0x80A}, {0xD000, 0xE100}, {0x10000, 0x10000}, {0xFFFF, 0x10FFFF}, {0x3B1, 0x3C9}};
  for (auto [lo, hi] : ranges) {
    std::vector<Utf8Sequence> seqs;
    AppendUtf8Sequences(lo, hi, &seqs);
    for (uint32_t c = 0; c <= kMaxCodePoint; c += (c < 0x11000 ? 1 : 97)) {
      if (c >= 0xD800 && c <= 0xDFFF) continue;
      EXPECT_EQ(SequencesMatch(seqs, EncodeUtf8(c)), c >= lo && c <= hi) << std::hex << c << " in " << lo << "-" << hi;
    }
  }
}

// Whether `text` is a whole sentence of `g`.
bool Matches(const Grammar& g, std::string_view text) {
  GrammarState s;
  return GrammarState::Start(g).AdvanceAll(text, &s) && s.accepting();
}

std::shared_ptr<const Grammar> Compile(const std::string& gbnf) {
  auto g = CompileGbnf(gbnf, "test");
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << gbnf;
  return g.ok() ? *g : nullptr;
}

TEST(Gbnf, MatchesWhatTheGrammarSaysByteByByte) {
  auto g = Compile(R"(root ::= "a" x{2,3} ( "-" | [0-9]+ )? "é"
x ::= [b-c] | "d"
)");
  ASSERT_TRUE(g);
  for (const char* yes : {"abbé", "abcdé", "abb-é", "abd0123é"}) EXPECT_TRUE(Matches(*g, yes)) << yes;
  for (const char* no : {"abé", "abbbbé", "abb--é", "abbe", "abb", "abbé!"}) EXPECT_FALSE(Matches(*g, no)) << no;
  // A prefix is alive; it is not a sentence yet.
  GrammarState s;
  EXPECT_TRUE(GrammarState::Start(*g).AdvanceAll("abb\xC3", &s));
  EXPECT_FALSE(s.accepting());
  EXPECT_TRUE(s.can_continue());
}

TEST(Gbnf, NegatedClassesAreCodePointsNotBytes) {
  auto g = Compile(R"(root ::= "\"" [^"\\\x00-\x1f]* "\"")");
  ASSERT_TRUE(g);
  EXPECT_TRUE(Matches(*g, "\"plain\""));
  EXPECT_TRUE(Matches(*g, "\"caf\xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x90\x9F\""));
  EXPECT_FALSE(Matches(*g, "\"a\"b\""));
  EXPECT_FALSE(Matches(*g, "\"\n\""));
  EXPECT_FALSE(Matches(*g, "\"\xC3\""));       // a cut character
  EXPECT_FALSE(Matches(*g, "\"\xED\xA0\x80\""));  // a surrogate
}

TEST(Gbnf, RefusesWhatCannotBeMatched) {
  for (const char* bad : {"root ::= root \"a\"", "root ::= x\nx ::= \"\"? root", "root ::= \"a\" root",
                          "root ::= missing", "x ::= \"a\"", "root ::= \"a", "root ::= [z-a]", "root ::= ( \"a\"",
                          "root ::= \"\\uD800\"", "root ::= \"\xC0\xAF\""}) {
    auto g = CompileGbnf(bad, "f");
    EXPECT_FALSE(g.ok()) << bad;
    if (!g.ok()) {
      EXPECT_EQ(g.status().code(), Code::kInvalidInput);
      EXPECT_EQ(g.status().message().rfind("f: ", 0), 0u) << g.status().message();
    }
  }
}

TEST(JsonGrammar, JsonObjectAcceptsTheObjectsJsonParses) {
  auto g = Compile(JsonObjectGrammar());
  ASSERT_TRUE(g);
  for (const char* doc : {"{}", "{\"a\": 1}", "{\"a\": [1, -2.5e3, true, null, \"x\\n\\u00e9\"], \"b\": {\"c\": {}}}",
                          "{\n  \"k\": \"v\"\n}", "{\"\xC3\xA9\": 0}"}) {
    EXPECT_TRUE(json::accept(doc)) << doc;
    EXPECT_TRUE(Matches(*g, doc)) << doc;
  }
  for (const char* doc : {"[]", "{\"a\": 01}", "{\"a\" 1}", "{\"a\": tru}", "{\"a\": \"\x01\"}", "{,}", "{\"a\": 1,}"}) {
    EXPECT_FALSE(json::accept(doc) && std::string_view(doc).front() == '{') << doc;
    EXPECT_FALSE(Matches(*g, doc)) << doc;
  }
}

// A vocabulary of every single byte plus multi-byte pieces, as BPE has.
std::vector<std::string> TestVocabulary() {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.emplace_back(1, static_cast<char>(b));
  for (const char* piece : {"{\"", "\":", "\", \"", "true", "false", "null", "name", "ton", "\"}", "}", " [", "],",
                            "12", "3.5", "\xC3\xA9t\xC3\xA9", "\xE6\x97\xA5", "\xF0\x9F", "\x90\x9F", "\n  ", "yes", "no",
                            "\"yes\"", "\"no\"", "abc", "-0", "e+1", "\\u00", "\\n"}) {
    v.emplace_back(piece);
  }
  v.emplace_back();  // a special token: no bytes
  return v;
}

// Random documents of a schema: random logits, sampled under the grammar.
std::vector<std::string> Sample(const std::string& gbnf, int n, float temperature, uint64_t seed) {
  std::vector<std::string> vocab = TestVocabulary();
  const int32_t eos = static_cast<int32_t>(vocab.size() - 1);
  GrammarCache cache([&] { return vocab; });
  auto grammar = cache.Get(gbnf, "test");
  EXPECT_TRUE(grammar.ok()) << grammar.status().ToString();
  if (!grammar.ok()) return {};
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0, 3);
  const std::unordered_set<int32_t> stop = {eos};
  std::vector<std::string> docs;
  for (int i = 0; i < n; ++i) {
    OutputConstraint c(*grammar);
    Sampler sampler({.temperature = temperature}, seed + i);
    std::string out;
    for (int step = 0; step < 400 && !c.complete(); ++step) {
      std::vector<float> logits(vocab.size());
      for (float& l : logits) l = noise(rng);
      logits[eos] += 4;  // the model would like to stop early
      auto t = c.Next(sampler, logits.data(), logits.size(), stop, nullptr);
      EXPECT_TRUE(t.ok()) << t.status().ToString();
      if (!t.ok() || *t == eos) break;
      c.Accept(*t, stop);
      out += vocab[*t];
    }
    docs.push_back(out);
  }
  return docs;
}

TEST(JsonGrammar, SampledDocumentsOfASchemaParseAndValidate) {
  const json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 12},
      "age": {"type": "integer"},
      "tags": {"type": "array", "items": {"enum": ["yes", "no"]}, "minItems": 1, "maxItems": 3},
      "pet": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"kind": {"const": "fish"}},
                                           "required": ["kind"], "additionalProperties": false}]},
      "note": {"type": "string"}
    },
    "required": ["name", "age", "tags", "pet"],
    "additionalProperties": false
  })");
  auto gbnf = JsonSchemaGrammar(schema.dump());
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().ToString();
  for (float temperature : {0.0f, 1.0f}) {
    for (const std::string& doc : Sample(*gbnf, temperature > 0 ? 24 : 2, temperature, 11)) {
      const json d = json::parse(doc, nullptr, false);
      ASSERT_TRUE(d.is_object()) << doc;
      // The schema, checked by hand.
      for (const char* key : {"name", "age", "tags", "pet"}) EXPECT_TRUE(d.contains(key)) << doc;
      for (const auto& [key, value] : d.items()) {
        EXPECT_TRUE(key == "name" || key == "age" || key == "tags" || key == "pet" || key == "note") << doc;
      }
      ASSERT_TRUE(d["name"].is_string()) << doc;
      EXPECT_LE(json(d["name"]).get<std::string>().size(), 12u * 4) << doc;
      EXPECT_TRUE(d["age"].is_number_integer()) << doc;
      ASSERT_TRUE(d["tags"].is_array()) << doc;
      EXPECT_GE(d["tags"].size(), 1u) << doc;
      EXPECT_LE(d["tags"].size(), 3u) << doc;
      for (const json& t : d["tags"]) EXPECT_TRUE(t == "yes" || t == "no") << doc;
      EXPECT_TRUE(d["pet"].is_null() || d["pet"] == json({{"kind", "fish"}})) << doc;
      if (d.contains("note")) { EXPECT_TRUE(d["note"].is_string()) << doc; }
    }
  }
}

TEST(JsonGrammar, RefusesSchemasItCannotHoldOrSatisfy) {
  for (const char* schema : {R"({"$ref": "#"})", R"({"type": "string", "pattern": "a+"})",
                             R"({"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]})"}) {
    auto gbnf = JsonSchemaGrammar(schema);
    Status st = gbnf.status();
    if (gbnf.ok()) st = CompileGbnf(*gbnf, "response_format.json_schema.schema").status();
    EXPECT_EQ(st.code(), Code::kInvalidInput) << schema;
    EXPECT_NE(st.message().find("response_format.json_schema.schema"), std::string::npos) << st.message();
  }
}

TEST(RegexGrammar, FullMatchesAsStdRegexDoes) {
  const char* patterns[] = {"[a-c]+x?", "(ab|cd){2,3}", "\\d{3}-\\d{2,}", "^(?:yes|no|maybe)$", "a.c",
                            "[^0-9\\s]{1,4}", "\\w+@\\w+\\.(com|org)", "colou?r", "(a|b)*abb", "x{0,2}y+?"};
  const char* texts[] = {"abc", "abcx", "abab", "abcdab", "ababababa", "123-45", "123-4", "12-345", "yes", "maybe",
                         "no!", "a\nc", "a-c", "abcd", "ab1", "x@y.com", "x@y.net", "color", "colour", "abb",
                         "babb", "ba", "xxy", "xxxy", "yyy", "", "cdcd"};
  for (const char* p : patterns) {
    auto gbnf = RegexGrammar(p, "response_format.pattern");
    ASSERT_TRUE(gbnf.ok()) << p << ": " << gbnf.status().ToString();
    auto g = Compile(*gbnf);
    ASSERT_TRUE(g) << p;
    const std::regex re(p, std::regex::ECMAScript);
    for (const char* t : texts) EXPECT_EQ(Matches(*g, t), std::regex_match(t, re)) << p << " on '" << t << "'";
  }
  const std::string deep = std::string(70, '(') + "a" + std::string(70, ')');
  for (const std::string bad : {"(a", "a)", "\\1", "(?=a)", "a\\b", "*a", "a{2", "a++", "[b-a]", "\\uD800",
                                "a\xED\xA0\x80", "\xC3", deep.c_str()}) {
    auto gbnf = RegexGrammar(bad, "response_format.pattern");
    Status st = gbnf.status();
    if (gbnf.ok()) st = CompileGbnf(*gbnf, "response_format.pattern").status();
    EXPECT_EQ(st.code(), Code::kInvalidInput) << bad;
  }
}

TEST(TokenGrammar, AMaskIsEveryTokenThatWouldBeAllowedAlone) {
  std::vector<std::string> vocab = TestVocabulary();
  auto g = Compile(JsonObjectGrammar());
  ASSERT_TRUE(g);
  TokenGrammar tg(g, std::make_shared<const TokenTrie>(vocab));
  for (const char* prefix : {"", "{", "{\"na", "{\"name\": ", "{\"a\": 1", "{\"a\": [tr", "{\"a\": \"\xC3"}) {
    GrammarState state;
    ASSERT_TRUE(tg.Start().AdvanceAll(prefix, &state)) << prefix;
    const TokenGrammar::StateId id = tg.Begin(state);
    const TokenMask& mask = tg.Mask(id);
    size_t allowed = 0;
    for (size_t id = 0; id < vocab.size(); ++id) {
      GrammarState after;
      const bool alone = !vocab[id].empty() && state.AdvanceAll(vocab[id], &after);
      EXPECT_EQ(MaskHas(mask, static_cast<int32_t>(id)), alone) << "'" << prefix << "' then '" << vocab[id] << "'";
      allowed += alone;
    }
    EXPECT_GT(allowed, 0u) << prefix;
    EXPECT_TRUE(tg.has_mask(id));
  }
}

// With temperature alone, the first token under a choice grammar is drawn
// from the model's distribution restricted to the allowed tokens.
TEST(OutputConstraint, DrawsFromTheAllowedTokensRenormalised) {
  std::vector<std::string> vocab = TestVocabulary();
  const int32_t eos = static_cast<int32_t>(vocab.size() - 1);
  auto gbnf = ChoiceGrammar({"yes", "no", "abc"}, "choices");
  ASSERT_TRUE(gbnf.ok());
  GrammarCache cache([&] { return vocab; });
  auto grammar = cache.Get(*gbnf, "choices");
  ASSERT_TRUE(grammar.ok());
  std::vector<float> logits(vocab.size(), 0.0f);
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0, 1.5);
  for (float& l : logits) l = noise(rng);
  // The allowed first tokens: "y", "n", "a", "yes", "no" and "abc" ("\"yes\"" is not).
  std::vector<int32_t> allowed;
  for (size_t id = 0; id < vocab.size(); ++id) {
    const std::string& b = vocab[id];
    if (!b.empty() && (std::string("yes").starts_with(b) || std::string("no").starts_with(b) || std::string("abc").starts_with(b))) {
      allowed.push_back(static_cast<int32_t>(id));
    }
  }
  ASSERT_EQ(allowed.size(), 6u);
  double z = 0;
  for (int32_t id : allowed) z += std::exp(logits[id]);
  std::map<int32_t, int> counts;
  const int draws = 20000;
  Sampler sampler({.temperature = 1.0f}, 99);
  for (int i = 0; i < draws; ++i) {
    OutputConstraint c(*grammar);
    auto t = c.Next(sampler, logits.data(), logits.size(), {eos}, nullptr);
    ASSERT_TRUE(t.ok());
    ++counts[*t];
  }
  for (int32_t id : allowed) {
    const double p = std::exp(logits[id]) / z;
    const double sd = std::sqrt(p * (1 - p) / draws);
    EXPECT_NEAR(counts[id] / static_cast<double>(draws), p, 5 * sd + 1e-3) << "'" << vocab[id] << "'";
  }
  size_t total = 0;
  for (auto [id, n] : counts) total += n;
  for (int32_t id : allowed) total -= counts[id];
  EXPECT_EQ(total, 0u) << "a refused token was drawn";
}


// How three families' templates render an assistant's call (the probe).
TEST(ToolCalls, TheSyntaxIsReadFromHowTheTemplateRendersACall) {
  const std::string name(kProbeName);
  EXPECT_EQ(*DetectToolCallSyntax("<tools>{\"name\": \"" + name + "\"}</tools><|im_start|>assistant\n<tool_call>\n"
                                  "{\"name\": \"" + name + "\", \"arguments\": {\"x\": 1}}\n</tool_call>"),
            ToolCallSyntax::kHermes);
  EXPECT_EQ(*DetectToolCallSyntax("<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"" + name +
                                  "\", \"parameters\": {\"x\": 1}}<|eot_id|>"),
            ToolCallSyntax::kLlama3Json);
  EXPECT_EQ(*DetectToolCallSyntax("[AVAILABLE_TOOLS][...][/AVAILABLE_TOOLS][INST]hi[/INST][TOOL_CALLS][{\"name\": \"" +
                                  name + "\", \"arguments\": {\"x\": 1}}]</s>"),
            ToolCallSyntax::kMistral);
  EXPECT_EQ(DetectToolCallSyntax("<|user|>hi<|assistant|>").status().code(), Code::kInvalidInput);
  EXPECT_EQ(DetectToolCallSyntax("call " + name + "(x=1)").status().code(), Code::kInvalidInput);
}

TEST(ToolCalls, CallsAreReadOutOfEachSyntax) {
  auto hermes = ParseToolCalls(ToolCallSyntax::kHermes,
                               "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n"
                               "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>");
  ASSERT_TRUE(hermes);
  ASSERT_EQ(hermes->calls.size(), 2u);
  EXPECT_EQ(hermes->calls[0].name, "get_weather");
  EXPECT_EQ(json::parse(hermes->calls[0].arguments), json({{"city", "Oslo"}}));
  EXPECT_EQ(hermes->calls[1].arguments, "{}");
  EXPECT_EQ(hermes->content, "");
  // parallel_tool_calls: false keeps the first call only.
  auto first = ParseToolCalls(ToolCallSyntax::kHermes,
                              "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
                              "<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
                              /*parallel=*/false);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->calls.size(), 1u);
  EXPECT_EQ(first->calls[0].name, "a");
  auto plain = ParseToolCalls(ToolCallSyntax::kHermes, "Just text.");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->calls.empty());
  EXPECT_EQ(plain->content, "Just text.");
  EXPECT_FALSE(ParseToolCalls(ToolCallSyntax::kHermes, "<tool_call>\n{\"name\": \"f\", \"arguments\": [1]}\n</tool_call>"));
  EXPECT_FALSE(ParseToolCalls(ToolCallSyntax::kHermes, "<tool_call>\n{\"name\": \"f\", \"argu"));

  auto llama = ParseToolCalls(ToolCallSyntax::kLlama3Json,
                              "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"k\": \"v;}\"}}; {\"name\": \"b\", \"parameters\": {}}");
  ASSERT_TRUE(llama);
  ASSERT_EQ(llama->calls.size(), 2u);
  EXPECT_EQ(json::parse(llama->calls[0].arguments), json({{"k", "v;}"}}));
  EXPECT_EQ(llama->calls[1].name, "b");
  EXPECT_FALSE(ParseToolCalls(ToolCallSyntax::kLlama3Json, "{\"name\": \"a\", \"parameters\": {}} and more"));

  auto mistral = ParseToolCalls(ToolCallSyntax::kMistral,
                                "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"n\": 2}}, {\"name\": \"b\", \"arguments\": \"{}\"}]");
  ASSERT_TRUE(mistral);
  ASSERT_EQ(mistral->calls.size(), 2u);
  EXPECT_EQ(mistral->calls[1].arguments, "{}");  // arguments as a string holding an object, too
}

TEST(ToolCalls, TheStreamHoldsBackFromWhereACallMayBegin) {
  ToolCallStream hermes(ToolCallSyntax::kHermes);
  EXPECT_EQ(hermes.Push("Let me check. <tool"), "Let me check. ");
  EXPECT_EQ(hermes.held(), "<tool");
  EXPECT_EQ(hermes.Push("_call>\n{\"name\""), "");
  EXPECT_EQ(hermes.held(), "<tool_call>\n{\"name\"");
  ToolCallStream not_a_call(ToolCallSyntax::kHermes);
  EXPECT_EQ(not_a_call.Push("a <to"), "a ");
  EXPECT_EQ(not_a_call.Push("ol> b"), "<tool> b");
  ToolCallStream llama(ToolCallSyntax::kLlama3Json);
  EXPECT_EQ(llama.Push(" {\"na"), "");
  ToolCallStream llama_text(ToolCallSyntax::kLlama3Json);
  EXPECT_EQ(llama_text.Push("Sure"), "Sure");
  EXPECT_EQ(llama_text.Push(" {x}"), " {x}");  // a call is the whole output or nothing
}

// Whatever the (random) logits, the output held to a required call is a
// call of one of the tools, its arguments a document of its parameters.
TEST(ToolCalls, ARequiredCallIsACallOfATool) {
  const json tools = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string", "maxLength": 10}, "unit": {"enum": ["c", "f"]}},
      "required": ["city", "unit"], "additionalProperties": false}}},
    {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {},
      "additionalProperties": false}}}])");
  for (ToolCallSyntax syntax : {ToolCallSyntax::kHermes, ToolCallSyntax::kLlama3Json}) {
    for (bool parallel : {false, true}) {
      auto gbnf = ToolCallGrammar(syntax, tools.dump(), std::nullopt, parallel);
      ASSERT_TRUE(gbnf.ok()) << gbnf.status().ToString();
      for (const std::string& out : Sample(*gbnf, 8, 1.0f, parallel ? 3 : 4)) {
        auto parsed = ParseToolCalls(syntax, out);
        ASSERT_TRUE(parsed) << out;
        ASSERT_FALSE(parsed->calls.empty()) << out;
        if (!parallel) { EXPECT_EQ(parsed->calls.size(), 1u) << out; }
        for (const ParsedCall& c : parsed->calls) {
          const json args = json::parse(c.arguments);
          if (c.name == "now") {
            EXPECT_TRUE(args.is_object()) << out;
            continue;
          }
          ASSERT_EQ(c.name, "get_weather") << out;
          EXPECT_EQ(args.size(), 2u) << out;
          EXPECT_TRUE(args["city"].is_string()) << out;
          EXPECT_TRUE(args["unit"] == "c" || args["unit"] == "f") << out;
        }
      }
    }
    auto named = ToolCallGrammar(syntax, tools.dump(), std::string("now"), false);
    ASSERT_TRUE(named.ok());
    for (const std::string& out : Sample(*named, 4, 1.0f, 5)) {
      auto parsed = ParseToolCalls(syntax, out);
      ASSERT_TRUE(parsed && parsed->calls.size() == 1u) << out;
      EXPECT_EQ(parsed->calls[0].name, "now");
    }
  }
  const json bad = json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "string", "pattern": "x"}}}])");
  auto refused = ToolCallGrammar(ToolCallSyntax::kHermes, bad.dump(), std::nullopt, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("tools[0].function.parameters"), std::string::npos) << refused.status().message();
}

}  // namespace
}  // namespace shoal::structured
