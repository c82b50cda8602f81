#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "queue/file_store.h"

namespace shoal::queue {
namespace {

using nlohmann::json;

FileRecord Sample() {
  FileRecord r;
  r.id = "file-0123456789abcdefghijklmn";
  r.filename = "in.jsonl";
  r.purpose = "batch";
  r.owner = "team-a";
  r.bytes = FileStore::kPartBytes + 1;
  r.parts = 2;
  r.created_at = 1700000000;
  return r;
}

TEST(FileRecord, RoundTrips) {
  auto back = ParseFileRecord(Sample().ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->id, Sample().id);
  EXPECT_EQ(back->owner, "team-a");
  EXPECT_EQ(back->bytes, FileStore::kPartBytes + 1);
  EXPECT_EQ(back->parts, 2u);
}

TEST(FileRecord, MalformedRecordsAreRefused) {
  const json good = json::parse(Sample().ToJson());
  auto with = [&](const char* field, json value) {
    json e = good;
    e[field] = std::move(value);
    return e.dump();
  };
  json missing = good;
  missing.erase("owner");
  for (const std::string& bad : {with("id", "file-../etc"), with("id", "x"), with("parts", 1), with("bytes", -1),
                                 with("created_at", "now"), with("extra", 1), missing.dump(), std::string("[]")}) {
    EXPECT_FALSE(ParseFileRecord(bad).ok()) << bad;
  }
}

TEST(FileRecord, IdsAreShaped) {
  EXPECT_TRUE(ValidFileId("file-0123456789abcdefghijklmn"));
  EXPECT_FALSE(ValidFileId("file-0123456789abcdefghijklm"));
  EXPECT_FALSE(ValidFileId("file-0123456789ABCDEFGHIJKLMN"));
  EXPECT_FALSE(ValidFileId("file-0123456789abcdefghijkl.n"));
  EXPECT_FALSE(ValidFileId(""));
}

}  // namespace
}  // namespace shoal::queue
