// Generation on the wire: the three HTTP bodies → one GenerateRequest (every
// validation error names its field), the work message's body and the
// worker's chunks (MessagePack), each round-tripped, and read as msgpack-c
// writes them.
#include "wire/generate_request.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <msgpack.hpp>
#include <nlohmann/json.hpp>

#include "wire/generate.h"

namespace shoal::wire {
namespace {

using Kind = GenerateRequest::Kind;

GenerateRequest Chat(std::string_view body) {
  GenerateRequest r;
  Status s = ParseChatCompletions(body, {}, &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r;
}

GenerateRequest Completion(std::string_view body) {
  GenerateRequest r;
  Status s = ParseCompletions(body, {}, &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r;
}

GenerateRequest Native(std::string_view body) {
  GenerateRequest r;
  Status s = ParseGenerate(body, "m", {}, &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r;
}

std::string ChatError(std::string_view body) {
  GenerateRequest r;
  Status s = ParseChatCompletions(body, {}, &r);
  EXPECT_EQ(s.code(), Code::kInvalidInput) << body;
  return s.message();
}

std::string CompletionError(std::string_view body) {
  GenerateRequest r;
  Status s = ParseCompletions(body, {}, &r);
  EXPECT_EQ(s.code(), Code::kInvalidInput) << body;
  return s.message();
}

std::string NativeError(std::string_view body) {
  GenerateRequest r;
  Status s = ParseGenerate(body, "m", {}, &r);
  EXPECT_EQ(s.code(), Code::kInvalidInput) << body;
  return s.message();
}

void ExpectSame(const GenerateRequest& a, const GenerateRequest& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.prompt, b.prompt);
  ASSERT_EQ(a.messages.size(), b.messages.size());
  for (size_t i = 0; i < a.messages.size(); ++i) {
    EXPECT_EQ(a.messages[i].role, b.messages[i].role);
    EXPECT_EQ(a.messages[i].content, b.messages[i].content);
  }
  EXPECT_EQ(a.add_generation_prompt, b.add_generation_prompt);
  EXPECT_EQ(a.chat_template_kwargs_json, b.chat_template_kwargs_json);
  const SamplingParams &x = a.sampling, &y = b.sampling;
  EXPECT_EQ(x.max_tokens, y.max_tokens);
  EXPECT_EQ(x.temperature, y.temperature);
  EXPECT_EQ(x.top_p, y.top_p);
  EXPECT_EQ(x.top_k, y.top_k);
  EXPECT_EQ(x.seed, y.seed);
  EXPECT_EQ(x.stop, y.stop);
  EXPECT_EQ(x.stop_token_ids, y.stop_token_ids);
  EXPECT_EQ(x.ignore_eos, y.ignore_eos);
  EXPECT_EQ(x.logprobs, y.logprobs);
  EXPECT_EQ(x.unsaid, y.unsaid);
  EXPECT_EQ(a.response_format.type, b.response_format.type);
  EXPECT_EQ(a.response_format.name, b.response_format.name);
  EXPECT_EQ(a.response_format.schema_json, b.response_format.schema_json);
  EXPECT_EQ(a.response_format.pattern, b.response_format.pattern);
  EXPECT_EQ(a.response_format.choices, b.response_format.choices);
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.include_usage, b.include_usage);
}

std::string Work(const GenerateRequest& r) {
  std::string work;
  AppendGenerateWork(r, &work);
  return work;
}

GenerateRequest RoundTrip(const GenerateRequest& r) {
  GenerateRequest back;
  Status s = DecodeGenerateWork(Work(r), &back);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return back;
}

// A MessagePack map written by msgpack-c, an independent codec.
using Fields = std::map<std::string, msgpack::type::variant>;
std::string Packed(const Fields& fields) {
  msgpack::sbuffer buf;
  msgpack::pack(buf, fields);
  return std::string(buf.data(), buf.size());
}
msgpack::type::variant Map(const Fields& fields) {
  std::multimap<msgpack::type::variant, msgpack::type::variant> m;
  for (const auto& [k, v] : fields) m.emplace(std::string(k), v);
  return msgpack::type::variant(m);
}
msgpack::type::variant Array(std::vector<msgpack::type::variant> v) { return msgpack::type::variant(v); }

// --- OpenAI chat completions ---

TEST(ParseChatCompletions, EveryField) {
  GenerateRequest r = Chat(R"({
    "model": "qwen", "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}], "name": null},
      {"role": "assistant", "content": null, "tool_calls": []}],
    "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "seed": 42,
    "stop": ["\n\n", "END"], "stream": true, "stream_options": {"include_usage": true},
    "logprobs": true, "top_logprobs": 0, "n": 1,
    "chat_template_kwargs": {"enable_thinking": false}, "ignore_eos": true, "stop_token_ids": [151643],
    "presence_penalty": 0, "frequency_penalty": 0.0, "tools": [], "tool_choice": "none", "logit_bias": {},
    "response_format": {"type": "text"}})");
  EXPECT_EQ(r.kind, Kind::kChat);
  EXPECT_EQ(r.model, "qwen");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "Be brief.");
  EXPECT_EQ(r.messages[1].content, "Hi\nthere");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.sampling.max_tokens, 7u);
  EXPECT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_EQ(r.sampling.seed, 42u);
  EXPECT_EQ(r.sampling.stop, (std::vector<std::string>{"\n\n", "END"}));
  EXPECT_EQ(r.sampling.stop_token_ids, std::vector<int32_t>{151643});
  EXPECT_TRUE(r.sampling.ignore_eos);
  EXPECT_TRUE(r.sampling.logprobs);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.add_generation_prompt);
  EXPECT_EQ(r.chat_template_kwargs_json, R"({"enable_thinking":false})");
  EXPECT_EQ(r.response_format.type, ResponseFormat::Type::kText);
  ExpectSame(r, RoundTrip(r));
}

