// The official OpenAI Node SDK (npm `openai`) against a real gateway,
// nats-server and worker: structured output, tools (required, n > 1,
// streamed through the SDK's own stream helper, tool messages back in),
// embeddings as the SDK asks for them, and a Batch API job from upload to
// output file (tests/openai_sdk/check.mjs says what each check asserts).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "support/test_cluster.h"
#include "support/test_models.h"

namespace shoal::testing {
namespace {

const std::string kSdkDir = std::string(SHOAL_SOURCE_DIR) + "/node_modules/openai";

TEST(OpenAiSdk, TheOfficialClientWorksAgainstTheGateway) {
  if (!std::filesystem::exists(kSdkDir)) GTEST_SKIP() << "no " << kSdkDir << " (scripts/setup installs it)";
  TestCluster cluster;
  cluster.Register("id: t/chat\nruntime: native\ntask: generate\npath: " + kModels +
                   "/qwen3-tiny\npinned: true\nnative: {max_context: 1024, kv_cache_tokens: 4096, kv_block_tokens: 8}\n");
  cluster.Register(IdentityProfile("t/emb", "identity: {dim: 8}\n"));
  auto worker = cluster.StartWorker();
  cluster.WaitForWorkers("t/chat", 1);
  cluster.WaitForWorkers("t/emb", 1);
  auto gateway = cluster.StartGateway();
  ASSERT_TRUE(gateway);

  const std::string cmd = "node " + std::string(SHOAL_SOURCE_DIR) + "/tests/openai_sdk/check.mjs http://127.0.0.1:" +
                          std::to_string(gateway->port()) + "/v1 t/chat t/emb 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_TRUE(p);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  EXPECT_EQ(status, 0) << out;
  for (const char* check : {"response_format json_schema", "tools required, n 2", "streamed tool call", "tool message",
                            "embeddings", "batch job"}) {
    EXPECT_NE(out.find(std::string("ok ") + check + "\n"), std::string::npos) << check << " did not pass:\n" << out;
  }
}

}  // namespace
}  // namespace shoal::testing
