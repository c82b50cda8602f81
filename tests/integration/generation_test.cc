// Generation through the whole serving path — gateway, JetStream, a worker's
// generation engine, the native Llama-family runtime — on the seeded
// qwen3-tiny and llama-tiny models (scripts/make-test-models): OpenAI chat
// and completions, native generate, streaming, stop strings, seeds, output
// held to a JSON schema, a regex or a choice, an
// over-long prompt, prefix reuse, continuous batching against one request at
// a time, and a client hang-up that frees the sequence's KV blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <future>
#include <regex>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/http_client.h"
#include "support/test_cluster.h"
#include "support/test_models.h"

namespace shoal::testing {
namespace {

using nlohmann::json;

std::string GenerateProfile(const std::string& id, const std::string& dir, const std::string& native) {
  return "id: " + id + "\nruntime: native\ntask: generate\npath: " + kModels + "/" + dir +
         "\nqueue: {ack_wait_ms: 5000, max_deliver: 3}\npinned: true\n"
         "batching: {max_batch_requests: 16, max_batch_tokens: 64}\nnative: " + native + "\n";
}

class Generation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new TestCluster();
    cluster_->Register(GenerateProfile("qwen3", "qwen3-tiny", "{max_context: 2048, kv_cache_tokens: 8192, kv_block_tokens: 8}"));
    cluster_->Register(GenerateProfile("llama", "llama-tiny", "{max_context: 64}"));
    // Room for 24 blocks of 8 positions: a few sequences fill it.
    cluster_->Register(GenerateProfile("qwen3-small-kv", "qwen3-tiny",
                               "{max_context: 128, kv_cache_tokens: 192, kv_block_tokens: 8}"));
    worker_ = cluster_->StartWorker().release();
    for (const char* m : {"qwen3", "llama", "qwen3-small-kv"}) cluster_->WaitForWorkers(m, 1);
    gateway_ = cluster_->StartGateway().release();
  }
  static void TearDownTestSuite() {
    delete gateway_;
    delete worker_;
    delete cluster_;
  }

  static json Post(const std::string& path, const json& body, int want_status = 200) {
    HttpClient http(gateway_->port());
    auto res = http.PostJson(path, body.dump());
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    if (!res.ok()) return {};
    EXPECT_EQ(res->status, want_status) << path << " " << res->body;
    return json::parse(res->body, nullptr, false);
  }

  static json Chat(const std::string& user, json extra = json::object()) {
    json body = {{"model", "qwen3"}, {"messages", {{{"role", "user"}, {"content", user}}}}, {"max_tokens", 24},
                 {"temperature", 0}};
    body.update(extra);
    return body;
  }

  // The greedy token ids of /v1/generate/qwen3 for `prompt`, with `extra`.
  static std::vector<int> GreedyIds(const std::string& prompt, json extra) {
    json body = {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"ignore_eos", true}};
    body.update(extra);
    const json r = Post("/v1/generate/qwen3", body);
    return r.value("token_ids", json::array()).get<std::vector<int>>();
  }

  // The data of every SSE event of a streamed request.
  static std::vector<std::string> Stream(const std::string& path, const json& body) {
    StreamConnection c(gateway_->port());
    EXPECT_TRUE(c.PostJson(path, body.dump()).ok());
    auto head = c.ReadHead();
    EXPECT_TRUE(head.ok());
    if (!head.ok()) return {};
    EXPECT_EQ(head->status, 200) << head->body;
    EXPECT_EQ(head->Header("content-type"), "text/event-stream");
    auto events = c.RemainingEvents();
    EXPECT_TRUE(events.ok());
    EXPECT_TRUE(c.body_ended());
    return events.ok() ? *events : std::vector<std::string>{};
  }

  static inline TestCluster* cluster_ = nullptr;
  static inline worker::Worker* worker_ = nullptr;
  static inline gateway::Gateway* gateway_ = nullptr;
};

