// The bodies of work and result messages (work_message.h carries them):
// an item to encode, score, extract from or tokenize, and its result, as
// MessagePack.
//
//   item    encode, extract {"text": str}; encode {"ids": [int...]} (token
//           ids, run as they are); encode, extract {"image": bin} (an encoded
//           image, JPEG/PNG/WebP/GIF, decoded by the worker's runtime);
//           extract {"document": bin, "pages": str, "text_layer": "ignore"}
//           (a PDF; pages "1-3,7", absent: all; text_layer "ignore": every
//           page OCR'd, absent or "auto": pages with a text layer read from
//           it); score
//           {"text": str, "text_pair": str} or {"text": str, "image": bin}
//           (an image–text model's pair);
//           tokenize {"text": str, "add_special_tokens": bool}
//   result  encode {"dense": [float32...], "sparse": {"indices": [uint...],
//           "values": [float32...], "tokens": [str...]}, "multivector":
//           [[float32...]...]} (the outputs asked for; tokens only when
//           asked); score {"logits": [float32...]};
//           extract {"entities": [{"label", "score", "start", "end", "text"}...]}
//           (a token classifier; start/end in code points) or {"labels":
//           [{"label", "score"}...]} (a text classifier, best first) or
//           {"lines": [{"text", "confidence", "box": [[x, y] × 4]}...]} (an
//           OCR pipeline, in reading order, "page": uint and "source":
//           "ocr" | "text_layer" too for a document's lines; confidence and
//           coordinates float32);
//           tokenize {"tokens": [{"id", "text", "special", "start", "stop"}...]}
//           (start/stop nil for added special tokens)
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/task.h"
#include "common/status.h"
#include "wire/msgpack_fields.h"
#include "wire/msgpack_writer.h"

namespace shoal::wire {

// An item's fields, as views into its MessagePack.
struct ItemFields {
  std::string_view text;
  std::string_view text_pair;  // score only
  std::vector<int32_t> ids;    // encode only: token ids instead of text
  std::string_view image;      // an encoded image: instead of text (encode, extract), of text_pair (score)
  std::string_view document;   // extract: a PDF instead of text
  std::string_view pages;      // its pages ("1-3,7"; empty: all)
  bool text_layer = true;      // its pages with a text layer read from it (false: OCR'd)
  bool add_special_tokens = true;  // tokenize only
};

// How a document item is read: its pages, and whether a page's text layer
// is taken for its text.
struct DocumentOptions {
  std::string_view pages;  // "1-3,7"; empty: all
  bool text_layer = true;
};

// A document item's "text_layer" from its value: "auto" (true) or "ignore"
// (false); INVALID_INPUT naming `field` otherwise.
Status ParseTextLayer(std::string_view field, std::string_view value, bool* text_layer);

// {"text": text} as MessagePack, appended to `out`.
void AppendTextItem(std::string_view text, std::string* out);
// {"ids": [id...]}.
void AppendIdsItem(std::span<const int32_t> ids, std::string* out);
// {"image": bytes} (MessagePack bin).
void AppendImageItem(std::string_view bytes, std::string* out);
// {"document": bytes}, "pages" when not empty and "text_layer": "ignore"
// when not taken (a PDF, extract).
void AppendDocumentItem(std::string_view bytes, const DocumentOptions& options, std::string* out);
// {"text": text, "image": bytes}: a score item for an image–text model.
void AppendTextImageItem(std::string_view text, std::string_view image, std::string* out);
// {"text": text, "text_pair": pair}.
void AppendPairItem(std::string_view text, std::string_view pair, std::string* out);
// {"text": text, "add_special_tokens": add_special_tokens}.
void AppendTokenizeItem(std::string_view text, bool add_special_tokens, std::string* out);

// Reads an item; "text" is required (an encode item may have "ids", an
// encode or extract item "image" instead; a score item has "text_pair" or
// "image" besides), and what else may appear depends on the task. Errors
// name the field.
Status DecodeItem(std::string_view msgpack, Task task, ItemFields* out);

// DecodeItem for an encode item: just its text.
inline Status DecodeTextItem(std::string_view msgpack, std::string_view* text) {
  ItemFields f;
  SHOAL_RETURN_IF_ERROR(DecodeItem(msgpack, Task::kEncode, &f));
  *text = f.text;
  return Status::Ok();
}

// {"dense": [v...]} as MessagePack (float32 elements), appended to `out`.
void AppendDenseResult(const float* v, size_t n, std::string* out);

// An encode result's outputs, as views; an absent one is left out.
struct EncodeResultView {
  struct Sparse {
    std::span<const uint32_t> indices;
    std::span<const float> values;
    std::span<const std::string> tokens;  // empty: not asked for
  };
  struct Multi {
    std::span<const float> values;  // rows of `dim`
    size_t dim = 0;
  };
  std::optional<std::span<const float>> dense;
  std::optional<Sparse> sparse;
  std::optional<Multi> multivector;
};
// {"dense": ..., "sparse": ..., "multivector": ...} as above.
void AppendEncodeResult(const EncodeResultView& r, std::string* out);
// {"logits": [v...]}.
void AppendLogitsResult(const float* v, size_t n, std::string* out);

struct TokenView {
  int32_t id;
  std::string_view text;
  bool special;
  bool has_offsets;
  uint32_t start, stop;
};
// {"tokens": [{"id", "text", "special", "start", "stop"}...]}.
template <class Tokens>
void AppendTokensResult(const Tokens& tokens, std::string* out);

// {"entities": [{"label", "score", "start", "end", "text"}...]} (score float32).
template <class Entities>
void AppendEntitiesResult(const Entities& entities, std::string* out);
// {"labels": [{"label", "score"}...]}.
template <class Labels>
void AppendLabelsResult(const Labels& labels, std::string* out);
// {"lines": [{"text", "confidence", "box"}...]}.
template <class Lines>
void AppendLinesResult(const Lines& lines, std::string* out);
// The arrays alone, for a map the caller writes (the runtime protocol's).
template <class Entities>
void WriteEntities(const Entities& entities, MsgpackWriter& w);
template <class Labels>
void WriteLabels(const Labels& labels, MsgpackWriter& w);

// An extract item's "aggregation" (a strategy's name) from `f`.
Status ReadAggregation(MsgpackFields& f, std::optional<Aggregation>* out);

// Finds the array `key` ("dense", "logits") of a result and calls `each` per
// element.
template <class Fn>
Status ForEachFloat(std::string_view msgpack, std::string_view key, Fn&& each);
template <class Fn>
Status ForEachDense(std::string_view msgpack, Fn&& each) {
  return ForEachFloat(msgpack, "dense", std::forward<Fn>(each));
}

}  // namespace shoal::wire

