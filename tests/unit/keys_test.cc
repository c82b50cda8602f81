// API keys: hashing, secrets, the bucket entry's format (a malformed entry
// is rejected, never half-read), model scopes.
#include "queue/keys.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

namespace shoal::queue {
namespace {

using nlohmann::json;

std::string Hex(const KeyDigest& d) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : d) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

TEST(Keys, Sha256MatchesTheStandardVectors) {
  EXPECT_EQ(Hex(Sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Hex(Sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Keys, SameDigestComparesWholeDigests) {
  const KeyDigest a = Sha256("sk-shoal-one");
  KeyDigest b = a;
  EXPECT_TRUE(SameDigest(a, b));
  b[31] ^= 1;  // the last byte only
  EXPECT_FALSE(SameDigest(a, b));
  b = a;
  b[0] ^= 0x80;
  EXPECT_FALSE(SameDigest(a, b));
}

TEST(Keys, SecretsAreLongRandomAndPrefixed) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto s = NewSecret();
    ASSERT_TRUE(s.ok());
    ASSERT_EQ(s->size(), 9u + 48u) << *s;
    EXPECT_TRUE(s->starts_with("sk-shoal-")) << *s;
    EXPECT_EQ(s->find_first_not_of("0123456789abcdef", 9), std::string::npos) << *s;
    EXPECT_TRUE(seen.insert(*s).second) << "a secret repeated";
  }
}

ApiKey Sample() {
  ApiKey k;
  k.name = "team-a";
  k.digest = Sha256("sk-shoal-secret");
  k.models = {"org/bge-small", "shoal/identity"};
  k.rps = 10;
  k.tokens_per_min = 60000;
  k.created_unix_ms = 1700000000000;
  return k;
}

TEST(Keys, AnEntryRoundTripsAndHoldsNoSecret) {
  const ApiKey k = Sample();
  const std::string entry = k.ToJson();
  EXPECT_EQ(entry.find("sk-shoal"), std::string::npos) << entry;
  EXPECT_NE(entry.find(Hex(k.digest)), std::string::npos) << entry;
  auto back = ParseApiKey("team-a", entry);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->name, "team-a");
  EXPECT_TRUE(SameDigest(back->digest, k.digest));
  EXPECT_EQ(back->models, k.models);
  EXPECT_FALSE(back->admin);
  EXPECT_EQ(back->rps, 10u);
  EXPECT_EQ(back->tokens_per_min, 60000u);
  EXPECT_EQ(back->created_unix_ms, 1700000000000);
  EXPECT_EQ(back->priority, Priority::kInteractive);
}

TEST(Keys, ADefaultPriorityRoundTripsAndOlderEntriesHaveNone) {
  ApiKey k = Sample();
  k.priority = Priority::kBatch;
  auto back = ParseApiKey("team-a", k.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->priority, Priority::kBatch);
  // An entry written before keys had a priority: interactive.
  json older = json::parse(k.ToJson());
  older.erase("priority");
  back = ParseApiKey("team-a", older.dump());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->priority, Priority::kInteractive);
}

TEST(Keys, MalformedEntriesAreRejected) {
  const json good = json::parse(Sample().ToJson());
  auto with = [&](const char* field, json value) {
    json e = good;
    e[field] = std::move(value);
    return e.dump();
  };
  auto without = [&](const char* field) {
    json e = good;
    e.erase(field);
    return e.dump();
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "{\"name\": "},
      {"not an object", "[1, 2]"},
      {"empty", ""},
      {"missing name", without("name")},
      {"missing sha256", without("sha256")},
      {"missing models", without("models")},
      {"missing admin", without("admin")},
      {"missing rps", without("rps")},
      {"missing tokens_per_min", without("tokens_per_min")},
      {"missing created", without("created_unix_ms")},
      {"another key's name", with("name", "team-b")},
      {"short hash", with("sha256", "abcd")},
      {"upper-case hash", with("sha256", std::string(64, 'A'))},
      {"non-hex hash", with("sha256", std::string(64, 'g'))},
      {"hash as a number", with("sha256", 7)},
      {"models as a string", with("models", "*")},
      {"a model that is not a string", with("models", json::array({"a", 3}))},
      {"a bad model id", with("models", json::array({"/etc/passwd"}))},
      {"'*' beside a model", with("models", json::array({"*", "a"}))},
      {"admin as a string", with("admin", "true")},
      {"negative rps", with("rps", -1)},
      {"fractional rps", with("rps", 1.5)},
      {"huge rps", with("rps", uint64_t{1} << 40)},
      {"rps as a string", with("rps", "10")},
      {"tokens as a bool", with("tokens_per_min", true)},
      {"created as a string", with("created_unix_ms", "now")},
      {"an unknown priority", with("priority", "urgent")},
      {"priority as a number", with("priority", 1)},
      // A field this version does not know might restrict the key.
      {"unknown field", with("expires_unix_ms", 1)},
  };
  for (const auto& [what, entry] : cases) {
    EXPECT_FALSE(ParseApiKey("team-a", entry).ok()) << what << ": " << entry;
  }
  EXPECT_FALSE(ParseApiKey("bad name!", json::parse(Sample().ToJson()).dump()).ok());
  EXPECT_TRUE(ParseApiKey("team-a", good.dump()).ok());
}

TEST(Keys, ScopesAreModelsOrEverything) {
  ApiKey k = Sample();
  EXPECT_TRUE(k.MayUse("org/bge-small"));
  EXPECT_FALSE(k.MayUse("org/bge-large"));
  EXPECT_FALSE(k.MayUse("org/bge-small/x"));
  EXPECT_FALSE(k.MayUse(""));
  k.models = {"*"};
  EXPECT_TRUE(k.MayUse("anything/at-all"));
  k.models = {};
  EXPECT_FALSE(k.MayUse("org/bge-small")) << "an admin-only key uses no model";
}

TEST(Keys, ModelScopesParseFromTheCommandLine) {
  EXPECT_EQ(ParseModelScope("*").value(), std::vector<std::string>{"*"});
  EXPECT_EQ(ParseModelScope("a/one,b/two").value(), (std::vector<std::string>{"a/one", "b/two"}));
  EXPECT_EQ(ParseModelScope("a/one, b/two").value(), (std::vector<std::string>{"a/one", "b/two"}));
  EXPECT_TRUE(ParseModelScope("")->empty());
  EXPECT_FALSE(ParseModelScope("a,,b").ok());
  EXPECT_FALSE(ParseModelScope("a,").ok());
  EXPECT_FALSE(ParseModelScope("*,a").ok());
  EXPECT_FALSE(ParseModelScope("a b").ok());
}

TEST(Keys, NamesAreKvSafe) {
  EXPECT_TRUE(ValidateKeyName("team-a_1").ok());
  EXPECT_FALSE(ValidateKeyName("").ok());
  EXPECT_FALSE(ValidateKeyName("a.b").ok());
  EXPECT_FALSE(ValidateKeyName("a/b").ok());
  EXPECT_FALSE(ValidateKeyName(std::string(65, 'a')).ok());
}

}  // namespace
}  // namespace shoal::queue