TEST_F(Generation, ChatCompletionStreamsTheSameTextItAnswersWhole) {
  const json whole = Post("/v1/chat/completions", Chat("Tell me about the river."));
  const std::string content = whole["choices"][0]["message"]["content"];
  EXPECT_FALSE(content.empty());
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_GT(whole["usage"]["prompt_tokens"].get<int>(), 5);
  EXPECT_GT(whole["usage"]["completion_tokens"].get<int>(), 0);

  const auto events = Stream("/v1/chat/completions", Chat("Tell me about the river.", {{"stream", true}}));
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string streamed, finish;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json e = json::parse(events[i]);
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    const json& choice = e["choices"][0];
    if (choice["delta"].contains("content")) streamed += choice["delta"]["content"].get<std::string>();
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  EXPECT_EQ(streamed, content);
  EXPECT_EQ(finish, whole["choices"][0]["finish_reason"]);
}

TEST_F(Generation, CompletionsAndNativeGenerateAgreeOnGreedyText) {
  const json c = Post("/v1/completions", {{"model", "llama"}, {"prompt", "The school of fish"}, {"max_tokens", 12},
                                         {"temperature", 0}, {"ignore_eos", true}});
  const json g = Post("/v1/generate/llama", {{"prompt", "The school of fish"}, {"max_tokens", 12},
                                            {"temperature", 0}, {"ignore_eos", true}});
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], g["text"]);
  EXPECT_EQ(g["token_ids"].size(), 12u);
  EXPECT_EQ(g["finish_reason"], "length");
  EXPECT_GT(g["timing"]["ttft_ms"].get<double>(), 0);
}

TEST_F(Generation, AGeneratorTokenizesToo) {
  const json r = Post("/v1/tokenize/llama", {{"inputs", "the river"}});
  ASSERT_TRUE(r.is_array()) << r.dump();
  ASSERT_FALSE(r[0].empty());
  EXPECT_EQ(r[0][0]["text"], "<|begin_of_text|>");  // Llama-3's post-processor adds it
}

TEST_F(Generation, TheSameSeedGivesTheSameText) {
  auto sample = [](int seed) {
    return Post("/v1/chat/completions",
                Chat("Write about machines.", {{"temperature", 1.0}, {"seed", seed}, {"ignore_eos", true}}))
        ["choices"][0]["message"]["content"].get<std::string>();
  };
  const std::string a = sample(7);
  EXPECT_EQ(sample(7), a);
  EXPECT_NE(sample(8), a);
}

TEST_F(Generation, AStopStringEndsTheTextBeforeIt) {
  const json base = Chat("Tell me about the kitchen.", {{"ignore_eos", true}});
  const std::string full = Post("/v1/chat/completions", base)["choices"][0]["message"]["content"];
  // Three ASCII bytes from the middle on (the text may hold other
  // characters; a stop string is whole characters).
  size_t at = full.size() / 2;
  auto ascii = [&](size_t i) { return static_cast<unsigned char>(full[i]) < 0x80; };
  while (at + 3 <= full.size() && !(ascii(at) && ascii(at + 1) && ascii(at + 2))) ++at;
  ASSERT_LE(at + 3, full.size()) << full;
  const std::string stop = full.substr(at, 3);
  json with_stop = base;
  with_stop["stop"] = {stop};
  const json r = Post("/v1/chat/completions", with_stop);
  EXPECT_EQ(r["choices"][0]["message"]["content"], full.substr(0, full.find(stop)));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
}

TEST_F(Generation, AnOverLongPromptIsRefused) {
  std::string words;
  for (int i = 0; i < 100; ++i) words += "the river runs past the mill ";
  const json r = Post("/v1/completions", {{"model", "llama"}, {"prompt", words}, {"max_tokens", 4}}, 400);
  EXPECT_EQ(r["error"]["code"], "INVALID_INPUT");
  EXPECT_NE(r["error"]["message"].get<std::string>().find("context"), std::string::npos) << r.dump();
  // max_tokens past the context is refused too, before anything runs.
  const json m = Post("/v1/completions", {{"model", "llama"}, {"prompt", "a"}, {"max_tokens", 1000}}, 400);
  EXPECT_EQ(m["error"]["code"], "INVALID_INPUT");
}

