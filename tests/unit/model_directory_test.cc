// A model directory → the spec that registers it: its shoal.yaml, or what
// config.json implies. (Whether the files load is the runtime's test.)
#include "admin/model_directory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/ids.h"

namespace shoal::admin {
namespace {

namespace fs = std::filesystem;

class ModelDirectory : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("shoal-model-dir-" + RandomToken(8));
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path Dir(const std::string& name, std::initializer_list<std::pair<std::string, std::string>> files) {
    const fs::path d = root_ / name;
    fs::create_directories(d);
    for (const auto& [file, text] : files) std::ofstream(d / file) << text;
    return d;
  }

  fs::path root_;
};

TEST_F(ModelDirectory, AnEmbedderIsInferredFromConfigJson) {
  const auto d = Dir("bge-small", {{"config.json", R"({"architectures": ["BertModel"], "hidden_size": 8})"}});
  auto spec = SpecFromDirectory(d.string());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->id, "bge-small");
  EXPECT_EQ(spec->runtime, "native");
  EXPECT_EQ(spec->task, Task::kEncode);
  EXPECT_EQ(spec->path, fs::canonical(d).string());
  EXPECT_FALSE(spec->pinned);
}

TEST_F(ModelDirectory, ASequenceClassifierIsACrossEncoder) {
  const auto d = Dir("rerank", {{"config.json", R"({"architectures": ["XLMRobertaForSequenceClassification"]})"}});
  auto spec = SpecFromDirectory(d.string(), "org/rerank-v2");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->id, "org/rerank-v2");
  EXPECT_EQ(spec->task, Task::kScore);
}

TEST_F(ModelDirectory, ItsShoalYamlIsTheProfileAndThePathDefaultsToTheDirectory) {
  const auto d = Dir("tuned", {{"config.json", R"({"architectures": ["BertForSequenceClassification"]})"},
                               {"shoal.yaml", "id: team/tuned\nruntime: native\ntask: encode\npinned: true\n"
                                              "batching: {max_batch_tokens: 512, max_batch_requests: 8}\n"}});
  auto spec = SpecFromDirectory(d.string());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->id, "team/tuned");
  EXPECT_EQ(spec->task, Task::kEncode);  // the profile wins over config.json
  EXPECT_TRUE(spec->pinned);
  EXPECT_EQ(spec->batching.max_batch_requests, 8u);
  EXPECT_EQ(spec->path, fs::canonical(d).string());
}

TEST_F(ModelDirectory, WhatIsNotAModelIsRefusedWithTheReason) {
  const auto empty = Dir("empty", {});
  auto spec = SpecFromDirectory(empty.string());
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), Code::kInvalidInput);
  EXPECT_NE(spec.status().message().find("config.json"), std::string::npos) << spec.status().message();

  const auto garbled = Dir("garbled", {{"config.json", "{not json"}});
  spec = SpecFromDirectory(garbled.string());
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("not a JSON object"), std::string::npos) << spec.status().message();

  const auto ok = Dir("ok", {{"config.json", "{}"}});
  spec = SpecFromDirectory(ok.string(), "bad id with spaces");
  EXPECT_EQ(spec.status().code(), Code::kInvalidInput);

  spec = SpecFromPath((root_ / "missing").string());
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("does not exist"), std::string::npos);
}

TEST_F(ModelDirectory, APathToAProfileFileReadsTheProfile) {
  const auto d = Dir("profiles", {{"identity.yaml", "id: shoal/identity\nruntime: identity\n"}});
  auto spec = SpecFromPath((d / "identity.yaml").string(), "renamed");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->id, "renamed");
  EXPECT_EQ(spec->runtime, "identity");
}

}  // namespace
}  // namespace shoal::admin