TEST(ParseChatCompletions, ImagePartsKeepTheirPlaceAndBytes) {
  // "iVBORw==" is base64 of the bytes 89 50 4e 47 ("\x89PNG").
  const auto r = Chat(R"({"model":"m","messages":[{"role":"system","content":"Be brief."},)"
                      R"({"role":"user","content":[{"type":"text","text":"Compare"},)"
                      R"({"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw==","detail":"auto"}},)"
                      R"({"type":"text","text":"and"},{"type":"image_url","image_url":{"url":"data:;base64,AAE="}}]}]})");
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_TRUE(r.messages[0].parts.empty()) << "a message without images keeps its text alone";
  const ChatMessage& m = r.messages[1];
  EXPECT_EQ(m.content, "Compare\nand");
  ASSERT_EQ(m.parts.size(), 4u);
  EXPECT_FALSE(m.parts[0].image);
  EXPECT_EQ(m.parts[0].data, "Compare");
  EXPECT_TRUE(m.parts[1].image);
  EXPECT_EQ(m.parts[1].data, "\x89PNG");
  EXPECT_EQ(m.parts[3].data, std::string("\x00\x01", 2));
  // Through the work message: the parts, bytes and all.
  const GenerateRequest back = RoundTrip(r);
  ASSERT_EQ(back.messages.size(), 2u);
  EXPECT_TRUE(back.messages[0].parts.empty());
  ASSERT_EQ(back.messages[1].parts.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(back.messages[1].parts[i].image, m.parts[i].image) << i;
    EXPECT_EQ(back.messages[1].parts[i].data, m.parts[i].data) << i;
  }
  EXPECT_EQ(back.messages[1].content, m.content);
}

TEST(ParseChatCompletions, ResponseFormat) {
  const std::string head = R"({"model":"m","messages":[{"role":"user","content":"x"}],"response_format":)";
  GenerateRequest r = Chat(head + R"({"type":"json_object"}})");
  EXPECT_EQ(r.response_format.type, ResponseFormat::Type::kJsonObject);
  ExpectSame(r, RoundTrip(r));

  r = Chat(head + R"({"type":"json_schema","json_schema":{"name":"answer","strict":true,
              "schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}})");
  EXPECT_EQ(r.response_format.type, ResponseFormat::Type::kJsonSchema);
  EXPECT_EQ(r.response_format.name, "answer");
  EXPECT_EQ(r.response_format.schema_json,
            R"({"properties":{"a":{"type":"integer"}},"required":["a"],"type":"object"})");
  ExpectSame(r, RoundTrip(r));
  r = Native(R"({"prompt":"a","response_format":{"type":"json_object"}})");
  EXPECT_EQ(r.response_format.type, ResponseFormat::Type::kJsonObject);
  // The native route's own: a regex and a choice.
  r = Native(R"({"prompt":"a","response_format":{"type":"regex","pattern":"[a-z]+\\d"}})");
  EXPECT_EQ(r.response_format.type, ResponseFormat::Type::kRegex);
  EXPECT_EQ(r.response_format.pattern, "[a-z]+\\d");
  ExpectSame(r, RoundTrip(r));
  r = Native(R"({"prompt":"a","response_format":{"type":"choice","choices":["yes","no"]}})");
  EXPECT_EQ(r.response_format.type, ResponseFormat::Type::kChoice);
  EXPECT_EQ(r.response_format.choices, (std::vector<std::string>{"yes", "no"}));
  ExpectSame(r, RoundTrip(r));
  EXPECT_EQ(NativeError(R"({"prompt":"a","response_format":{"type":"choice","choices":[]}})"),
            "response_format.choices: must hold at least one choice");
  EXPECT_EQ(NativeError(R"({"prompt":"a","response_format":{"type":"choice","choices":["a",""]}})"),
            "response_format.choices[1]: must not be empty");
  EXPECT_EQ(NativeError(R"({"prompt":"a","response_format":{"type":"regex"}})"), "response_format.pattern: missing");
  EXPECT_EQ(NativeError(R"({"prompt":"a","response_format":{"type":"regex","pattern":"a","choices":[]}})"),
            "response_format.choices: not a field of a 'regex' format");

  auto error = [&](std::string_view format) { return ChatError(head + std::string(format) + "}"); };
  EXPECT_EQ(error(R"("json")"), "response_format: expected an object, got a string");
  EXPECT_EQ(error(R"({})"), "response_format.type: missing");
  EXPECT_EQ(error(R"({"type":"yaml"})"),
            "response_format.type: 'yaml' is not one of text, json_object, json_schema");
  EXPECT_EQ(error(R"({"type":"regex","pattern":"a"})"),
            "response_format.type: 'regex' is not one of text, json_object, json_schema");
  EXPECT_EQ(error(R"({"type":"json_object","json_schema":{}})"),
            "response_format.json_schema: not a field of a 'json_object' format");
  EXPECT_EQ(error(R"({"type":"json_schema"})"), "response_format.json_schema: missing");
  EXPECT_EQ(error(R"({"type":"json_schema","json_schema":{"name":"n"}})"),
            "response_format.json_schema.schema: missing");
  EXPECT_EQ(error(R"({"type":"json_schema","json_schema":{"schema":{}}})"),
            "response_format.json_schema.name: missing");
  EXPECT_EQ(error(R"({"type":"json_schema","json_schema":{"name":"n","schema":[]}})"),
            "response_format.json_schema.schema: expected an object, got an array");
  EXPECT_EQ(error(R"({"type":"json_schema","json_schema":{"name":"n","schema":{},"description":"d"}})"),
            "response_format.json_schema.description: not supported (json_schema takes name, schema and strict)");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":"x","response_format":{"type":"json_object"}})"),
            "body: unknown field 'response_format'");
}