TEST_F(Generation, ConcurrentRequestsDecodeAsTheyWouldAlone) {
  const std::vector<std::string> prompts = {"fish", "The river runs", "A worker that is busy", "Good tools",
                                            "What makes a good batch?", "numbers like 42", "the kitchen", "An encoder"};
  std::vector<std::string> alone;
  for (const auto& p : prompts) {
    alone.push_back(Post("/v1/chat/completions", Chat(p, {{"ignore_eos", true}}))["choices"][0]["message"]["content"]);
  }
  std::vector<std::future<std::string>> together;
  for (const auto& p : prompts) {
    together.push_back(std::async(std::launch::async, [p] {
      return Post("/v1/chat/completions", Chat(p, {{"ignore_eos", true}}))["choices"][0]["message"]["content"]
          .get<std::string>();
    }));
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(together[i].get(), alone[i]) << prompts[i];
  const auto stats = worker_->generation("qwen3");
  ASSERT_TRUE(stats.has_value());
  EXPECT_GT(stats->steps, 0u);
}

TEST_F(Generation, SequencesPreemptedForKvRoomFinishAsTheyWouldAlone) {
  // Eight sequences of ~70 positions want ~72 blocks of a 24-block cache:
  // the youngest are preempted and recomputed, and the text is the same.
  const std::vector<std::string> prompts = {"fish", "The river", "A worker", "Good tools",
                                            "a batch", "numbers", "the kitchen", "An encoder"};
  auto body = [](const std::string& p) {
    return json{{"model", "qwen3-small-kv"}, {"prompt", p}, {"max_tokens", 60}, {"temperature", 0},
                {"ignore_eos", true}};
  };
  std::vector<std::string> alone;
  for (const auto& p : prompts) alone.push_back(Post("/v1/completions", body(p))["choices"][0]["text"]);
  const auto before = worker_->generation("qwen3-small-kv");
  ASSERT_TRUE(before.has_value());
  std::vector<std::future<std::string>> together;
  for (const auto& p : prompts) {
    together.push_back(std::async(std::launch::async, [&body, p] {
      return Post("/v1/completions", body(p))["choices"][0]["text"].get<std::string>();
    }));
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(together[i].get(), alone[i]) << prompts[i];
  const auto after = worker_->generation("qwen3-small-kv");
  EXPECT_GT(after->preemptions, before->preemptions);
  EXPECT_EQ(after->kv_blocks_free, after->kv_blocks_total);
}

TEST_F(Generation, LogprobsComeWithEachToken) {
  const json r = Post("/v1/chat/completions", Chat("Tell me about fish.", {{"logprobs", true}, {"max_tokens", 6},
                                                                          {"ignore_eos", true}}));
  const json& content = r["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 6u) << r.dump();
  std::string text;
  for (const json& t : content) {
    EXPECT_LE(t["logprob"].get<double>(), 0.0);
    text += t["token"].get<std::string>();
  }
  EXPECT_EQ(text, r["choices"][0]["message"]["content"]);
  // Greedy picks the most likely token: never less likely than a coin flip
  // among the tiny vocabulary (576), so its log-probability is above ln(1/576).
  for (const json& t : content) EXPECT_GT(t["logprob"].get<double>(), std::log(1.0 / 576));
}

// Documents checked by the jsonschema library (tests/reference/json_schema_check.py).
void ExpectValid(const json& schema, const std::vector<std::string>& documents) {
  const std::string dir = ::testing::TempDir();
  const std::string in = dir + "/schema_check_in.json", out = dir + "/schema_check_out.txt";
  std::ofstream(in) << json{{"schema", schema}, {"documents", documents}}.dump();
  const std::string cmd = "/usr/bin/python3 " + std::string(SHOAL_SOURCE_DIR) +
                          "/tests/reference/json_schema_check.py < " + in + " > " + out + " 2>&1";
  const int rc = std::system(cmd.c_str());
  std::stringstream report;
  report << std::ifstream(out).rdbuf();
  EXPECT_EQ(rc, 0) << report.str();
}

// Whatever the random weights prefer, the answer is a document of the
// schema: greedy and sampled, several seeds, each validated by jsonschema.
TEST_F(Generation, AJsonSchemaHoldsTheAnswer) {
  // Small enough that its documents fit the context whatever whitespace
  // the random weights pick.
  const json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "title": {"type": "string", "maxLength": 8},
      "year": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
      "kind": {"enum": ["film", "book"]},
      "author": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}},
                 "required": ["name"], "additionalProperties": false}
    },
    "required": ["title", "year", "kind", "author"],
    "additionalProperties": false
  })");
  const json format = {{"type", "json_schema"},
                       {"json_schema", {{"name", "work"}, {"schema", schema}, {"strict", true}}}};
  std::vector<std::string> docs;
  for (int seed = 0; seed < 4; ++seed) {
    const json r = Post("/v1/chat/completions",
                        Chat("Describe a work as JSON.", {{"response_format", format}, {"max_tokens", 460},
                                                          {"temperature", seed == 0 ? 0.0 : 1.0}, {"seed", seed}}));
    ASSERT_FALSE(r["choices"].empty()) << r.dump();
    EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << r.dump();
    docs.push_back(r["choices"][0]["message"]["content"]);
  }
  ExpectValid(schema, docs);

  // Streamed, the deltas make the same document.
  const auto events = Stream("/v1/chat/completions", Chat("Describe a work as JSON.", {{"response_format", format},
                                                                                      {"max_tokens", 460},
                                                                                      {"stream", true}}));
  std::string streamed;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json e = json::parse(events[i]);
    const json& delta = e["choices"][0]["delta"];
    if (delta.contains("content")) streamed += delta["content"].get<std::string>();
  }
  EXPECT_EQ(streamed, docs[0]);

  // json_object: an object. Inside a string the random weights rarely pick
  // the closing quote among hundreds of tokens, so the answer may run to
  // max_tokens; what it wrote is then the start of one.
  const json r = Post("/v1/chat/completions", Chat("Some JSON, please.", {{"response_format", {{"type", "json_object"}}},
                                                                         {"max_tokens", 64}}));
  const std::string content = r["choices"][0]["message"]["content"];
  if (r["choices"][0]["finish_reason"] == "stop") {
    EXPECT_TRUE(json::parse(content, nullptr, false).is_object()) << content;
  } else {
    EXPECT_EQ(content.substr(0, 1), "{") << content;
  }
}

