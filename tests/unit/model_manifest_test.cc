// Model manifests (store/manifest.h): one directory gives one digest, hidden
// tools' state stays out, and a manifest from the store is read strictly
// (no path may leave the model's directory). SHA-256 and base64url against
// published test vectors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/base64.h"
#include "common/sha256.h"
#include "store/manifest.h"

namespace shoal::store {
namespace {

namespace fs = std::filesystem;

TEST(Sha256, MatchesFips180Vectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 h;  // "abc" in pieces
  h.Update("a");
  h.Update("bc");
  EXPECT_EQ(h.FinishHex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Base64Url, MatchesRfc4648Vectors) {
  EXPECT_EQ(EncodeBase64Url(""), "");
  EXPECT_EQ(EncodeBase64Url("f"), "Zg==");
  EXPECT_EQ(EncodeBase64Url("fo"), "Zm8=");
  EXPECT_EQ(EncodeBase64Url("foobar"), "Zm9vYmFy");
  EXPECT_EQ(EncodeBase64Url("\xfb\xff"), "-_8=");  // the URL-safe letters
}

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shoal-manifest-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "1_Pooling");
    fs::create_directories(dir_ / ".git");
    std::ofstream(dir_ / "config.json") << "{}";
    std::ofstream(dir_ / "1_Pooling" / "config.json") << "{\"mean\": true}";
    std::ofstream(dir_ / ".git" / "HEAD") << "ref";
    std::ofstream(dir_ / ".marker") << "x";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ManifestTest, ADirectoryHasOneDigest) {
  auto m = ManifestOfDirectory(dir_.string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->files.size(), 2u);
  EXPECT_EQ(m->files[0].path, "1_Pooling/config.json");
  EXPECT_EQ(m->files[1].path, "config.json");
  EXPECT_EQ(m->files[1].sha256, Sha256Hex("{}"));
  EXPECT_EQ(m->bytes(), 16u);
  EXPECT_EQ(m->ToJson(),
            "{\"files\":[{\"bytes\":14,\"path\":\"1_Pooling/config.json\",\"sha256\":\"" +
                Sha256Hex("{\"mean\": true}") +
                "\"},{\"bytes\":2,\"path\":\"config.json\",\"sha256\":\"" + Sha256Hex("{}") +
                "\"}]}");
  EXPECT_EQ(m->Digest(), "sha256:" + Sha256Hex(m->ToJson()));
  auto back = ParseManifest(m->ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->Digest(), m->Digest());

  std::ofstream(dir_ / ".git" / "HEAD") << "another ref";  // tools' state changes nothing
  EXPECT_EQ(ManifestOfDirectory(dir_.string())->Digest(), m->Digest());
  std::ofstream(dir_ / "config.json") << " ";  // a model file does
  EXPECT_NE(ManifestOfDirectory(dir_.string())->Digest(), m->Digest());
}

TEST_F(ManifestTest, AStoredManifestIsReadStrictly) {
  const std::string hex(64, 'a');
  auto one = [&](const std::string& path) {
    return ParseManifest("{\"files\":[{\"bytes\":1,\"path\":\"" + path + "\",\"sha256\":\"" + hex +
                         "\"}]}");
  };
  EXPECT_TRUE(one("a/b.json").ok());
  for (const char* bad : {"../etc/passwd", "/abs", "a//b", "a/./b", ".hidden", "a/../b", ""}) {
    EXPECT_EQ(one(bad).status().code(), Code::kInvalidInput) << bad;
  }
  EXPECT_FALSE(ParseManifest("{\"files\":[{\"bytes\":1,\"path\":\"a\",\"sha256\":\"xyz\"}]}").ok());
  EXPECT_FALSE(ParseManifest("{\"files\":[]}").ok());
  EXPECT_FALSE(ParseManifest("{\"files\":[{\"bytes\":1,\"path\":\"b\",\"sha256\":\"" + hex +
                             "\"},{\"bytes\":1,\"path\":\"a\",\"sha256\":\"" + hex + "\"}]}")
                   .ok());  // unsorted
  EXPECT_FALSE(
      ParseManifest("{\"files\":[{\"bytes\":1,\"path\":\"a\",\"sha256\":\"" + hex + "\",\"x\":1}]}")
          .ok());
}

}  // namespace
}  // namespace shoal::store