TEST(ParseChatCompletions, TopLogprobsOnEveryRoute) {
  const std::string head = R"({"model":"m","messages":[{"role":"user","content":"x"}],)";
  GenerateRequest r = Chat(head + R"("logprobs":true,"top_logprobs":5})");
  EXPECT_EQ(r.sampling.top_logprobs, 5u);
  EXPECT_EQ(RoundTrip(r).sampling.top_logprobs, 5u);
  EXPECT_EQ(ChatError(head + R"("top_logprobs":2})"), "top_logprobs: needs logprobs: true");
  EXPECT_EQ(ChatError(head + R"("logprobs":true,"top_logprobs":21})"), "top_logprobs: must be at most 20, got 21");
  GenerateRequest c = Completion(R"({"model":"m","prompt":"x","logprobs":3})");
  EXPECT_TRUE(c.sampling.logprobs);
  EXPECT_EQ(c.sampling.top_logprobs, 3u);
  EXPECT_EQ(Native(R"({"prompt":"x","logprobs":true,"top_logprobs":2})").sampling.top_logprobs, 2u);
}

// Tools, the choice among them, and the calls and answers in the
// conversation, through the work message too.
TEST(ParseChatCompletions, ToolsAndToolMessages) {
  const std::string tools = R"("tools":[{"type":"function","function":{"name":"get_weather","description":"d",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}},{"type":"function","function":{"name":"now"}}])";
  const std::string messages = R"("messages":[{"role":"user","content":"Weather in Oslo?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
        "function":{"name":"get_weather","arguments":"{\"city\": \"Oslo\"}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"-3 C"}])";
  GenerateRequest r = Chat(R"({"model":"m",)" + messages + "," + tools +
                           R"(,"tool_choice":{"type":"function","function":{"name":"now"}},"parallel_tool_calls":false})");
  EXPECT_EQ(nlohmann::json::parse(r.tools_json).size(), 2u);
  EXPECT_EQ(r.tool_choice.kind, ToolChoice::Kind::kFunction);
  EXPECT_EQ(r.tool_choice.name, "now");
  EXPECT_FALSE(r.parallel_tool_calls);
  ASSERT_EQ(r.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(r.messages[1].tool_calls[0].name, "get_weather");
  EXPECT_EQ(r.messages[2].tool_call_id, "call_1");
  const GenerateRequest back = RoundTrip(r);
  EXPECT_EQ(back.tools_json, r.tools_json);
  EXPECT_EQ(back.tool_choice.kind, ToolChoice::Kind::kFunction);
  EXPECT_EQ(back.tool_choice.name, "now");
  EXPECT_FALSE(back.parallel_tool_calls);
  ASSERT_EQ(back.messages[1].tool_calls.size(), 1u);
  EXPECT_EQ(back.messages[1].tool_calls[0].arguments, "{\"city\": \"Oslo\"}");
  EXPECT_EQ(back.messages[2].tool_call_id, "call_1");
  EXPECT_EQ(Chat(R"({"model":"m",)" + messages + "," + tools + R"(,"tool_choice":"required"})").tool_choice.kind,
            ToolChoice::Kind::kRequired);

  const std::string head = R"({"model":"m","messages":[{"role":"user","content":"x"}],)";
  EXPECT_EQ(ChatError(head + R"("tool_choice":"auto"})"), "tool_choice: there are no tools to call");
  EXPECT_EQ(ChatError(head + tools + R"(,"tool_choice":"always"})"),
            "tool_choice: 'always' is not one of auto, none, required (or a function)");
  EXPECT_EQ(ChatError(head + tools + R"(,"tool_choice":{"type":"function","function":{"name":"later"}}})"),
            "tool_choice.function.name: 'later' is not one of the tools");
  EXPECT_EQ(ChatError(head + R"("tools":[{"type":"function","function":{"name":"a b"}}]})"),
            "tools[0].function.name: 1 to 64 letters, digits, _ and -");
  EXPECT_EQ(ChatError(head + R"("tools":[{"type":"function","function":{"name":"f","parameters":[]}}]})"),
            "tools[0].function.parameters: expected a JSON Schema object, got an array");
  EXPECT_EQ(ChatError(head + R"("tools":[{"type":"retrieval"}]})"), "tools[0].type: only \"function\"");
  const std::string strict = R"("tools":[{"type":"function","function":{"name":"f","strict":true}}])";
  EXPECT_EQ(ChatError(head + strict + "}"),
            "tools[0].function.strict: true is held only when a call is required (tool_choice \"required\" or a "
            "function); with \"auto\" the model's arguments come back as it writes them");
  EXPECT_EQ(Chat(head + strict + R"(,"tool_choice":"required"})").tool_choice.kind, ToolChoice::Kind::kRequired);
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"tool","content":"x"}]})"),
            "messages[0].tool_call_id: missing (the call this answers)");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"user","content":"x","tool_call_id":"c"}]})"),
            "messages[0].tool_call_id: only a tool's message answers a call");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"assistant","content":"","tool_calls":[{"id":"c",
                          "type":"function","function":{"name":"f","arguments":"[1]"}}]}]})"),
            "messages[0].tool_calls[0].function.arguments: not a JSON object's text");
}

