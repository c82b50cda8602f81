// The sidecar runtimes (docs/runtime-protocol.md "Runtimes that take
// tokens"): ONNX Runtime through Node (src/runtime/onnx/runtime.mjs) and
// TorchScript through Python (src/runtime/pytorch/runtime.py), on exports of
// the seeded BERT models (scripts/make-test-exports): the conformance suite,
// equality with the native runtime on the same weights, broken models
// refused at registration, and model directories registered on their
// runtime and served through gateway → JetStream → worker → sidecar, with
// the sidecar SIGKILLed under load.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "admin/catalog_admin.h"
#include "admin/model_directory.h"
#include "runtime/process/conformance.h"
#include "runtime/registry/registry.h"
#include "support/child_processes.h"
#include "support/http_client.h"
#include "support/json_items.h"
#include "support/metrics_text.h"
#include "support/test_cluster.h"
#include "support/test_models.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kSidecars = std::string(SHOAL_SOURCE_DIR) + "/src/runtime";

struct Sidecar {
  std::string runtime;
  std::vector<std::string> command;
  std::string suffix;  // of the exported model directories
  std::string script;  // in the command line of its processes
};

const Sidecar kOnnx{"onnx", {"node", kSidecars + "/onnx/runtime.mjs"}, "-onnx", "runtime.mjs"};
const Sidecar kPytorch{"pytorch",
                       {"/usr/bin/python3", kSidecars + "/pytorch/runtime.py"},
                       "-torchscript",
                       "runtime.py"};

ModelSpec Spec(const std::string& yaml) {
  auto spec = ModelSpec::Parse(yaml);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return *spec;
}

std::string Profile(const std::string& runtime, const std::string& path, const std::string& task,
                    const std::string& extra = "") {
  return "id: t/" + runtime + "\nruntime: " + runtime + "\ntask: " + task + "\npath: " + path +
         "\nmax_input_tokens: 16\n" + extra;
}