TEST_F(Generation, TheNativeRouteHoldsTheTextToARegexOrAChoice) {
  const std::string pattern = "[A-Z][a-z]{2,6}-\\d{3}( \\(ok\\))?";
  for (int seed = 0; seed < 3; ++seed) {
    const json r = Post("/v1/generate/qwen3", {{"prompt", "A code:"}, {"max_tokens", 40}, {"temperature", 1.0},
                                               {"seed", seed},
                                               {"response_format", {{"type", "regex"}, {"pattern", pattern}}}});
    const std::string text = r["text"];
    EXPECT_TRUE(std::regex_match(text, std::regex(pattern))) << text;
    EXPECT_EQ(r["finish_reason"], "stop") << r.dump();
  }
  const std::vector<std::string> choices = {"positive", "negative", "neutral ☺"};
  for (int seed = 0; seed < 3; ++seed) {
    const json r = Post("/v1/generate/qwen3", {{"prompt", "Sentiment:"}, {"temperature", 1.0}, {"seed", seed},
                                               {"response_format", {{"type", "choice"}, {"choices", choices}}}});
    EXPECT_NE(std::find(choices.begin(), choices.end(), r["text"].get<std::string>()), choices.end()) << r.dump();
  }
}

TEST_F(Generation, FormatsThatCannotBeHeldAre400NamingTheField) {
  const auto refused = [](const json& format, const std::string& route, const std::string& field) {
    const json body = route == "chat"
                          ? Chat("x", {{"response_format", format}})
                          : json{{"prompt", "x"}, {"response_format", format}};
    const json r = Post(route == "chat" ? "/v1/chat/completions" : "/v1/generate/qwen3", body, 400);
    EXPECT_EQ(r["error"]["code"], "INVALID_INPUT") << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find(field), std::string::npos) << r.dump();
  };
  auto schema = [](const json& s) { return json{{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", s}}}}; };
  refused(schema({{"type", "string"}, {"pattern", "a+"}}), "chat", "response_format.json_schema.schema");
  refused(schema({{"$ref", "#"}}), "chat", "response_format.json_schema.schema");  // satisfied by nothing
  refused({{"type", "regex"}, {"pattern", "(a"}}, "native", "response_format.pattern");
  refused({{"type", "regex"}, {"pattern", "a(?=b)"}}, "native", "response_format.pattern");
  refused({{"type", "choice"}, {"choices", json::array()}}, "native", "response_format.choices");
  // regex and choice are the native route's.
  refused({{"type", "regex"}, {"pattern", "a"}}, "chat", "response_format.type");
}

TEST_F(Generation, LogitBiasForcesOrForbidsATokenAndMinTokensHoldsTheStopTokensBack) {
  const std::vector<int> plain = GreedyIds("The river", json::object());
  ASSERT_EQ(plain.size(), 12u);
  // +100 on a token the model never picks here: it is picked every time.
  int forced = 7;
  while (std::find(plain.begin(), plain.end(), forced) != plain.end()) ++forced;
  EXPECT_EQ(GreedyIds("The river", {{"logit_bias", {{std::to_string(forced), 100}}}}), std::vector<int>(12, forced));
  // -100 on the first greedy token: never picked.
  const std::vector<int> without = GreedyIds("The river", {{"logit_bias", {{std::to_string(plain[0]), -100}}}});
  EXPECT_EQ(std::find(without.begin(), without.end(), plain[0]), without.end());
  // The first greedy token as a stop token ends the answer at once; with
  // min_tokens 3 it cannot come before three tokens are out.
  const json stop = {{"prompt", "The river"}, {"max_tokens", 12}, {"temperature", 0}, {"stop_token_ids", {plain[0]}}};
  const json stopped = Post("/v1/generate/qwen3", stop);
  EXPECT_EQ(stopped["token_ids"], json::array({plain[0]})) << stopped.dump();  // the stop token, and no text
  EXPECT_EQ(stopped["text"], "");
  json held = stop;
  held["min_tokens"] = 3;
  const std::vector<int> ids = Post("/v1/generate/qwen3", held)["token_ids"].get<std::vector<int>>();
  ASSERT_GE(ids.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_NE(ids[i], plain[0]) << i;
  // Another runtime's model would drop them: refused there (the llama.cpp
  // serving test), and out-of-vocabulary ids are refused here.
  const json r = Post("/v1/generate/qwen3", {{"prompt", "x"}, {"logit_bias", {{"99999", 1}}}}, 400);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("logit_bias.99999: not a token of this model"),
            std::string::npos) << r.dump();
}

// A positive penalty lowers only tokens it counts, so greedy decoding with
// one can leave the plain greedy path only for a token the penalty counted:
// one already in the output (presence, frequency) or in prompt or output
// (repetition).
TEST_F(Generation, PenaltiesTurnGreedyDecodingOnlyAwayFromTokensTheyCount) {
  const std::string prompt = "numbers like 42 and 42 and 42";
  const std::vector<int> plain = GreedyIds(prompt, {{"max_tokens", 24}});
  auto tokenize = [&](const std::string& text) {
    const json t = Post("/v1/tokenize/qwen3", {{"inputs", text}, {"add_special_tokens", false}});
    std::vector<int> ids;
    for (const json& tok : t[0]) ids.push_back(tok["id"]);
    return ids;
  };
  const std::vector<int> prompt_ids = tokenize(prompt);
  int diverged = 0;
  for (const auto& [field, counts_prompt] : {std::pair{"presence_penalty", false}, {"frequency_penalty", false},
                                             {"repetition_penalty", true}}) {
    const std::vector<int> penalized = GreedyIds(prompt, {{"max_tokens", 24}, {field, 1.9}});
    ASSERT_EQ(penalized.size(), plain.size()) << field;
    size_t i = 0;
    while (i < plain.size() && plain[i] == penalized[i]) ++i;
    if (i == plain.size()) continue;
    ++diverged;
    const bool in_output = std::find(plain.begin(), plain.begin() + i, plain[i]) != plain.begin() + i;
    const bool in_prompt = std::find(prompt_ids.begin(), prompt_ids.end(), plain[i]) != prompt_ids.end();
    EXPECT_TRUE(in_output || (counts_prompt && in_prompt)) << field << " left the greedy path at " << i;
  }
  EXPECT_GT(diverged, 0) << "no penalty changed anything: " << json(plain).dump();
}

// Tools through Qwen3's own chat template: a required call is one of the
// tools with arguments its schema accepts (checked by jsonschema), streamed
// as OpenAI streams calls; the calls and the tools' answers go back in.
TEST_F(Generation, ToolCallsComeBackAsOpenAiToolCalls) {
  const json weather = json::parse(R"({"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
    "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city", "unit"], "additionalProperties": false})");
  const json tools = {{{"type", "function"}, {"function", {{"name", "get_weather"}, {"description", "The weather now"},
                                                          {"parameters", weather}}}},
                      {{"type", "function"}, {"function", {{"name", "get_time"}, {"parameters", {{"type", "object"},
                                                           {"properties", json::object()}, {"additionalProperties", false}}}}}}};
  std::vector<std::string> arguments;
  for (int seed = 0; seed < 3; ++seed) {
    const json r = Post("/v1/chat/completions",
                        Chat("What is the weather in Oslo?", {{"tools", tools}, {"tool_choice", "required"},
                                                              {"parallel_tool_calls", false}, {"max_tokens", 200},
                                                              {"temperature", 1.0}, {"seed", seed}}));
    const json& choice = r["choices"][0];
    ASSERT_EQ(choice["finish_reason"], "tool_calls") << r.dump();
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.dump();
    const json& call = choice["message"]["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    EXPECT_FALSE(call["id"].get<std::string>().empty());
    const std::string name = call["function"]["name"];
    if (name == "get_weather") {
      arguments.push_back(call["function"]["arguments"]);
    } else {
      EXPECT_EQ(name, "get_time") << r.dump();
      EXPECT_EQ(json::parse(call["function"]["arguments"].get<std::string>()), json::object());
    }
  }
  // A named function: that one, greedy too.
  const json named = Chat("What is the weather in Oslo?",
                          {{"tools", tools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}},
                           {"max_tokens", 200}});
  const json n = Post("/v1/chat/completions", named);
  ASSERT_EQ(n["choices"][0]["finish_reason"], "tool_calls") << n.dump();
  const json& call = n["choices"][0]["message"]["tool_calls"][0];
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_TRUE(n["choices"][0]["message"]["content"].is_null()) << n.dump();
  arguments.push_back(call["function"]["arguments"]);
  ExpectValid(weather, arguments);

  // Streamed: the same call, as a delta with its index, id, name and arguments.
  json streamed_body = named;
  streamed_body["stream"] = true;
  const auto events = Stream("/v1/chat/completions", streamed_body);
  json streamed_call;
  std::string finish;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json e = json::parse(events[i]);
    const json& c = e["choices"][0];
    if (c["delta"].contains("tool_calls")) streamed_call = c["delta"]["tool_calls"][0];
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_EQ(streamed_call["index"], 0);
  EXPECT_EQ(streamed_call["function"], call["function"]);

  // The call and the tool's answer go back in: the template renders them
  // (the prompt grows by both), and the model answers.
  const json messages = {{{"role", "user"}, {"content", "What is the weather in Oslo?"}},
                         {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}},
                         {{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "-3 and snowing"}}};
  json follow = Chat("", {{"tools", tools}, {"messages", messages}, {"max_tokens", 8}});
  const json answer = Post("/v1/chat/completions", follow);
  json shorter = follow;
  shorter["messages"] = json::array({messages[0]});
  const json first = Post("/v1/chat/completions", shorter);
  EXPECT_GT(answer["usage"]["prompt_tokens"].get<int>(), first["usage"]["prompt_tokens"].get<int>() + 10)
      << answer.dump();
  // Without tools the prompt is shorter still: the template lists them.
  shorter.erase("tools");
  EXPECT_LT(Post("/v1/chat/completions", shorter)["usage"]["prompt_tokens"].get<int>(),
            first["usage"]["prompt_tokens"].get<int>());
}

