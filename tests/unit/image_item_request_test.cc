// Image items as the gateway reads them: MessagePack bin, JSON base64 or a
// base64 data URL on the native routes, OpenAI-style image_url parts on
// /v1/embeddings, and the errors that name the field at fault.
#include <gtest/gtest.h>

#include <string>

#include "wire/encode_request.h"
#include "wire/extract_request.h"
#include "wire/score_request.h"
#include "wire/item.h"
#include "wire/msgpack_writer.h"

namespace shoal::wire {
namespace {

TEST(ParseEncode, ImageItemsComeAsBinaryBase64OrDataUrls) {
  // MessagePack: bin, forwarded byte for byte; its cost is an image's.
  std::string body;
  MsgpackWriter w(&body);
  w.MapHeader(1);
  w.Str("items");
  w.ArrayHeader(2);
  w.MapHeader(1);
  w.Str("image");
  w.Bin(std::string_view("\x89PNG\0\1", 6));
  w.MapHeader(1);
  w.Str("text");
  w.Str("a cat");
  WorkRequest req;
  ASSERT_TRUE(ParseEncodeMsgpack(body, {}, &req).ok());
  ASSERT_EQ(req.items.size(), 2u);
  EXPECT_EQ(req.items[0].cost, kImageItemCost);
  ItemFields f;
  ASSERT_TRUE(DecodeItem(req.items[0].payload, Task::kEncode, &f).ok());
  EXPECT_EQ(f.image, std::string_view("\x89PNG\0\1", 6));
  EXPECT_TRUE(f.text.empty());
  ASSERT_TRUE(DecodeItem(req.items[0].payload, Task::kExtract, &f).ok());
  EXPECT_EQ(DecodeItem(req.items[0].payload, Task::kScore, &f).message(), "item.text: missing")
      << "a score item's image goes with a text";
  EXPECT_EQ(DecodeItem(req.items[0].payload, Task::kTokenize, &f).message(), "item: unknown field 'image' for tokenize");

  // JSON: base64, or a base64 data URL; the same bytes either way.
  std::string json = R"({"items": [{"image": "iVBORw0K"}, {"image": "data:image/png;base64,iVBORw0K"}]})";
  WorkRequest j;
  ASSERT_TRUE(ParseEncodeJson(json, {}, &j).ok());
  ItemFields a, b;
  ASSERT_TRUE(DecodeItem(j.items[0].payload, Task::kEncode, &a).ok());
  ASSERT_TRUE(DecodeItem(j.items[1].payload, Task::kEncode, &b).ok());
  EXPECT_EQ(a.image, std::string_view("\x89PNG\r\n", 6));
  EXPECT_EQ(a.image, b.image);

  auto error = [](std::string text) {
    WorkRequest r;
    return ParseEncodeJson(text, {}, &r).message();
  };
  EXPECT_EQ(error(R"({"items": [{"image": "not base64!"}]})"),
            "items[0].image: expected an image as base64 or a base64 data URL");
  EXPECT_EQ(error(R"({"items": [{"image": "data:image/png,rawbytes"}]})"),
            "items[0].image: a data URL must be base64 (data:image/png;base64,...)");
  EXPECT_EQ(error(R"({"items": [{"image": ""}]})"), "items[0].image: empty");
  EXPECT_EQ(error(R"({"items": [{"image": 7}]})").substr(0, 16), "items[0].image: ");
  EXPECT_EQ(error(R"({"items": [{"text": "a", "image": "iVBORw0K"}]})"), "items[0]: one text, image or document, not more");
  // A PDF is no encode input: refused here, not by a worker.
  EXPECT_EQ(error(R"({"items": [{"document": "JVBERi0x"}]})"),
            "items[0].document: documents are read on /v1/extract (an OCR pipeline), not on /v1/encode");
  std::string pdf;
  MsgpackWriter p(&pdf);
  p.MapHeader(1);
  p.Str("items");
  p.ArrayHeader(1);
  p.MapHeader(1);
  p.Str("document");
  p.Bin("%PDF-1");
  WorkRequest m;
  EXPECT_EQ(ParseEncodeMsgpack(pdf, {}, &m).message(),
            "items[0].document: documents are read on /v1/extract (an OCR pipeline), not on /v1/encode");
}

// /v1/score for an image–text model: a text query against images, or an
// image query against texts; each pair one item with a text and an image.
TEST(ParseScore, ImageTextPairs) {
  std::string body = R"({"query": "a cat", "images": ["iVBORw0K", "data:image/png;base64,iVBORw0K"]})";
  WorkRequest req;
  ASSERT_TRUE(ParseScoreJson(body, {}, &req).ok());
  ASSERT_EQ(req.items.size(), 2u);
  EXPECT_EQ(req.task, Task::kScore);
  for (const auto& item : req.items) {
    ItemFields f;
    ASSERT_TRUE(DecodeItem(item.payload, Task::kScore, &f).ok());
    EXPECT_EQ(f.text, "a cat");
    EXPECT_EQ(f.image, std::string_view("\x89PNG\r\n", 6));
    EXPECT_TRUE(f.text_pair.empty());
    EXPECT_GT(item.cost, kImageItemCost);
  }
  body = R"({"query": {"image": "iVBORw0K"}, "texts": ["a cat", "a dog"], "raw_scores": true})";
  WorkRequest by_image;
  ASSERT_TRUE(ParseScoreJson(body, {}, &by_image).ok());
  ASSERT_EQ(by_image.items.size(), 2u);
  ItemFields f;
  ASSERT_TRUE(DecodeItem(by_image.items[1].payload, Task::kScore, &f).ok());
  EXPECT_EQ(f.text, "a dog");
  EXPECT_EQ(f.image.size(), 6u);

  auto error = [](std::string text) {
    WorkRequest r;
    return ParseScoreJson(text, {}, &r).message();
  };
  EXPECT_EQ(error(R"({"query": "a", "texts": ["b"], "images": ["iVBORw0K"]})"), "texts and images: send one of them");
  EXPECT_EQ(error(R"({"query": {"image": "iVBORw0K"}, "images": ["iVBORw0K"]})"),
            "images: an image query is scored against texts, not images");
  EXPECT_EQ(error(R"({"query": {"url": "x"}, "texts": ["b"]})"),
            "query: unknown field 'url' (a query is a text or {\"image\": ...})");
  EXPECT_EQ(error(R"({"query": {}, "texts": ["b"]})"), "query.image: missing");
  EXPECT_EQ(error(R"({"query": "a", "images": ["not base64!"]})"),
            "images[0]: expected an image as base64 or a base64 data URL");
  // Rerank queries stay texts.
  std::string rerank = R"({"model": "m", "query": {"image": "iVBORw0K"}, "documents": ["a"]})";
  WorkRequest r;
  EXPECT_EQ(ParseRerankJson(rerank, {}, &r).message().substr(0, 7), "query: ");

  // A score item has a text_pair or an image, not both.
  std::string both;
  MsgpackWriter w(&both);
  w.MapHeader(3);
  w.Str("text");
  w.Str("a");
  w.Str("text_pair");
  w.Str("b");
  w.Str("image");
  w.Bin("\x89PNG");
  EXPECT_EQ(DecodeItem(both, Task::kScore, &f).message(), "item: both text_pair and image");
}

// Document items (PDFs, for an OCR pipeline on /v1/extract): base64 or
// binary, with the pages to read and whether their text layer is taken.
TEST(ParseExtract, DocumentItemsCarryTheirPages) {
  std::string json = R"({"items": [{"pages": "1-2", "document": "JVBERi0x", "text_layer": "ignore"},
                                    {"document": "data:application/pdf;base64,JVBERi0x", "text_layer": "auto"}]})";
  WorkRequest req;
  ASSERT_TRUE(ParseExtractJson(json, {}, &req).ok());
  ASSERT_EQ(req.items.size(), 2u);
  ItemFields a, b;
  ASSERT_TRUE(DecodeItem(req.items[0].payload, Task::kExtract, &a).ok());
  ASSERT_TRUE(DecodeItem(req.items[1].payload, Task::kExtract, &b).ok());
  EXPECT_EQ(a.document, "%PDF-1");
  EXPECT_EQ(a.pages, "1-2");
  EXPECT_FALSE(a.text_layer);
  EXPECT_EQ(b.document, "%PDF-1");
  EXPECT_TRUE(b.pages.empty());
  EXPECT_TRUE(b.text_layer);
  EXPECT_EQ(DecodeItem(req.items[0].payload, Task::kEncode, &a).message(), "item: unknown field 'document' for encode");

  std::string body;
  MsgpackWriter w(&body);
  w.MapHeader(1);
  w.Str("items");
  w.ArrayHeader(1);
  w.MapHeader(3);
  w.Str("document");
  w.Bin("%PDF-1");
  w.Str("pages");
  w.Str("3");
  w.Str("text_layer");
  w.Str("ignore");
  WorkRequest m;
  ASSERT_TRUE(ParseExtractMsgpack(body, {}, &m).ok());
  ItemFields f;
  ASSERT_TRUE(DecodeItem(m.items[0].payload, Task::kExtract, &f).ok());
  EXPECT_EQ(f.pages, "3");
  EXPECT_FALSE(f.text_layer);
  std::string wrong = body;
  wrong.replace(wrong.rfind("ignore"), 6, "always");
  EXPECT_EQ(ParseExtractMsgpack(wrong, {}, &m).message(), "items[0].text_layer: 'always' is neither auto nor ignore");

  auto error = [](std::string text) {
    WorkRequest r;
    return ParseExtractJson(text, {}, &r).message();
  };
  EXPECT_EQ(error(R"({"items": [{"text": "a", "pages": "1"}]})"), "items[0].pages: only with a document");
  EXPECT_EQ(error(R"({"items": [{"image": "JVBERi0x", "text_layer": "auto"}]})"),
            "items[0].text_layer: only with a document");
  EXPECT_EQ(error(R"({"items": [{"document": "JVBERi0x", "text_layer": "off"}]})"),
            "items[0].text_layer: 'off' is neither auto nor ignore");
  EXPECT_EQ(error(R"({"items": [{"document": "JVBERi0x", "text_layer": false}]})").substr(0, 19),
            "items[0].text_layer");
  EXPECT_EQ(error(R"({"items": [{"image": "JVBERi0x", "document": "JVBERi0x"}]})"),
            "items[0]: one text, image or document, not more");
  EXPECT_EQ(error(R"({"items": [{"document": ""}]})"), "items[0].document: empty");
}

