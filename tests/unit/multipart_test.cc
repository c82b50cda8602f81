// multipart/form-data as clients send it (the bodies below are what curl -F
// and the OpenAI SDKs write), and query strings.
#include "http/multipart.h"

#include <gtest/gtest.h>

#include "http/http.h"

namespace shoal::http {
namespace {

const char* kType = "multipart/form-data; boundary=------------------------d74496d66958873e";

std::string Body(const std::string& file) {
  return "--------------------------d74496d66958873e\r\n"
         "Content-Disposition: form-data; name=\"purpose\"\r\n\r\n"
         "batch\r\n"
         "--------------------------d74496d66958873e\r\n"
         "Content-Disposition: form-data; name=\"file\"; filename=\"in put.jsonl\"\r\n"
         "Content-Type: application/octet-stream\r\n\r\n" +
         file +
         "\r\n--------------------------d74496d66958873e--\r\n";
}

TEST(Multipart, PartsWithNamesFilenamesAndBytes) {
  // The file holds CRLFs and a line that starts like a boundary but is not one.
  const std::string file = "{\"a\": 1}\r\n--------------------------d74496d66958873\r\n{\"b\": 2}\n";
  const std::string body = Body(file);
  auto parts = ParseMultipart(kType, body);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "purpose");
  EXPECT_EQ((*parts)[0].filename, "");
  EXPECT_EQ((*parts)[0].data, "batch");
  EXPECT_EQ((*parts)[1].name, "file");
  EXPECT_EQ((*parts)[1].filename, "in put.jsonl");
  EXPECT_EQ((*parts)[1].content_type, "application/octet-stream");
  EXPECT_EQ((*parts)[1].data, file);
}

TEST(Multipart, QuotedBoundariesPreamblesAndEscapes) {
  const std::string body =
      "a preamble\r\n--xyz\r\ncontent-disposition: FORM-DATA; filename=\"a\\\"b;c\"; name=file\r\n\r\n"
      "data\r\n--xyz--";
  auto parts = ParseMultipart("Multipart/Form-Data; charset=utf-8; boundary=\"xyz\"", body);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].name, "file");
  EXPECT_EQ((*parts)[0].filename, "a\"b;c");
  EXPECT_EQ((*parts)[0].data, "data");
}

TEST(Multipart, MalformedBodiesAreRefused) {
  const std::string good = Body("{}");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"application/json", good},
      {"multipart/form-data", good},  // no boundary
      {"multipart/form-data; boundary=other", good},
      {kType, good.substr(0, good.size() - 50)},                          // ends inside a part
      {kType, "--------------------------d74496d66958873e\r\nX: y"},      // headers never end
      {kType, "--------------------------d74496d66958873e\r\nno colon\r\n\r\nx\r\n"
              "--------------------------d74496d66958873e--"},
      {kType, "--------------------------d74496d66958873e\r\nContent-Type: text/plain\r\n\r\nx\r\n"
              "--------------------------d74496d66958873e--"},               // no name
      {kType, "--------------------------d74496d66958873eXX"},            // a broken boundary line
  };
  for (const auto& [type, body] : cases) {
    auto parts = ParseMultipart(type, body);
    EXPECT_FALSE(parts.ok()) << type << " | " << body;
    if (!parts.ok()) { EXPECT_EQ(parts.status().code(), Code::kInvalidInput); }
  }
}

TEST(Query, ParametersAreDecoded) {
  auto q = ParseQuery("purpose=batch&after=file-x&name=a%20b+c&empty=&flag");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->at("purpose"), "batch");
  EXPECT_EQ(q->at("name"), "a b c");
  EXPECT_EQ(q->at("empty"), "");
  EXPECT_EQ(q->at("flag"), "");
  EXPECT_TRUE(ParseQuery("")->empty());
  EXPECT_FALSE(ParseQuery("a=1&a=2").ok());
}

}  // namespace
}  // namespace shoal::http
