// Speculative decoding through the whole serving path (worker/drafter.h): a
// draft model (qwen3-tiny itself registered as a draft, which always agrees;
// qwen3-tiny-draft, its first layer alone, which agrees some of the time)
// and prompt lookup (ngram). With greedy decoding every one must give the
// plain model's tokens exactly — alone and in a continuous batch, with
// penalties and logprobs, held to a JSON schema — while drafts are both
// accepted and refused. A draft whose tokenizer differs is refused at load,
// one that is not registered at registration.
// (The sampling rule's exactness is tested statistically in
// tests/unit/speculative_sampling_test.cc.)
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>

#include "support/http_client.h"
#include "support/test_cluster.h"
#include "support/test_models.h"

namespace shoal::testing {
namespace {

using nlohmann::json;

std::string Profile(const std::string& id, const std::string& dir, const std::string& extra = "") {
  return "id: " + id + "\nruntime: native\ntask: generate\npath: " + kModels + "/" + dir +
         "\nqueue: {ack_wait_ms: 5000, max_deliver: 3}\n"
         "batching: {max_batch_requests: 16, max_batch_tokens: 96}\n"
         "native: {max_context: 512, kv_cache_tokens: 4096, kv_block_tokens: 8}\n" + extra;
}

const char* kTargets[] = {"spec-copy", "spec-layer", "spec-ngram"};

class Speculative : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new TestCluster();
    cluster_->Register(Profile("plain", "qwen3-tiny", "pinned: true\n"));
    // Drafts are registered generators like any other (not pinned: only
    // their targets load them).
    cluster_->Register(Profile("draft/copy", "qwen3-tiny"));
    cluster_->Register(Profile("draft/layer", "qwen3-tiny-draft"));
    cluster_->Register(Profile("draft/llama", "llama-tiny"));
    cluster_->Register(Profile("spec-copy", "qwen3-tiny", "pinned: true\nspeculative: {draft: draft/copy, k: 4}\n"));
    cluster_->Register(Profile("spec-layer", "qwen3-tiny", "pinned: true\nspeculative: {draft: draft/layer, k: 3}\n"));
    cluster_->Register(Profile("spec-ngram", "qwen3-tiny", "pinned: true\nspeculative: {draft: ngram, k: 5}\n"));
    cluster_->Register(Profile("spec-mismatch", "qwen3-tiny", "speculative: {draft: draft/llama}\n"));
    worker_ = cluster_->StartWorker().release();
    for (const char* m : {"plain", "spec-copy", "spec-layer", "spec-ngram"}) cluster_->WaitForWorkers(m, 1);
    gateway_ = cluster_->StartGateway().release();
  }
  static void TearDownTestSuite() {
    delete gateway_;
    delete worker_;
    delete cluster_;
  }

  static json Generate(const std::string& model, const json& body, int want_status = 200) {
    HttpClient http(gateway_->port());
    auto res = http.PostJson("/v1/generate/" + model, body.dump());
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    if (!res.ok()) return {};
    EXPECT_EQ(res->status, want_status) << model << " " << res->body;
    return json::parse(res->body, nullptr, false);
  }