std::unique_ptr<Model> Load(ModelRuntimes& runtimes, const ModelSpec& spec) {
  Runtime* runtime = runtimes.For(spec);
  EXPECT_TRUE(runtime) << spec.runtime;
  if (!runtime) return nullptr;
  auto m = runtime->Load(*ModelConfig::FromSpec(spec), LoadContext{1});
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// Texts of several lengths; the last is over the limit of 16 and cut.
const std::vector<std::string> kTexts = {
    "fish", "the river runs past the old mill", "a school of small fish moves as one body",
    "the river runs past the old mill and into the town, where people stop on the bridge to watch"};

class Sidecars : public ::testing::TestWithParam<Sidecar> {};

TEST_P(Sidecars, PassTheConformanceSuite) {
  const Sidecar& s = GetParam();
  for (const auto& [model, task] :
       {std::pair{"bert-tiny-mean", "encode"}, {"cross-encoder-tiny", "score"}}) {
    runtime_process::ConformanceOptions o;
    o.model =
        *ModelConfig::FromSpec(Spec(Profile(s.runtime, kModels + "/" + model + s.suffix, task)));
    const auto results =
        runtime_process::RunConformance({.command = s.command}, o, [](const auto&) {});
    EXPECT_GE(results.size(), 12u);
    for (const auto& r : results) {
      EXPECT_TRUE(r.status.ok()) << model << ": " << r.name << ": " << r.status.message();
      EXPECT_FALSE(r.skipped) << r.name;
    }
  }
}

TEST_P(Sidecars, EqualTheNativeRuntimeOnTheSameWeights) {
  const Sidecar& s = GetParam();
  ModelRuntimes runtimes;
  for (const char* name : {"bert-tiny-mean", "roberta-tiny"}) {
    auto native = Load(runtimes, Spec(Profile("native", kModels + "/" + name, "encode")));
    auto other =
        Load(runtimes, Spec(Profile(s.runtime, kModels + "/" + name + s.suffix, "encode")));
    ASSERT_TRUE(native && other);
    std::vector<EncodeInput> in;
    for (const auto& t : kTexts)
      in.push_back({.text = t, .truncate = true, .normalize = true, .lora = {}});
    in.push_back({.text = kTexts[1], .truncate = false, .normalize = false, .lora = {}});
    std::vector<EncodeOutput> want(in.size()), got(in.size());
    ASSERT_TRUE(native->Encode(in, want).ok());
    ASSERT_TRUE(other->Encode(in, got).ok());
    for (size_t i = 0; i < in.size(); ++i) {
      ASSERT_TRUE(got[i].status.ok()) << got[i].status.ToString();
      EXPECT_EQ(got[i].tokens, want[i].tokens);
      EXPECT_EQ(got[i].truncated, want[i].truncated);
      ASSERT_EQ(got[i].dense.size(), want[i].dense.size());
      for (size_t k = 0; k < got[i].dense.size(); ++k)
        EXPECT_NEAR(got[i].dense[k], want[i].dense[k], 1e-4) << name;
    }
    EXPECT_TRUE(want.back().truncated == false && want[3].truncated)
        << "the long text was cut, the short not";

    // Too long without truncate: refused by Shoal's tokenizing, alone.
    std::vector<EncodeInput> mixed = {{.text = kTexts[3]}, {.text = kTexts[0]}};
    std::vector<EncodeOutput> out(2);
    ASSERT_TRUE(other->Encode(mixed, out).ok());
    EXPECT_EQ(out[0].status.code(), Code::kInvalidInput) << out[0].status.ToString();
    EXPECT_TRUE(out[1].status.ok());

    std::vector<TokenizeInput> tin = {{.text = kTexts[1]}};
    std::vector<TokenizeOutput> tw(1), tg(1);
    ASSERT_TRUE(native->Tokenize(tin, tw).ok());
    ASSERT_TRUE(other->Tokenize(tin, tg).ok());
    ASSERT_EQ(tg[0].tokens.size(), tw[0].tokens.size());
    for (size_t k = 0; k < tg[0].tokens.size(); ++k)
      EXPECT_EQ(tg[0].tokens[k].id, tw[0].tokens[k].id);
  }
  auto native = Load(runtimes, Spec(Profile("native", kModels + "/cross-encoder-tiny", "score")));
  auto other =
      Load(runtimes, Spec(Profile(s.runtime, kModels + "/cross-encoder-tiny" + s.suffix, "score")));
  ASSERT_TRUE(native && other);
  std::vector<ScoreInput> in;
  for (const auto& t : kTexts)
    in.push_back({.text = "where is the mill", .text_pair = t, .truncate = true, .lora = {}});
  std::vector<ScoreOutput> want(in.size()), got(in.size());
  ASSERT_TRUE(native->Score(in, want).ok());
  ASSERT_TRUE(other->Score(in, got).ok());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_TRUE(got[i].status.ok()) << got[i].status.ToString();
    ASSERT_EQ(got[i].logits.size(), 1u);
    EXPECT_NEAR(got[i].logits[0], want[i].logits[0], 1e-4);
    EXPECT_EQ(got[i].truncated, want[i].truncated);
  }
}

TEST_P(Sidecars, ShareOneProcessUnlessAProfileAsksForItsOwn) {
  const Sidecar& s = GetParam();
  ModelRuntimes runtimes;
  const std::string dir = kModels + "/bert-tiny-mean" + s.suffix;
  ModelSpec second = Spec(Profile(s.runtime, dir, "encode"));
  second.id = "t/second";
  auto a = Load(runtimes, Spec(Profile(s.runtime, dir, "encode")));
  auto b = Load(runtimes, second);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(ChildProcesses(getpid(), s.script).size(), 1u) << "process: shared, the default";
  auto own = Load(runtimes, Spec(Profile(s.runtime, dir, "encode", "process: own\n")));
  ASSERT_TRUE(own);
  EXPECT_EQ(ChildProcesses(getpid(), s.script).size(), 2u) << "process: own";
  own.reset();
  EXPECT_TRUE(WaitFor([&] { return ChildProcesses(getpid(), s.script).size() == 1; }))
      << "a process stops with its last model";
}

// A copy of `dir` in a fresh temporary directory.
std::string CopyOf(const std::string& dir) {
  char tmpl[] = "/tmp/shoal-sidecar-XXXXXX";
  const fs::path copy = fs::path(mkdtemp(tmpl)) / fs::path(dir).filename();
  fs::copy(dir, copy, fs::copy_options::recursive);
  return copy.string();
}