TEST_F(Generation, BadToolRequestsAre400NamingTheField) {
  const json tools = {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {{"type", "object"},
                       {"properties", {{"code", {{"type", "string"}, {"pattern", "[0-9]+"}}}}}}}}}}};
  // A schema Shoal cannot hold a required call to: 400 at the worker, naming it.
  const json r = Post("/v1/chat/completions", Chat("x", {{"tools", tools}, {"tool_choice", "required"}}), 400);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("tools[0].function.parameters at /properties/code"),
            std::string::npos) << r.dump();
  // With "auto" nothing is held, so the same tools are fine.
  Post("/v1/chat/completions", Chat("x", {{"tools", tools}, {"max_tokens", 4}}));
  // A model whose template renders no tool calls (llama-tiny's) cannot take tools.
  const json llama = Post("/v1/chat/completions",
                          {{"model", "llama"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"tools", tools}}, 400);
  EXPECT_NE(llama["error"]["message"].get<std::string>().find("tools: the model's chat template"), std::string::npos)
      << llama.dump();
}

// The alternatives are the model's own log-probabilities, most likely first;
// greedy, the chosen token is the first of them.
TEST_F(Generation, TopLogprobsListTheMostLikelyTokensOnEveryRoute) {
  const json r = Post("/v1/chat/completions", Chat("Tell me about fish.", {{"logprobs", true}, {"top_logprobs", 5},
                                                                          {"max_tokens", 6}, {"ignore_eos", true}}));
  const json& content = r["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 6u) << r.dump();
  for (const json& t : content) {
    const json& top = t["top_logprobs"];
    ASSERT_EQ(top.size(), 5u) << t.dump();
    EXPECT_NEAR(top[0]["logprob"].get<double>(), t["logprob"].get<double>(), 1e-5) << t.dump();
    double mass = 0;
    for (size_t k = 0; k < top.size(); ++k) {
      if (k) { EXPECT_LE(top[k]["logprob"].get<double>(), top[k - 1]["logprob"].get<double>()); }
      mass += std::exp(top[k]["logprob"].get<double>());
    }
    EXPECT_LE(mass, 1.0 + 1e-5);
  }
  const json g = Post("/v1/generate/qwen3", {{"prompt", "fish"}, {"max_tokens", 4}, {"temperature", 0}, {"ignore_eos", true},
                                             {"logprobs", true}, {"top_logprobs", 3}});
  ASSERT_EQ(g["top_logprobs"].size(), 4u) << g.dump();
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(g["top_logprobs"][i][0]["id"], g["token_ids"][i]) << g.dump();
  const json c = Post("/v1/completions", {{"model", "qwen3"}, {"prompt", "fish"}, {"max_tokens", 4}, {"temperature", 0},
                                          {"ignore_eos", true}, {"logprobs", 2}});
  const json& top = c["choices"][0]["logprobs"]["top_logprobs"];
  ASSERT_EQ(top.size(), 4u) << c.dump();
  for (const json& alternatives : top) EXPECT_LE(alternatives.size(), 2u);
}

TEST_F(Generation, ASharedPromptPrefixIsReused) {
  std::string system;
  for (int i = 0; i < 6; ++i) system += "You answer questions about rivers, kitchens and queues. ";
  auto ask = [&](const std::string& q) {
    return Post("/v1/chat/completions",
                {{"model", "qwen3"}, {"max_tokens", 4}, {"temperature", 0},
                 {"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", q}}}}});
  };
  ask("Why do fish school?");
  const json second = ask("What is a batch?");
  EXPECT_GE(second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 40) << second.dump();
}