// Fields Shoal does not implement pass only when they ask for nothing.
TEST(ParseChatCompletions, UnimplementedFieldsAreRefusedUnlessTheyAskForNothing) {
  const std::string head = R"({"model":"m","messages":[{"role":"user","content":"x"}],)";
  Chat(head + R"("presence_penalty":0,"frequency_penalty":0,"logit_bias":{},"tools":[],"tool_choice":"none",
                 "parallel_tool_calls":true,"store":false,"metadata":{},"modalities":["text"],"service_tier":"auto",
                 "repetition_penalty":1,"min_tokens":0})");
  EXPECT_EQ(ChatError(head + R"("functions":[{"name":"f"}]})"), "functions: not supported (accepted: [])");
  EXPECT_EQ(ChatError(head + R"("user":"u1"})"),
            "user: not supported (accepted: nothing: Shoal names the caller by its API key)");
  EXPECT_EQ(ChatError(head + R"("max_new_tokens":3})"), "body: unknown field 'max_new_tokens'");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":"x","user":"x"})"),
            "user: not supported (accepted: nothing: Shoal names the caller by its API key)");
}

// Penalties, logit_bias and min_tokens, on every route, and through the
// work message.
TEST(ParseChatCompletions, LogitAdjustments) {
  const std::string head = R"({"model":"m","messages":[{"role":"user","content":"x"}],)";
  GenerateRequest r = Chat(head + R"("presence_penalty":0.5,"frequency_penalty":-1.5,"repetition_penalty":1.2,
                                      "logit_bias":{"42":-100,"7":2.5},"min_tokens":3,"max_tokens":8})");
  EXPECT_EQ(r.sampling.presence_penalty, 0.5f);
  EXPECT_EQ(r.sampling.frequency_penalty, -1.5f);
  EXPECT_EQ(r.sampling.repetition_penalty, 1.2f);
  ASSERT_EQ(r.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(r.sampling.min_tokens, 3u);
  EXPECT_TRUE(r.sampling.adjusts_logits());
  const GenerateRequest back = RoundTrip(r);
  EXPECT_EQ(back.sampling.presence_penalty, 0.5f);
  EXPECT_EQ(back.sampling.frequency_penalty, -1.5f);
  EXPECT_EQ(back.sampling.repetition_penalty, 1.2f);
  EXPECT_EQ(back.sampling.logit_bias, r.sampling.logit_bias);
  EXPECT_EQ(back.sampling.min_tokens, 3u);
  EXPECT_FALSE(Chat(head + R"("presence_penalty":0,"logit_bias":{},"repetition_penalty":1,"min_tokens":0})")
                   .sampling.adjusts_logits());
  EXPECT_TRUE(Native(R"({"prompt":"a","frequency_penalty":1})").sampling.adjusts_logits());
  EXPECT_TRUE(Completion(R"({"model":"m","prompt":"x","logit_bias":{"1":1}})").sampling.adjusts_logits());

  EXPECT_EQ(ChatError(head + R"("presence_penalty":2.5})"), "presence_penalty: must be between -2 and 2, got 2.5");
  EXPECT_EQ(ChatError(head + R"("frequency_penalty":"a"})"), "frequency_penalty: expected a number, got a string");
  EXPECT_EQ(ChatError(head + R"("repetition_penalty":0})"),
            "repetition_penalty: must be greater than 0 and at most 2, got 0");
  EXPECT_EQ(ChatError(head + R"("logit_bias":{"x":1}})"),
            "logit_bias.x: the key must be a token id (a non-negative integer)");
  EXPECT_EQ(ChatError(head + R"("logit_bias":{"5":101}})"), "logit_bias.5: must be between -100 and 100, got 101");
  EXPECT_EQ(ChatError(head + R"("logit_bias":[1]})"), "logit_bias: expected an object of token ids to biases, got an array");
  EXPECT_EQ(ChatError(head + R"("min_tokens":5,"max_tokens":4})"), "min_tokens: 5 is over max_tokens (4)");
  EXPECT_EQ(ChatError(head + R"("min_tokens":-1})"), "min_tokens: must be at least 0, got -1");
}

TEST(ParseChatCompletions, Defaults) {
  GenerateRequest r = Chat(R"({"model":"m","messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(r.sampling.max_tokens, 0u);  // until a stop or the context is full
  EXPECT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_EQ(r.sampling.top_p, 1.0f);
  EXPECT_EQ(r.sampling.top_k, 0);
  EXPECT_FALSE(r.sampling.seed.has_value());
  EXPECT_TRUE(r.sampling.stop.empty());
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.include_usage);
  EXPECT_FALSE(r.sampling.logprobs);
  EXPECT_TRUE(r.chat_template_kwargs_json.empty());
  // Left out: the model's generation_config.json may fill them in.
  EXPECT_EQ(r.sampling.unsaid, kAllSamplingDefaults);
  ExpectSame(r, RoundTrip(r));
  // Sent (a null is not sent): the client's own.
  r = Chat(R"({"model":"m","messages":[{"role":"user","content":"x"}],"temperature":1,"top_k":null,
               "repetition_penalty":1})");
  EXPECT_EQ(r.sampling.unsaid, kDefaultTopP | kDefaultTopK);
  ExpectSame(r, RoundTrip(r));
  EXPECT_EQ(Completion(R"({"model":"m","prompt":"x","top_p":1,"top_k":0})").sampling.unsaid,
            kDefaultTemperature | kDefaultRepetitionPenalty);
}

TEST(ParseChatCompletions, NullsAreAbsentAndOneStopStringIsAList) {
  GenerateRequest r = Chat(R"({"model":"m","messages":[{"role":"user","content":"x"}],
    "temperature":null,"stop":"###","max_tokens":null,"seed":null,"n":null,"logprobs":null,
    "stream_options":null})");
  EXPECT_EQ(r.sampling.temperature, 1.0f);
  EXPECT_EQ(r.sampling.stop, std::vector<std::string>{"###"});
  EXPECT_FALSE(r.sampling.seed.has_value());
}

