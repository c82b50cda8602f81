#include "wire/json_writer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace shoal::wire {
namespace {

TEST(JsonWriter, EscapesWhatJsonRequiresAndNothingElse) {
  std::string out;
  JsonWriter w(&out);
  const std::string tricky = std::string("quote\" back\\ nl\n tab\t ctl\x01 nul") + '\0' + " é 🍕";
  w.String(tricky);
  // An independent parser reads back the same string.
  EXPECT_EQ(nlohmann::json::parse(out).get<std::string>(), tricky);
  EXPECT_NE(out.find("\\u0001"), std::string::npos);
  EXPECT_NE(out.find("é 🍕"), std::string::npos) << "UTF-8 passes through";
}

TEST(JsonWriter, MalformedUtf8BecomesReplacementCharacters) {
  // A byte-level token can end mid-character; JSON must stay valid UTF-8.
  std::string out;
  JsonWriter w(&out);
  w.String("a\x80" "b\xC3" "c\xE2\x82");
  EXPECT_EQ(nlohmann::json::parse(out).get<std::string>(), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(JsonWriter, FloatsRoundTripAndNonFiniteIsNull) {
  std::string out;
  JsonWriter w(&out);
  w.Char('[');
  w.Float(0.1f);
  w.Char(',');
  w.Float(-3.4028235e38f);
  w.Char(',');
  w.Float(std::numeric_limits<float>::quiet_NaN());
  w.Char(',');
  w.Double(1e-300);
  w.Char(']');
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j[0].get<float>(), 0.1f);
  EXPECT_EQ(j[1].get<float>(), -3.4028235e38f);
  EXPECT_TRUE(j[2].is_null());
  EXPECT_EQ(j[3].get<double>(), 1e-300);
  EXPECT_EQ(out.substr(0, 5), "[0.1,") << "shortest form";
}

TEST(Base64, Rfc4648TestVectors) {
  const std::pair<const char*, const char*> cases[] = {
      {"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},         {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
  };
  for (auto [in, want] : cases) {
    std::string out;
    AppendBase64(in, &out);
    EXPECT_EQ(out, want) << in;
  }
}

}  // namespace
}  // namespace shoal::wire
