// The JSON log format: one object per line, the message escaped, key=value
// tokens lifted into fields of their own.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/log.h"

namespace shoal {
namespace {

TEST(JsonLog, LiftsKeyValueTokensIntoFields) {
  const std::string line =
      JsonLogLine("2026-11-30T16:40:01.123Z", "debug", "rid=g1-42 item=3 model=org/m-v1.5 ran in a batch of 8");
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["ts"], "2026-11-30T16:40:01.123Z");
  EXPECT_EQ(j["level"], "debug");
  EXPECT_EQ(j["msg"], "rid=g1-42 item=3 model=org/m-v1.5 ran in a batch of 8");
  EXPECT_EQ(j["rid"], "g1-42");
  EXPECT_EQ(j["item"], "3");
  EXPECT_EQ(j["model"], "org/m-v1.5");
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

TEST(JsonLog, EscapesTheMessageAndKeepsReservedAndOddKeysOut) {
  const std::string line = JsonLogLine("t", "info", "say \"hi\"\n\tlevel=bad msg=x Rid=no rid=a, rid=b x= =y");
  auto j = nlohmann::json::parse(line);  // throws on a malformed line
  EXPECT_EQ(j["msg"], "say \"hi\"\n\tlevel=bad msg=x Rid=no rid=a, rid=b x= =y");
  EXPECT_EQ(j["level"], "info");  // a token never overrides a fixed field
  EXPECT_EQ(j["rid"], "a");       // the first wins; prose punctuation dropped
  EXPECT_FALSE(j.contains("Rid"));
  EXPECT_FALSE(j.contains("x"));
  const std::string control = JsonLogLine("t", "info", std::string("nul\x01", 4));
  EXPECT_EQ(nlohmann::json::parse(control)["msg"], std::string("nul\x01", 4));
}

TEST(JsonLog, FormatsAndLevelsAreChecked) {
  EXPECT_EQ(ParseLogFormat("json").value(), LogFormat::kJson);
  EXPECT_EQ(ParseLogFormat("text").value(), LogFormat::kText);
  EXPECT_FALSE(ParseLogFormat("yaml").ok());
  EXPECT_FALSE(InitLogging("loud").ok());
  EXPECT_TRUE(InitLogging("info").ok());
}

}  // namespace
}  // namespace shoal