TEST(ParseChatCompletions, MaxCompletionTokensWinsAndTopKMinusOneIsOff) {
  GenerateRequest r = Chat(R"({"model":"m","messages":[{"role":"user","content":"x"}],
    "max_completion_tokens":5,"max_tokens":9,"top_k":-1,"temperature":0,"seed":-1})");
  EXPECT_EQ(r.sampling.max_tokens, 5u);
  EXPECT_EQ(r.sampling.top_k, 0);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_EQ(r.sampling.seed, std::numeric_limits<uint64_t>::max());
}

TEST(ParseChatCompletions, Errors) {
  const std::string msgs = R"("messages":[{"role":"user","content":"x"}])";
  auto with = [&](std::string_view extra) {
    return "{\"model\":\"m\"," + msgs + "," + std::string(extra) + "}";
  };
  EXPECT_EQ(ChatError(""), "body: empty");
  EXPECT_EQ(ChatError("{"),
            "body: malformed JSON (parse error at line 1, column 2: syntax error while parsing object key - "
            "unexpected end of input; expected string literal)");
  EXPECT_NE(ChatError(R"({"model":"m","messages":[{"role":"user","content":"a\ud83d"}]})")
                .find("invalid string: surrogate U+D800..U+DBFF must be followed by U+DC00..U+DFFF"),
            std::string::npos)
      << "says what is wrong with the string";
  EXPECT_EQ(ChatError("[1]"), "body: expected a JSON object");
  EXPECT_EQ(ChatError("{" + msgs + "}"), "model: missing");
  EXPECT_EQ(ChatError(R"({"model":"m"})"), "messages: missing");
  EXPECT_EQ(ChatError(R"({"model":7,)" + msgs + "}"), "model: expected a string, got a number");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[]})"),
            "messages: must hold at least one message");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":{}})"),
            "messages: expected an array of messages, got an object");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":["hi"]})"),
            "messages[0]: expected an object, got a string");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"content":"x"}]})"),
            "messages[0].role: missing");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"","content":"x"}]})"),
            "messages[0].role: must not be empty");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"user","content":"x"},{"role":"wizard","content":"y"}]})"),
            "messages[1].role: 'wizard' is not a role (system, developer, user, assistant or tool)");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"user","content":"x","name":"ann"}]})"),
            "messages[0].name: not supported (a message carries role, content, tool_calls and tool_call_id)");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1"}]}]})"),
            "messages[0].tool_calls[0].function: missing (an object)");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"User","content":"x"}]})"),
            "messages[0].role: 'User' is not a role (system, developer, user, assistant or tool)");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"user","content":5}]})"),
            "messages[0].content: expected a string or an array of content parts, got a number");
  EXPECT_EQ(
      ChatError(
          R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})"),
      "messages[0].content[0].image_url.url: missing");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url",)"
                      R"("image_url":{"url":"https://example.com/cat.png"}}]}]})"),
            "messages[0].content[0].image_url.url: only data: URLs (Shoal fetches nothing; send the image inline)");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url",)"
                      R"("image_url":{"url":"data:image/png;base64,iVBO","detail":"high"}}]}]})"),
            "messages[0].content[0].image_url.detail: only \"auto\" (the model's own input size)");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]})"),
            "messages[0].content[0].type: 'input_audio' is not supported (text, image_url)");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","image_url":{}}]}]})"),
            "messages[0].content[0].image_url: not supported in a text part");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"user","content":[{"text":"a"}]}]})"),
            "messages[0].content[0].type: missing");
  EXPECT_EQ(ChatError(R"({"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]})"),
            "messages[0].content[0].text: missing");
  EXPECT_EQ(ChatError(with(R"("temperature":2.5)")),
            "temperature: must be between 0 and 2, got 2.5");
  EXPECT_EQ(ChatError(with(R"("temperature":-0.1)")),
            "temperature: must be between 0 and 2, got -0.1");
  EXPECT_EQ(ChatError(with(R"("temperature":"hot")")),
            "temperature: expected a number, got a string");
  EXPECT_EQ(ChatError(with(R"("top_p":0)")), "top_p: must be greater than 0 and at most 1, got 0");
  EXPECT_EQ(ChatError(with(R"("top_p":1.5)")),
            "top_p: must be greater than 0 and at most 1, got 1.5");
  EXPECT_EQ(ChatError(with(R"("top_k":-2)")), "top_k: must be at least -1, got -2");
  EXPECT_EQ(ChatError(with(R"("max_tokens":0)")), "max_tokens: must be at least 1, got 0");
  EXPECT_EQ(ChatError(with(R"("max_tokens":-5)")), "max_tokens: must be at least 1, got -5");
  EXPECT_EQ(ChatError(with(R"("max_tokens":1.5)")),
            "max_tokens: expected an integer, got a number");
  EXPECT_EQ(ChatError(with(R"("max_completion_tokens":0)")),
            "max_completion_tokens: must be at least 1, got 0");
  EXPECT_EQ(ChatError(with(R"("seed":"x")")), "seed: expected an integer, got a string");
  EXPECT_EQ(ChatError(with(R"("stop":["a","b","c","d","e"])")),
            "stop: at most 4 stop strings (got 5)");
  EXPECT_EQ(ChatError(with(R"("stop":["a",""])")), "stop[1]: must not be empty");
  EXPECT_EQ(ChatError(with(R"("stop":"")")), "stop[0]: must not be empty");
  EXPECT_EQ(ChatError(with(R"("stop":[1])")), "stop[0]: expected a string, got a number");
  EXPECT_EQ(ChatError(with(R"("stop":5)")),
            "stop: expected a string or an array of strings, got a number");
  EXPECT_EQ(ChatError(with(R"("n":129)")), "n: must be at most 128, got 129");
  EXPECT_EQ(ChatError(with(R"("n":0)")), "n: must be at least 1, got 0");
  EXPECT_EQ(ChatError(with(R"("logprobs":1)")), "logprobs: expected a boolean, got a number");
  EXPECT_EQ(ChatError(with(R"("top_logprobs":3)")), "top_logprobs: needs logprobs: true");
  EXPECT_EQ(ChatError(with(R"("top_logprobs":21)")), "top_logprobs: must be at most 20, got 21");
  EXPECT_EQ(ChatError(with(R"("stream":"yes")")), "stream: expected a boolean, got a string");
  EXPECT_EQ(ChatError(with(R"("stream_options":{"include_usage":true})")),
            "stream_options: only allowed when stream is true");
  EXPECT_EQ(ChatError(with(R"("stream":true,"stream_options":{"include_usage":1})")),
            "stream_options.include_usage: expected a boolean, got a number");
  EXPECT_EQ(ChatError(with(R"("stream":true,"stream_options":[])")),
            "stream_options: expected an object, got an array");
  EXPECT_EQ(ChatError(with(R"("chat_template_kwargs":[1])")),
            "chat_template_kwargs: expected an object, got an array");
  EXPECT_EQ(ChatError(with(R"("ignore_eos":1)")), "ignore_eos: expected a boolean, got a number");
  EXPECT_EQ(ChatError(with(R"("stop_token_ids":[-1])")),
            "stop_token_ids[0]: must be at least 0, got -1");
  EXPECT_EQ(ChatError(with(R"("stop_token_ids":7)")),
            "stop_token_ids: expected an array of token ids, got a number");
}