TEST_F(Generation, NOutputsShareThePromptsKvBlocksAndEachIsReproducible) {
  // A prompt nobody sent before: 7 full blocks of 8 positions at least.
  std::string prompt = "Count the herons on the north bank of the slow river:";
  for (int i = 0; i < 5; ++i) prompt += " one heron, then another heron, near reeds " + std::to_string(i) + ";";
  const auto before = worker_->generation("qwen3");
  ASSERT_TRUE(before.has_value());
  const json greedy = Post("/v1/completions", {{"model", "qwen3"}, {"prompt", prompt}, {"max_tokens", 8},
                                               {"temperature", 0}, {"ignore_eos", true}, {"n", 4}});
  ASSERT_EQ(greedy["choices"].size(), 4u) << greedy.dump();
  const int prompt_tokens = greedy["usage"]["prompt_tokens"];
  ASSERT_GE(prompt_tokens, 57) << "the prompt should fill 7 blocks";
  EXPECT_EQ(greedy["usage"]["completion_tokens"], 32);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(greedy["choices"][i]["index"], i);
    EXPECT_EQ(greedy["choices"][i]["text"], greedy["choices"][0]["text"]) << "greedy outputs agree";
  }
  // The other three outputs adopted the prompt's full blocks rather than
  // computing them again.
  const auto after = worker_->generation("qwen3");
  const uint64_t full_blocks = static_cast<uint64_t>(prompt_tokens - 1) / 8;
  EXPECT_GE(after->prefix_hit_blocks - before->prefix_hit_blocks, 3 * full_blocks);
  // And what they share changes nothing: one output alone says the same.
  const json one = Post("/v1/completions", {{"model", "qwen3"}, {"prompt", prompt}, {"max_tokens", 8},
                                            {"temperature", 0}, {"ignore_eos", true}});
  EXPECT_EQ(one["choices"][0]["text"], greedy["choices"][0]["text"]);

  // Sampled: each output draws its own tokens; a seed makes all of them
  // reproducible, and the first is what n = 1 with that seed gives.
  auto sample = [&](int n) {
    const json r = Post("/v1/chat/completions",
                        Chat("Write about machines.", {{"temperature", 1.0}, {"seed", 11}, {"ignore_eos", true},
                                                       {"n", n}}));
    std::vector<std::string> texts;
    for (const json& c : r["choices"]) texts.push_back(c["message"]["content"]);
    return texts;
  };
  const auto three = sample(3);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_NE(three[0], three[1]);
  EXPECT_NE(three[1], three[2]);
  EXPECT_EQ(sample(3), three);
  EXPECT_EQ(sample(1), std::vector<std::string>{three[0]});
}

