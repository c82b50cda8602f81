// Versions of a model (catalog/model_version.h): names, the head's moves,
// records as stored, and the license a model's files state
// (admin/provenance.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "admin/provenance.h"
#include "catalog/model_version.h"
#include "catalog/names.h"
#include "queue/catalog_watch.h"

namespace shoal {
namespace {

namespace fs = std::filesystem;

TEST(VersionRef, SplitsAtTheAtAndRefusesWhatIsNoVersion) {
  auto plain = SplitVersionRef("org/emb-v1.5");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->id, "org/emb-v1.5");
  EXPECT_EQ(plain->version, 0u);
  auto pinned = SplitVersionRef("org/emb-v1.5@12");
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(pinned->id, "org/emb-v1.5");
  EXPECT_EQ(pinned->version, 12u);
  for (const char* bad : {"m@", "m@0", "m@x", "m@1x", "m@-1", "m@99999999999"}) {
    EXPECT_EQ(SplitVersionRef(bad).status().code(), Code::kInvalidInput) << bad;
  }
  EXPECT_EQ(VersionedName("m", 3), "m@3");
  EXPECT_TRUE(ValidateServedName("org/emb@3").ok());
  EXPECT_FALSE(ValidateServedName("org/e mb@3").ok());
  EXPECT_FALSE(ValidateModelId("org/emb@3").ok()) << "an id itself holds no '@'";
  // In the KV bucket, '@' (no key character) becomes '=' (no id character).
  EXPECT_EQ(queue::CatalogKey("org/emb@3"), "org/emb=3");
  EXPECT_EQ(queue::NameOfCatalogKey("org/emb=3"), "org/emb@3");
  EXPECT_EQ(queue::CatalogKey("org/emb"), "org/emb");
}

TEST(VersionHead, PromotionsKeepTheRollbackTargetAndCandidates) {
  VersionHead h;
  h.AddCandidate(1);
  h.Promote(1);
  EXPECT_EQ(h.serving, 1u);
  EXPECT_TRUE(h.Pinnable().empty());
  EXPECT_FALSE(h.Rollback()) << "nothing served before";

  h.AddCandidate(2);
  EXPECT_EQ(h.StateOf(2), VersionState::kCandidate);
  h.Promote(2);
  EXPECT_EQ(h.serving, 2u);
  EXPECT_EQ(h.StateOf(1), VersionState::kRollbackTarget);
  EXPECT_EQ(h.Pinnable(), std::vector<uint32_t>{1});

  ASSERT_TRUE(h.Rollback());
  EXPECT_EQ(h.serving, 1u);
  EXPECT_EQ(h.StateOf(2), VersionState::kCandidate)
      << "rolled back from: kept, to be looked at or promoted again";
  EXPECT_TRUE(h.rollback.empty());

  for (uint32_t v = 3; v <= 8; ++v) h.AddCandidate(v);
  EXPECT_EQ(h.candidates.size(), VersionHead::kMaxCandidates);
  EXPECT_EQ(h.StateOf(2), VersionState::kRetired) << "the oldest candidates retire";
  EXPECT_EQ(h.last, 8u);
  h.Promote(2);  // a retired version may serve again
  EXPECT_EQ(h.serving, 2u);
  EXPECT_EQ(h.StateOf(1), VersionState::kRollbackTarget);
  h.Promote(5);
  EXPECT_EQ(h.StateOf(2), VersionState::kRollbackTarget);
  EXPECT_EQ(h.StateOf(1), VersionState::kRetired)
      << "only the newest rollback target is kept loadable";
  EXPECT_EQ(h.Pinnable(), (std::vector<uint32_t>{2, 6, 7, 8}));

  h.Log(1000, "promoted", 5, "key:ops");
  auto back = VersionHead::Parse(h.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), h.ToJson());
  EXPECT_EQ(back->log.back().by, "key:ops");
}

TEST(ModelVersion, ARecordReadsBackAsWritten) {
  ModelVersion v;
  v.version = 4;
  auto spec = ModelSpec::Parse("id: team/emb\nruntime: identity\nversion: 4\nidentity: {dim: 8}\n");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  v.spec = *spec;
  v.record = {
      .source = "path:/models/emb",
      .files_digest = "sha256:" + std::string(64, 'a'),
      .files = {{"config.json", 612, std::string(64, 'b')}},
      .license = "apache-2.0",
      .license_source = "README.md",
      .owner = "key:ops",
      .registered_unix_ms = 1765000000000,
      .memory_bytes = 1 << 20,
      .capacity = {.per_second = 812.5, .unit = "items", .batch = 32, .hardware_class = "cpu-x"},
      .golden_json =
          R"({"outputs":[{"dense":"AACAPw=="}],"probe_set":"shoal-probes-v1","task":"encode"})"};
  auto back = ModelVersion::Parse(v.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), v.ToJson());
  EXPECT_EQ(back->record.files[0].bytes, 612u);
  EXPECT_EQ(back->record.capacity.per_second, 812.5);

  auto mismatched = ModelSpec::Parse("id: team/emb@3\nruntime: identity\nversion: 4\n");
  EXPECT_EQ(mismatched.status().code(), Code::kInvalidInput) << "'@3' is version 3";
}

class License : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("shoal-license-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  fs::path dir_;
};

TEST_F(License, ReadFromTheModelCardThenALicenseFile) {
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "");
  Write("LICENSE",
        "MIT License\n\nCopyright (c) 2024\n\nPermission is hereby granted, free of charge, ...");
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "mit");
  EXPECT_EQ(admin::FindLicense(dir_.string()).source, "LICENSE");
  Write("README.md",
        "---\nlanguage: en\nlicense: other\nlicense_name: acme-research\n---\n# Model\n");
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "acme-research")
      << "the card wins, its name for 'other'";
  Write("README.md", "---\nlicense: \"apache-2.0\"\n---\n");
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "apache-2.0");
  Write("README.md", "# No front matter\nlicense: mit\n");
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "mit")
      << "only front matter counts; then the LICENSE file";
  Write("LICENSE", "Redistribution and use in source and binary forms ... Neither the name of ...");
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "bsd-3-clause");
  Write("LICENSE", "Some terms of our own.");
  EXPECT_EQ(admin::FindLicense(dir_.string()).license, "other");
}

TEST_F(License, TheRegistrantMayStateOneTheFilesDoNotContradict) {
  auto stated = admin::SettleLicense(dir_.string(), "cc-by-4.0", /*required=*/true);
  ASSERT_TRUE(stated.ok());
  EXPECT_EQ(stated->source, "registrant");
  EXPECT_EQ(admin::SettleLicense(dir_.string(), "", /*required=*/true).status().code(),
            Code::kInvalidInput);
  EXPECT_TRUE(admin::SettleLicense(dir_.string(), "", /*required=*/false).ok());
  Write("README.md", "---\nlicense: apache-2.0\n---\n");
  EXPECT_TRUE(admin::SettleLicense(dir_.string(), "Apache-2.0", true).ok())
      << "ids compare without case";
  EXPECT_EQ(admin::SettleLicense(dir_.string(), "mit", false).status().code(), Code::kInvalidInput);
}

}  // namespace
}  // namespace shoal