TEST(ParseChatCompletions, DeepTemplateKwargsAreRefused) {
  std::string deep = "{\"a\":";
  for (int i = 0; i < 100; ++i) deep += "[";
  for (int i = 0; i < 100; ++i) deep += "]";
  deep += "}";
  EXPECT_EQ(
      ChatError(
          R"({"model":"m","messages":[{"role":"user","content":"x"}],"chat_template_kwargs":)" +
          deep + "}"),
      "chat_template_kwargs: nested deeper than 32 levels");
}

TEST(ParseChatCompletions, PromptOverTheLimitIs413) {
  ParseLimits limits;
  limits.max_item_bytes = 10;
  GenerateRequest r;
  Status s = ParseChatCompletions(
      R"({"model":"m","messages":[{"role":"user","content":"0123456789"}]})", limits, &r);
  EXPECT_EQ(s.code(), Code::kPayloadTooLarge);
  EXPECT_EQ(s.message(), "messages: 14 bytes, over the limit of 10");
}

// --- OpenAI completions ---

TEST(ParseCompletions, FieldsAndDefaults) {
  GenerateRequest r = Completion(R"({"model":"m","prompt":"Once upon"})");
  EXPECT_EQ(r.kind, Kind::kCompletion);
  EXPECT_EQ(r.prompt, "Once upon");
  EXPECT_EQ(r.sampling.max_tokens, kCompletionsDefaultMaxTokens);
  EXPECT_FALSE(r.sampling.logprobs);
  ExpectSame(r, RoundTrip(r));

  r = Completion(
      R"({"model":"m","prompt":["one"],"max_tokens":3,"logprobs":0,"echo":false,"best_of":1,
                     "suffix":null,"stream":true,"stream_options":{"include_usage":true},"temperature":0,
                     "stop":"\n","presence_penalty":0})");
  EXPECT_EQ(r.prompt, "one");
  EXPECT_EQ(r.sampling.max_tokens, 3u);
  EXPECT_TRUE(r.sampling.logprobs);  // any integer, 0 included
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.sampling.stop, std::vector<std::string>{"\n"});
  ExpectSame(r, RoundTrip(r));
}

TEST(ParseCompletions, Errors) {
  EXPECT_EQ(CompletionError(R"({"prompt":"x"})"), "model: missing");
  EXPECT_EQ(CompletionError(R"({"model":"m"})"), "prompt: missing");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":[1,2,3]})"),
            "prompt: token-id prompts are not supported; send text");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":[[1,2]]})"),
            "prompt: token-id prompts are not supported; send text");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":["a","b"]})"),
            "prompt: exactly one prompt per request is supported, got 2");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":[]})"),
            "prompt: exactly one prompt per request is supported, got 0");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":{}})"),
            "prompt: expected a string or an array of one string, got an object");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":"x","echo":true})"), "echo: not supported");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":"x","best_of":2})"),
            "best_of: not supported (only 1), got 2");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":"x","suffix":"end"})"),
            "suffix: not supported");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":"x","logprobs":true})"),
            "logprobs: expected an integer, got a boolean");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":"x","logprobs":6})"),
            "logprobs: must be at most 5, got 6");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":"x","max_tokens":0})"),
            "max_tokens: must be at least 1, got 0");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":"x","n":2.5})"),
            "n: expected an integer, got a number");
  EXPECT_EQ(CompletionError(R"({"model":"m","prompt":"x","temperature":3})"),
            "temperature: must be between 0 and 2, got 3");
}

// --- native generate ---