TEST(ParseOpenAiEmbeddings, ImagePartsGoAmongTheTexts) {
  std::string body = R"({"model": "m", "input": ["a cat", {"type": "image_url",
      "image_url": {"url": "data:image/png;base64,iVBORw0K"}}]})";
  WorkRequest req;
  ASSERT_TRUE(ParseOpenAiEmbeddings(body, {}, &req).ok());
  ASSERT_EQ(req.items.size(), 2u);
  ItemFields f;
  ASSERT_TRUE(DecodeItem(req.items[1].payload, Task::kEncode, &f).ok());
  EXPECT_EQ(f.image.size(), 6u);
  auto error = [](std::string text) {
    WorkRequest r;
    return ParseOpenAiEmbeddings(text, {}, &r).message();
  };
  EXPECT_EQ(error(R"({"model": "m", "input": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]})"),
            "input[0].image_url.url: only data: URLs (Shoal fetches nothing; send the image inline)");
  EXPECT_EQ(error(R"({"model": "m", "input": [{"type": "text", "text": "a"}]})"),
            "input[0].type: 'text' is not image_url");
  EXPECT_EQ(error(R"({"model": "m", "input": [{"type": "image_url"}]})"), "input[0].image_url.url: missing");
  EXPECT_EQ(error(R"({"model": "m", "input": [{"image_url": {"url": "data:;base64,AA"}}]})"),
            "input[0].type: missing");
  EXPECT_EQ(error(R"({"model": "m", "input": [[1, 2], {"type": "image_url", "image_url": {"url": "data:;base64,AA"}}]})"),
            "input[1]: input mixes texts and token ids, or ids and arrays of ids");
}

}  // namespace
}  // namespace shoal::wire