TEST_F(Generation, NStreamsEveryOutputWithItsIndex) {
  const auto events = Stream("/v1/chat/completions", Chat("Tell me about queues.", {{"stream", true}, {"n", 2},
                                                                                   {"temperature", 0.8},
                                                                                   {"seed", 3}}));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text[2];
  int finishes[2] = {0, 0}, roles[2] = {0, 0};
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json e = json::parse(events[i]);
    ASSERT_EQ(e["choices"].size(), 1u) << events[i];
    const json& c = e["choices"][0];
    const int index = c["index"];
    ASSERT_TRUE(index == 0 || index == 1) << events[i];
    if (c["delta"].contains("role")) ++roles[index];
    if (c["delta"].contains("content")) text[index] += c["delta"]["content"].get<std::string>();
    if (!c["finish_reason"].is_null()) ++finishes[index];
  }
  const json whole = Post("/v1/chat/completions", Chat("Tell me about queues.", {{"n", 2}, {"temperature", 0.8},
                                                                                 {"seed", 3}}));
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(roles[i], 1);
    EXPECT_EQ(finishes[i], 1);
    EXPECT_EQ(text[i], whole["choices"][i]["message"]["content"]) << "output " << i;
  }
}

TEST_F(Generation, FieldsLeftOutTakeTheModelsGenerationConfig) {
  // qwen3-tiny's generation_config.json: temperature 0.6, top_k 20, top_p 0.95.
  auto sample = [](json extra) {
    json body = {{"model", "qwen3"}, {"messages", {{{"role", "user"}, {"content", "Write about machines."}}}},
                 {"max_tokens", 24}, {"seed", 5}, {"ignore_eos", true}};
    body.update(extra);
    return Post("/v1/chat/completions", body)["choices"][0]["message"]["content"].get<std::string>();
  };
  const std::string defaulted = sample(json::object());
  EXPECT_EQ(sample({{"temperature", 0.6}, {"top_k", 20}, {"top_p", 0.95}}), defaulted);
  // A field the client sends is its own, the others still the model's.
  EXPECT_EQ(sample({{"temperature", 0.6}}), defaulted);
  EXPECT_NE(sample({{"temperature", 1.0}, {"top_k", 0}, {"top_p", 1.0}}), defaulted);
}

TEST_F(Generation, AClientThatHangsUpFreesItsSequence) {
  const auto before = worker_->generation("qwen3");
  ASSERT_TRUE(before.has_value());
  {
    StreamConnection c(gateway_->port());
    ASSERT_TRUE(c.PostJson("/v1/completions", json({{"model", "qwen3"}, {"prompt", "Once"}, {"max_tokens", 500},
                                                     {"ignore_eos", true}, {"stream", true}})
                                                  .dump())
                    .ok());
    auto head = c.ReadHead();
    ASSERT_TRUE(head.ok());
    ASSERT_EQ(head->status, 200);
    ASSERT_TRUE(c.NextEvent().ok());  // generating
    c.Close();
  }
  // The sequence stops well before its 500 tokens and gives its blocks back.
  std::optional<worker::GenerationEngine::Stats> after;
  for (int i = 0; i < 200; ++i) {
    after = worker_->generation("qwen3");
    if (after && after->running == 0 && after->kv_blocks_free == after->kv_blocks_total) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->running, 0);
  EXPECT_EQ(after->kv_blocks_free, after->kv_blocks_total);
  EXPECT_LT(after->tokens_generated - before->tokens_generated, 500u);
}

}  // namespace
}  // namespace shoal::testing