TEST(ParseGenerate, PromptOrMessages) {
  GenerateRequest r =
      Native(R"({"prompt":"The sky is","max_tokens":4,"top_k":5,"logprobs":true,"stream":true})");
  EXPECT_EQ(r.kind, Kind::kCompletion);
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt, "The sky is");
  EXPECT_EQ(r.sampling.max_tokens, 4u);
  EXPECT_EQ(r.sampling.top_k, 5);
  EXPECT_TRUE(r.sampling.logprobs);
  EXPECT_TRUE(r.include_usage);  // a native stream always ends with usage
  ExpectSame(r, RoundTrip(r));

  r = Native(R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false,
                 "chat_template_kwargs":{"enable_thinking":true},"ignore_eos":true,"stop_token_ids":[1,2],"seed":7})");
  EXPECT_EQ(r.kind, Kind::kChat);
  EXPECT_FALSE(r.add_generation_prompt);
  EXPECT_EQ(r.chat_template_kwargs_json, R"({"enable_thinking":true})");
  EXPECT_EQ(r.sampling.max_tokens, 0u);
  ExpectSame(r, RoundTrip(r));
}

TEST(ParseGenerate, ReadsTheLoraFieldWhichTravelsAsAHeaderNotInTheWork) {
  GenerateRequest r = Native(R"({"prompt":"The sky is","lora":"poet"})");
  EXPECT_EQ(r.lora, "poet");
  EXPECT_EQ(Work(r).find("poet"), std::string::npos) << "the work header carries it (work_message.h)";
  EXPECT_EQ(NativeError(R"({"prompt":"a","lora":3})"), "lora: expected a string, got a number");
  EXPECT_TRUE(Native(R"({"prompt":"a"})").lora.empty());
}

TEST(ParseGenerate, Errors) {
  EXPECT_EQ(NativeError("{}"), "prompt: missing (or give messages)");
  EXPECT_EQ(NativeError(R"({"prompt":"a","messages":[{"role":"user","content":"b"}]})"),
            "body: give either prompt or messages, not both");
  EXPECT_EQ(NativeError(R"({"prompt":"a","max_new_tokens":3})"),
            "body: unknown field 'max_new_tokens'");
  // One output per native request (its response has one text).
  EXPECT_EQ(NativeError(R"({"prompt":"a","n":2})"), "body: unknown field 'n'");
  EXPECT_EQ(NativeError(R"({"prompt":"a","chat_template_kwargs":{}})"),
            "body: add_generation_prompt and chat_template_kwargs go with messages, not prompt");
  EXPECT_EQ(NativeError(R"({"prompt":["a"]})"), "prompt: expected a string, got an array");
  EXPECT_EQ(NativeError(R"({"prompt":"a","logprobs":2})"),
            "logprobs: expected a boolean, got a number");
  EXPECT_EQ(NativeError(R"({"prompt":"a","top_p":-1})"),
            "top_p: must be greater than 0 and at most 1, got -1");
  EXPECT_EQ(NativeError(R"({"prompt":"a","max_tokens":0})"),
            "max_tokens: must be at least 1, got 0");
  EXPECT_EQ(NativeError(R"({"prompt":"a","add_generation_prompt":"no"})"),
            "add_generation_prompt: expected a boolean, got a string");
  EXPECT_EQ(NativeError(R"({"messages":[{"role":"wizard","content":"b"}]})"),
            "messages[0].role: 'wizard' is not a role (system, developer, user, assistant or tool)");
}

// --- the work message ---

TEST(GenerateWork, EscapesAndUnicodeRoundTrip) {
  GenerateRequest r;
  r.kind = Kind::kChat;
  r.model = "org/model-v1.5";
  r.messages = {{"user", "quote \" backslash \\ newline \n tab \t nul-ish \x01 é 日本 🐟", {}, {}}};
  r.chat_template_kwargs_json = R"({"a":{"b":[1,2.5,"x"]}})";
  r.sampling.temperature = 0.7f;
  r.sampling.top_p = 0.95f;
  r.sampling.seed = std::numeric_limits<uint64_t>::max();
  r.sampling.stop = {"</s>", "\n"};
  ExpectSame(r, RoundTrip(r));
}

TEST(GenerateWork, ReadsWhatAnotherCodecWrites) {
  GenerateRequest r;
  ASSERT_TRUE(DecodeGenerateWork(Packed({{"kind", std::string("chat")},
                                         {"model", std::string("m")},
                                         {"messages", Array({Map({{"role", std::string("user")},
                                                                  {"content", std::string("hi")}})})},
                                         {"chat_template_kwargs", std::string(R"({"enable_thinking":false})")},
                                         {"sampling", Map({{"temperature", 0.25},
                                                           {"seed", uint64_t{18446744073709551615u}},
                                                           {"stop", Array({std::string("\n")})}})},
                                         {"stream", true},
                                         {"from_the_future", int64_t{1}}}),
                                 &r)
                  .ok());
  EXPECT_EQ(r.kind, Kind::kChat);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].content, "hi");
  EXPECT_EQ(r.chat_template_kwargs_json, R"({"enable_thinking":false})");
  EXPECT_EQ(r.sampling.temperature, 0.25f);
  EXPECT_EQ(r.sampling.seed, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(r.sampling.stop, std::vector<std::string>{"\n"});
  EXPECT_TRUE(r.stream);
}