TEST_P(Sidecars, RefuseBrokenModelsAtRegistration) {
  const Sidecar& s = GetParam();
  const std::string good = kModels + "/bert-tiny-mean" + s.suffix;
  auto refused = [&](const std::string& yaml, const std::string& says) {
    auto r = admin::CheckModel(Spec(yaml));
    ASSERT_FALSE(r.ok()) << yaml;
    EXPECT_EQ(r.status().code(), Code::kInvalidInput);
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
  };
  ASSERT_TRUE(admin::CheckModel(Spec(Profile(s.runtime, good, "encode"))).ok());

  // A truncated weights file.
  const std::string cut = CopyOf(good);
  const std::string file = cut + (s.runtime == "onnx" ? "/model.onnx" : "/model.pt");
  fs::resize_file(file, fs::file_size(file) / 2);
  refused(Profile(s.runtime, cut, "encode"), file);
  fs::remove_all(fs::path(cut).parent_path());

  refused(Profile(s.runtime, good, "encode", s.runtime + ": {pooling: max}\n"), "pooling");
  refused(Profile(s.runtime, good, "encode", s.runtime + ": {colour: blue}\n"), "colour");
  refused(Profile(s.runtime, good, "encode", "process: worker\n"), "process: shared or own");
  refused(Profile(s.runtime, kModels + "/bert-tiny-mean", "encode"),
          "bert-tiny-mean");  // no exported file
  if (s.runtime == "onnx") {
    refused(Profile(s.runtime, kModels + "/bad-input-onnx", "encode"), "pixel_values");
  } else {
    refused(Profile(s.runtime, kModels + "/raising-torchscript", "encode"), "test request failed");
    refused(Profile(s.runtime, good, "encode", "pytorch: {device: cuda:99}\n"), "device=cuda:99");
    refused(Profile(s.runtime, good, "encode", "pytorch: {dtype: bfloat16}\n"), "runs as it was saved");
  }
}

// A Hugging Face checkpoint of a model type the native runtime does not run
// registers on the pytorch runtime, which runs it through transformers; where
// Python cannot import transformers (this machine, CI) it is refused saying
// so. (scripts/gpu-check runs transformers_runtime_check.py where it can.)
TEST(PytorchSidecar, ACheckpointNativeDoesNotRunGoesToTransformersOrSaysWhyNot) {
  if (std::system("/usr/bin/python3 -c 'import transformers' 2>/dev/null") == 0) {
    GTEST_SKIP() << "transformers is importable here: tests/reference/transformers_runtime_check.py checks that path";
  }
  const std::string dir = CopyOf(kModels + "/bert-tiny-mean");
  json config = json::parse(std::ifstream(dir + "/config.json"));
  config["model_type"] = "albert";
  config["architectures"] = {"AlbertModel"};
  std::ofstream(dir + "/config.json") << config.dump();
  auto spec = admin::SpecFromDirectory(dir, "t/albert");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->runtime, "pytorch");
  auto r = admin::CheckModel(*spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidInput);
  EXPECT_NE(r.status().message().find("model_type 'albert' is not one the native runtime runs"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("cannot import transformers"), std::string::npos) << r.status().message();
  fs::remove_all(fs::path(dir).parent_path());
}

// SHOAL_PYTORCH_PYTHON names the sidecar's interpreter (one with transformers).
TEST(PytorchSidecar, ItsPythonCanBeNamed) {
  ASSERT_EQ(::setenv("SHOAL_PYTORCH_PYTHON", "/nonexistent/python3", 1), 0);
  ModelRuntimes runtimes;  // reads it when its pytorch process is first wanted
  Runtime* runtime = runtimes.For(Spec(Profile("pytorch", kModels + "/bert-tiny-mean-torchscript", "encode")));
  ::unsetenv("SHOAL_PYTORCH_PYTHON");
  ASSERT_TRUE(runtime);
  auto m = runtime->Load(
      *ModelConfig::FromSpec(Spec(Profile("pytorch", kModels + "/bert-tiny-mean-torchscript", "encode"))),
      LoadContext{1});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("cannot run /nonexistent/python3"), std::string::npos) << m.status().message();
}

INSTANTIATE_TEST_SUITE_P(Runtimes, Sidecars, ::testing::Values(kOnnx, kPytorch),
                         [](const auto& info) { return info.param.runtime; });