#include "wire/msgpack_reader.h"
#include "wire/msgpack_writer.h"

namespace shoal::wire {

template <class Tokens>
void AppendTokensResult(const Tokens& tokens, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1);
  w.Str("tokens");
  w.ArrayHeader(static_cast<uint32_t>(tokens.size()));
  for (const auto& t : tokens) {
    w.MapHeader(5);
    w.Str("id");
    w.Int(t.id);
    w.Str("text");
    w.Str(t.text);
    w.Str("special");
    w.Bool(t.special);
    w.Str("start");
    t.has_offsets ? w.Uint(t.start) : w.Nil();
    w.Str("stop");
    t.has_offsets ? w.Uint(t.stop) : w.Nil();
  }
}

template <class Entities>
void WriteEntities(const Entities& entities, MsgpackWriter& w) {
  w.ArrayHeader(static_cast<uint32_t>(entities.size()));
  for (const auto& e : entities) {
    w.MapHeader(5);
    w.Str("label");
    w.Str(e.label);
    w.Str("score");
    w.Float32(e.score);
    w.Str("start");
    w.Uint(e.start);
    w.Str("end");
    w.Uint(e.end);
    w.Str("text");
    w.Str(e.text);
  }
}

template <class Labels>
void WriteLabels(const Labels& labels, MsgpackWriter& w) {
  w.ArrayHeader(static_cast<uint32_t>(labels.size()));
  for (const auto& l : labels) {
    w.MapHeader(2);
    w.Str("label");
    w.Str(l.label);
    w.Str("score");
    w.Float32(l.score);
  }
}

template <class Entities>
void AppendEntitiesResult(const Entities& entities, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1);
  w.Str("entities");
  WriteEntities(entities, w);
}

template <class Labels>
void AppendLabelsResult(const Labels& labels, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1);
  w.Str("labels");
  WriteLabels(labels, w);
}

template <class Lines>
void AppendLinesResult(const Lines& lines, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1);
  w.Str("lines");
  w.ArrayHeader(static_cast<uint32_t>(lines.size()));
  for (const auto& l : lines) {
    w.MapHeader(l.page > 0 ? 5 : 3);
    if (l.page > 0) {
      w.Str("page");
      w.Uint(l.page);
      w.Str("source");
      w.Str(l.from_text_layer ? "text_layer" : "ocr");
    }
    w.Str("text");
    w.Str(l.text);
    w.Str("confidence");
    w.Float32(l.confidence);
    w.Str("box");
    w.ArrayHeader(static_cast<uint32_t>(l.box.size()));
    for (const auto& corner : l.box) w.Float32Array(corner.data(), corner.size());
  }
}

template <class Fn>
Status ForEachFloat(std::string_view msgpack, std::string_view key_wanted, Fn&& each) {
  MsgpackReader r(msgpack);
  uint32_t fields;
  if (!r.ReadMapHeader(&fields)) return Internal("result: expected a map");
  for (uint32_t f = 0; f < fields; ++f) {
    std::string_view key;
    if (!r.ReadStr(&key)) return Internal("result: expected string keys");
    if (key != key_wanted) {
      if (!r.Skip()) return Internal("result: truncated");
      continue;
    }
    uint32_t n;
    if (!r.ReadArrayHeader(&n)) return Internal("result." + std::string(key) + ": expected an array");
    for (uint32_t i = 0; i < n; ++i) {
      double d;
      if (!r.ReadDouble(&d)) return Internal("result." + std::string(key) + ": expected numbers");
      each(static_cast<float>(d));
    }
    return Status::Ok();
  }
  return Internal("result: no " + std::string(key_wanted));
}

}  // namespace shoal::wire