TEST(GenerateWork, DecodeValidatesWhatTheParsersValidate) {
  auto error = [](const std::string& msgpack) {
    GenerateRequest r;
    return DecodeGenerateWork(msgpack, &r).message();
  };
  const std::string user = "user";
  auto completion = [](Fields extra) {
    extra.emplace("kind", std::string("completion"));
    extra.emplace("model", std::string("m"));
    extra.emplace("prompt", std::string("x"));
    return Packed(extra);
  };
  EXPECT_EQ(error("nope"), "generate: expected a map, got an integer");
  EXPECT_EQ(error(Packed({{"model", std::string("m")}})), "kind: missing");
  EXPECT_EQ(error(Packed({{"kind", std::string("embed")}, {"model", std::string("m")}})),
            "kind: expected \"chat\" or \"completion\", got \"embed\"");
  EXPECT_EQ(error(Packed({{"kind", std::string("completion")}, {"prompt", std::string("x")}})), "model: missing");
  EXPECT_EQ(error(Packed({{"kind", std::string("chat")}, {"model", std::string("m")}, {"messages", Array({})}})),
            "messages: must hold at least one message");
  EXPECT_EQ(error(completion({{"sampling", Map({{"temperature", 9.0}})}})),
            "temperature: must be between 0 and 2, got 9");
  EXPECT_EQ(error(completion({{"sampling", Map({{"top_k", int64_t{-1}}})}})), "top_k: must be at least 0, got -1");
  EXPECT_EQ(error(completion({{"sampling", Map({{"stop", Array({std::string("a"), std::string("b"), std::string("c"),
                                                                std::string("d"), std::string("e")})}})}})),
            "stop: at most 4 stop strings (got 5)");
  EXPECT_EQ(error(completion({{"sampling", Map({{"temperature", std::string("hot")}})}})),
            "sampling.temperature: expected a number, got a string");
  // Each kind's own fields only (fuzz_bounded found a completion with
  // messages, which came back without them).
  EXPECT_EQ(error(completion({{"messages", Array({Map({{"role", user}, {"content", std::string("I")}})})}})),
            "messages: not a field of a completion request");
  EXPECT_EQ(error(Packed({{"kind", std::string("chat")},
                          {"model", std::string("m")},
                          {"messages", Array({Map({{"role", user}, {"content", std::string("I")}})})},
                          {"prompt", std::string("x")}})),
            "prompt: not a field of a chat request");
  EXPECT_EQ(error(Packed({{"kind", std::string("chat")},
                          {"model", std::string("m")},
                          {"messages", Array({Map({{"role", std::string("wizard")}, {"content", std::string("I")}})})}})),
            "messages[0].role: 'wizard' is not a role (system, developer, user, assistant or tool)");
  EXPECT_EQ(error(completion({}) + "x"), "generate: trailing bytes after the request");
}

// --- chunks ---

std::string ChunkBytes(const GenerationChunk& c) {
  std::string out;
  AppendChunk(c, &out);
  return out;
}

TEST(GenerationChunk, RoundTrip) {
  GenerationChunk c;
  c.text = "Hello, \"world\"\n";
  c.token_ids = {9707, 11, 330};
  c.logprobs = {-0.25f, -1.5f, -std::numeric_limits<float>::infinity()};
  c.finish = FinishReason::kLength;
  c.prompt_tokens = 12;
  c.completion_tokens = 3;
  c.cached_prompt_tokens = 8;
  c.ttft_ms = 12.5;
  c.itl_ms = 3.25;
  c.queue_ms = 0.5;
  GenerationChunk back;
  ASSERT_TRUE(DecodeChunk(ChunkBytes(c), &back).ok());
  EXPECT_EQ(back.text, c.text);
  EXPECT_EQ(back.token_ids, c.token_ids);
  ASSERT_EQ(back.logprobs.size(), 3u);
  EXPECT_EQ(back.logprobs[0], -0.25f);
  EXPECT_EQ(back.logprobs[1], -1.5f);
  EXPECT_TRUE(std::isinf(back.logprobs[2]));
  EXPECT_EQ(back.finish, FinishReason::kLength);
  EXPECT_EQ(back.prompt_tokens, 12u);
  EXPECT_EQ(back.completion_tokens, 3u);
  EXPECT_EQ(back.cached_prompt_tokens, 8u);
  EXPECT_EQ(back.ttft_ms, 12.5);
  EXPECT_EQ(back.itl_ms, 3.25);
  EXPECT_EQ(back.queue_ms, 0.5);

  GenerationChunk mid;
  mid.text = "x";
  mid.token_ids = {1};
  ASSERT_TRUE(DecodeChunk(ChunkBytes(mid), &back).ok());
  EXPECT_EQ(back.finish, FinishReason::kNone);
  EXPECT_TRUE(back.logprobs.empty());
  // What msgpack-c reads of it: the documented fields, and nothing of the end.
  size_t off = 0;
  auto fields = msgpack::unpack(ChunkBytes(mid).data(), ChunkBytes(mid).size(), off).get().as<Fields>();
  EXPECT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields["text"].as_string(), "x");
}

TEST(GenerationChunk, DecodeErrors) {
  auto error = [](const std::string& msgpack) {
    GenerationChunk c;
    return DecodeChunk(msgpack, &c).message();
  };
  EXPECT_EQ(error(""), "chunk: expected a map, got nothing (truncated)");
  EXPECT_EQ(error(Packed({{"text", int64_t{1}}})), "chunk.text: expected a string, got an integer");
  EXPECT_EQ(error(Packed({{"token_ids", Array({int64_t{1}, int64_t{2}})}, {"logprobs", Array({-1.0})}})),
            "chunk.logprobs: 1 values for 2 tokens");
  EXPECT_EQ(error(Packed({{"finish_reason", std::string("abort")}})), "chunk.finish_reason: unknown 'abort'");
  EXPECT_EQ(error(Packed({{"prompt_tokens", int64_t{-1}}})), "chunk.prompt_tokens: -1 is out of range");
  EXPECT_EQ(error(Packed({{"ttft_ms", -2.0}})), "chunk.ttft_ms: must be at least 0");
  EXPECT_EQ(FinishReasonName(FinishReason::kStop), "stop");
  EXPECT_EQ(FinishReasonName(FinishReason::kNone), "");
}

}  // namespace
}  // namespace shoal::wire