TEST(SidecarServing, DirectoriesRegisterOnTheirRuntimeAndServeThroughTheQueueThroughAKill) {
  TestCluster cluster;
  auto admin = admin::CatalogAdmin::Connect(cluster.nats_url());
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();
  const std::pair<std::string, std::string> dirs[] = {{"bert-tiny-mean", "native"},
                                                      {"bert-tiny-mean-onnx", "onnx"},
                                                      {"bert-tiny-mean-torchscript", "pytorch"},
                                                      {"cross-encoder-tiny-onnx", "onnx"}};
  for (const auto& [dir, runtime] : dirs) {
    auto spec = admin::SpecFromDirectory(kModels + "/" + dir, "t/" + dir);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    EXPECT_EQ(spec->runtime, runtime) << dir;
    auto registered = admin->Register(*spec);
    ASSERT_TRUE(registered.ok()) << registered.status().ToString();
    EXPECT_GT(registered->version.spec.memory_bytes, 0u);
  }
  EXPECT_TRUE(ChildProcesses(getpid(), kOnnx.script).empty())
      << "registration's processes stopped with their check";
  worker::WorkerOptions wo;
  wo.runtime_processes.health_every = std::chrono::milliseconds(50);
  auto worker = cluster.StartWorkerWith(wo);
  ASSERT_TRUE(worker);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);
  HttpClient http(gateway->port());
  auto post = [&](const std::string& path, const std::string& body) {
    auto res = http.PostJson(path, body);
    EXPECT_TRUE(res.ok() && res->status == 200)
        << path << ": " << (res.ok() ? res->body : res.status().ToString());
    return res.ok() ? json::parse(res->body, nullptr, false) : json();
  };

  const std::string body = R"({"items":[{"text":"the river runs"},{"text":"fish"}]})";
  const json want = post("/v1/encode/t/bert-tiny-mean", body);
  for (const char* id : {"t/bert-tiny-mean-onnx", "t/bert-tiny-mean-torchscript"}) {
    const json got = post(std::string("/v1/encode/") + id, body);
    ASSERT_EQ(got["items"].size(), 2u) << got.dump();
    for (size_t i = 0; i < 2; ++i) {
      const auto a = Dense(got["items"][i]), b = Dense(want["items"][i]);
      ASSERT_EQ(a.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-4) << id;
    }
    EXPECT_EQ(got["usage"]["tokens"], want["usage"]["tokens"]);
  }
  const json scores = post("/v1/score/t/cross-encoder-tiny-onnx",
                           R"({"query":"where is the mill","texts":["the old mill","fish swim"]})");
  EXPECT_EQ(scores["scores"].size(), 2u) << scores.dump();
  // Shoal tokenizes for the sidecars, so their models answer /v1/tokenize as the native one.
  const json tokens = post("/v1/tokenize/t/bert-tiny-mean-onnx", R"({"inputs":"the river"})");
  EXPECT_EQ(tokens, post("/v1/tokenize/t/bert-tiny-mean", R"({"inputs":"the river"})"));
  ASSERT_EQ(tokens.size(), 1u) << tokens.dump();
  EXPECT_EQ(tokens[0].size(), 4u) << tokens.dump();

  // Under load, the ONNX sidecar is SIGKILLed: nothing is lost.
  const auto pids = ChildProcesses(getpid(), kOnnx.script);
  ASSERT_EQ(pids.size(), 1u) << "one shared onnx process holds both onnx models";
  constexpr int kThreads = 4, kPerThread = 20;
  std::atomic<int> done{0}, right{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < kThreads; ++t) {
    clients.emplace_back([&] {
      HttpClient h(gateway->port());
      for (int i = 0; i < kPerThread; ++i) {
        auto res = h.PostJson("/v1/encode/t/bert-tiny-mean-onnx", body);
        ++done;
        if (!res.ok() || res->status != 200) continue;
        const json got = json::parse(res->body);
        bool same = true;
        for (size_t k = 0; k < 2; ++k) {
          const auto a = Dense(got["items"][k]), b = Dense(want["items"][k]);
          for (size_t d = 0; d < a.size(); ++d) same = same && std::abs(a[d] - b[d]) < 1e-4;
        }
        if (same) ++right;
      }
    });
  }
  ASSERT_TRUE(WaitFor([&] { return done >= kThreads * kPerThread / 4; }));
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(pids[0], SIGKILL), 0);
  for (auto& c : clients) c.join();
  EXPECT_EQ(right.load(), kThreads * kPerThread) << "every request answered, and right";
  EXPECT_EQ(MetricValue(worker->RenderMetrics(),
                        R"(shoal_runtime_process_deaths_total{runtime="onnx",reason="exited"})"),
            1);
  std::printf(
      "onnx sidecar SIGKILLed under load: %d/%d answered right, done %.2f s after the kill\n",
      right.load(), kThreads * kPerThread,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count());
}

}  // namespace
}  // namespace shoal::testing