  static json Greedy(const std::string& prompt, int max_tokens, json extra = json::object()) {
    json body = {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
    body.update(extra);
    return body;
  }

  static inline TestCluster* cluster_ = nullptr;
  static inline worker::Worker* worker_ = nullptr;
  static inline gateway::Gateway* gateway_ = nullptr;
};

const char* kPrompts[] = {"The river runs past the old mill and into the town",
                          "A school of small fish moves as one body, turning together",
                          "Testing such systems is not easy. The numbers must match",
                          "the the the the the the"};

TEST_F(Speculative, GreedyOutputIsThePlainModelsTokenForToken) {
  for (const char* prompt : kPrompts) {
    const json plain = Generate("plain", Greedy(prompt, 48));
    ASSERT_EQ(plain["token_ids"].size(), 48u);
    for (const char* model : kTargets) {
      const json spec = Generate(model, Greedy(prompt, 48));
      EXPECT_EQ(spec["token_ids"], plain["token_ids"]) << model << ": " << prompt;
      EXPECT_EQ(spec["text"], plain["text"]) << model;
    }
  }
  // Drafts were both kept and refused (the layer draft and prompt lookup
  // disagree with the model at times; the copy never does).
  for (const char* model : kTargets) {
    const auto stats = worker_->generation(model);
    ASSERT_TRUE(stats.has_value()) << model;
    EXPECT_GT(stats->drafted_tokens, 0u) << model;
    EXPECT_GT(stats->accepted_tokens, 0u) << model;
    if (std::string(model) == "spec-copy") {
      EXPECT_EQ(stats->accepted_tokens, stats->drafted_tokens);
    } else {
      EXPECT_LT(stats->accepted_tokens, stats->drafted_tokens) << model;
    }
    // Fewer steps than tokens: several tokens came out of one step.
    EXPECT_LT(stats->steps, stats->tokens_generated) << model;
  }
  // The same counts, as Prometheus reads them.
  const std::string page = worker_->RenderMetrics();
  EXPECT_NE(page.find("shoal_worker_draft_tokens_total{model=\"spec-copy\",outcome=\"accepted\"} " +
                      std::to_string(worker_->generation("spec-copy")->accepted_tokens)),
            std::string::npos)
      << page.substr(page.find("shoal_worker_draft_tokens_total"), 600);
  // And the engine's state: nothing runs now; 4096 positions in blocks of 8.
  EXPECT_NE(page.find("shoal_worker_generation_sequences{model=\"plain\",state=\"running\"} 0"), std::string::npos);
  EXPECT_NE(page.find("shoal_worker_kv_blocks{model=\"plain\",state=\"total\"} 512"), std::string::npos)
      << page.substr(page.find("shoal_worker_kv_blocks"), 600);
}

TEST_F(Speculative, AContinuousBatchOfSpeculatingSequencesMatchesOneAtATime) {
  std::vector<json> plain;
  for (const char* prompt : kPrompts) plain.push_back(Generate("plain", Greedy(prompt, 40)));
  for (const char* model : kTargets) {
    std::vector<std::future<json>> runs;
    for (int round = 0; round < 2; ++round) {
      for (const char* prompt : kPrompts) {
        runs.push_back(std::async(std::launch::async, [=] { return Generate(model, Greedy(prompt, 40)); }));
      }
    }
    for (size_t i = 0; i < runs.size(); ++i) {
      EXPECT_EQ(runs[i].get()["token_ids"], plain[i % plain.size()]["token_ids"]) << model << " #" << i;
    }
  }
}

TEST_F(Speculative, PenaltiesLogprobsAndStopsApplyAsWithoutDrafts) {
  const json extra = {{"presence_penalty", 0.8}, {"frequency_penalty", 0.3}, {"logprobs", true},
                      {"top_logprobs", 2},       {"stop", {"fish"}}};
  for (const char* prompt : kPrompts) {
    const json plain = Generate("plain", Greedy(prompt, 32, extra));
    for (const char* model : kTargets) {
      const json spec = Generate(model, Greedy(prompt, 32, extra));
      EXPECT_EQ(spec["token_ids"], plain["token_ids"]) << model;
      EXPECT_EQ(spec["text"], plain["text"]) << model;
      EXPECT_EQ(spec["finish_reason"], plain["finish_reason"]) << model;
      ASSERT_EQ(spec["logprobs"].size(), plain["logprobs"].size()) << model;
      for (size_t i = 0; i < plain["logprobs"].size(); ++i) {
        EXPECT_NEAR(spec["logprobs"][i].get<double>(), plain["logprobs"][i].get<double>(), 1e-3) << model;
      }
    }
  }
}

TEST_F(Speculative, OutputHeldToASchemaIsThePlainModels) {
  const json format = {{"type", "json_schema"},
                       {"json_schema",
                        {{"name", "n"},
                         {"schema",
                          {{"type", "object"},
                           {"properties",
                            {{"word", {{"enum", {"river", "fish", "mill"}}}}, {"seen", {{"type", "boolean"}}}}},
                           {"required", {"word", "seen"}},
                           {"additionalProperties", false}}}}}};
  const json body = {{"prompt", "The river"}, {"max_tokens", 40}, {"temperature", 0}, {"response_format", format}};
  const json plain = Generate("plain", body);
  ASSERT_TRUE(json::parse(plain["text"].get<std::string>(), nullptr, false).is_object()) << plain["text"];
  for (const char* model : kTargets) EXPECT_EQ(Generate(model, body)["token_ids"], plain["token_ids"]) << model;
}

TEST_F(Speculative, SamplingWithDraftsIsReproducibleFromItsSeed) {
  const json body = {{"prompt", "The river runs"}, {"max_tokens", 32}, {"temperature", 0.8},
                     {"top_p", 0.9},           {"seed", 7},          {"ignore_eos", true}};
  for (const char* model : kTargets) {
    const json a = Generate(model, body), b = Generate(model, body);
    EXPECT_EQ(a["token_ids"].size(), 32u) << model;
    EXPECT_EQ(a["token_ids"], b["token_ids"]) << model;
  }
}

TEST_F(Speculative, ADraftWithAnotherTokenizerFailsTheModelsLoad) {
  const json r = Generate("spec-mismatch", Greedy("The river", 4), 502);
  EXPECT_EQ(r["error"]["code"], "MODEL_LOAD_FAILED") << r;
  EXPECT_NE(r["error"]["message"].get<std::string>().find("speculative.draft"), std::string::npos) << r;
}

TEST_F(Speculative, RegistrationRefusesADraftThatIsNotRegisteredOrARuntimeThatCannotSpeculate) {
  HttpClient http(gateway_->port());
  const json spec = {{"id", "spec-orphan"}, {"runtime", "native"}, {"task", "generate"},
                     {"path", kModels + "/qwen3-tiny"}, {"speculative", {{"draft", "draft/none"}}}};
  auto res = http.PostJson("/v1/admin/models", json{{"spec", spec}}.dump());
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 400) << res->body;
  const json body = json::parse(res->body);
  EXPECT_EQ(body["error"]["code"], "INVALID_INPUT");
  EXPECT_NE(body["error"]["message"].get<std::string>().find("speculative.draft"), std::string::npos) << body;
  // Nor does a runtime that batches generation itself take the setting.
  const json other = {{"id", "spec-elsewhere"}, {"runtime", "identity"}, {"task", "generate"},
                      {"speculative", {{"draft", "ngram"}}}};
  res = http.PostJson("/v1/admin/models", json{{"spec", other}}.dump());
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_NE(res->body.find("does not decode speculatively"), std::string::npos) << res->body;
}

}  // namespace
}  // namespace shoal::testing
