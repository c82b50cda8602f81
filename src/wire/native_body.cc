#include "wire/native_body.h"

#include "wire/encode_request.h"

#include "wire/item.h"

namespace shoal::wire {
namespace {

// A document (a PDF) is read by an OCR pipeline on /v1/extract; the encode
// route refuses one here rather than sending it to a worker that would.
Status DocumentsOnlyToExtract(Task task, std::string_view field) {
  if (task == Task::kExtract) return Status::Ok();
  return InvalidInput(std::string(field) + ": documents are read on /v1/extract (an OCR pipeline), not on /v1/encode");
}

// One MessagePack item, {"text": str}, {"image": bin} or {"document": bin,
// "pages": str, "text_layer": str}: kept as a view of its bytes.
Status ParseMsgpackItem(MsgpackReader& r, size_t index, const ParseLimits& limits, Task task, RequestItem* item) {
  const size_t start = r.offset();
  uint32_t fields;
  if (!r.ReadMapHeader(&fields)) return MsgpackExpected(Field("items", index), "a map", r);
  std::string_view text, bytes, pages;
  uint32_t inputs = 0;
  bool document = false, has_pages = false, has_text_layer = false;
  for (uint32_t f = 0; f < fields; ++f) {
    std::string_view key;
    if (!r.ReadStr(&key)) return MsgpackExpected(Field("items", index), "a field name (a string)", r);
    if (key == "text") {
      if (!r.ReadStr(&text)) return MsgpackExpected(Field("items", index, ".text"), "a string", r);
      item->cost = EstimateTokens(text.size());
      ++inputs;
    } else if (key == "image" || key == "document") {
      const std::string field = Field("items", index, "." + std::string(key));
      if (!r.ReadBin(&bytes)) return MsgpackExpected(field, "binary (the file's bytes)", r);
      if (bytes.empty()) return InvalidInput(field + ": empty");
      item->cost = kImageItemCost;
      ++inputs;
      if (key == "document") {
        SHOAL_RETURN_IF_ERROR(DocumentsOnlyToExtract(task, field));
        document = true;
      }
    } else if (key == "pages") {
      if (!r.ReadStr(&pages)) return MsgpackExpected(Field("items", index, ".pages"), "a string (\"1-3,7\")", r);
      has_pages = true;
    } else if (key == "text_layer") {
      const std::string field = Field("items", index, ".text_layer");
      std::string_view value;
      if (!r.ReadStr(&value)) return MsgpackExpected(field, "a string (auto or ignore)", r);
      bool text_layer;
      SHOAL_RETURN_IF_ERROR(ParseTextLayer(field, value, &text_layer));
      has_text_layer = true;
    } else {
      return InvalidInput(Field("items", index) + ": unknown field '" + std::string(key) + "'");
    }
  }
  if (inputs == 0) return InvalidInput(Field("items", index, ".text") + ": missing");
  if (inputs > 1) return InvalidInput(Field("items", index) + ": one text, image or document, not more");
  if (has_pages && !document) return InvalidInput(Field("items", index, ".pages") + ": only with a document");
  if (has_text_layer && !document) {
    return InvalidInput(Field("items", index, ".text_layer") + ": only with a document");
  }
  const std::string_view raw = r.buffer().substr(start, r.offset() - start);
  SHOAL_RETURN_IF_ERROR(CheckItemSize(Field("items", index), raw.size(), limits));
  item->payload = raw;
  return Status::Ok();
}

}  // namespace

Status UnknownField(std::string_view key) {
  return InvalidInput("body: unknown field '" + std::string(key) + "'");
}

Status ParseNativeMsgpack(std::string_view body, const ParseLimits& limits, WorkRequest* out,
                          const MsgpackField& other) {
  if (body.empty()) return InvalidInput("body: empty");
  MsgpackReader r(body);
  uint32_t fields;
  if (!r.ReadMapHeader(&fields)) return MsgpackExpected("body", "a map", r);
  bool has_items = false;
  for (uint32_t f = 0; f < fields; ++f) {
    std::string_view key;
    if (!r.ReadStr(&key)) return MsgpackExpected("body", "a field name (a string)", r);
    if (key == "items") {
      uint32_t n;
      if (!r.ReadArrayHeader(&n)) return MsgpackExpected("items", "an array", r);
      SHOAL_RETURN_IF_ERROR(CheckItemCount("items", n, limits));
      out->items.resize(n);
      for (uint32_t i = 0; i < n; ++i) {
        SHOAL_RETURN_IF_ERROR(ParseMsgpackItem(r, i, limits, out->task, &out->items[i]));
      }
      has_items = true;
    } else if (key == "truncate") {
      if (!r.ReadBool(&out->options.truncate)) return MsgpackExpected("truncate", "a boolean", r);
    } else if (key == "lora") {
      std::string_view lora;
      if (!r.ReadStr(&lora)) return MsgpackExpected("lora", "a string", r);
      out->lora = std::string(lora);
    } else {
      SHOAL_RETURN_IF_ERROR(other(key, r));
    }
  }
  if (!has_items) return InvalidInput("items: missing");
  if (!r.AtEnd()) return InvalidInput("body: trailing bytes after the request");
  return Status::Ok();
}

Status ParseNativeJson(std::string& body, const ParseLimits& limits, WorkRequest* out, const JsonField& other) {
  auto storage = std::make_unique<std::string>();
  std::vector<PendingItem> pending;
  bool has_items = false;
  Status s = ForEachJsonField(body, [&](std::string_view key, od::value v) -> Status {
    if (key == "items") {
      od::array arr;
      if (v.get_array().get(arr)) return JsonExpected("items", "an array", v);
      size_t i = 0;
      for (auto el_result : arr) {
        od::value el;
        if (auto e = std::move(el_result).get(el)) return JsonMalformed(e);
        od::object item;
        if (el.get_object().get(item)) return JsonExpected(Field("items", i), "an object", el);
        size_t inputs = 0;
        std::string_view document;
        DocumentOptions options;
        bool has_document = false, has_pages = false, has_text_layer = false;
        for (auto f_result : item) {
          od::field f;
          if (auto e = std::move(f_result).get(f)) return JsonMalformed(e);
          std::string_view k;
          if (auto e = f.unescaped_key().get(k)) return JsonMalformed(e);
          if (k != "text" && k != "image" && k != "document" && k != "pages" && k != "text_layer") {
            return InvalidInput(Field("items", i) + ": unknown field '" + std::string(k) + "'");
          }
          const std::string field = Field("items", i, "." + std::string(k));
          std::string_view text;
          SHOAL_RETURN_IF_ERROR(ReadJsonString(f.value(), field, &text));
          if (k == "pages") {
            options.pages = text, has_pages = true;
            continue;
          }
          if (k == "text_layer") {
            SHOAL_RETURN_IF_ERROR(ParseTextLayer(field, text, &options.text_layer));
            has_text_layer = true;
            continue;
          }
          if (++inputs > 1) return InvalidInput(Field("items", i) + ": one text, image or document, not more");
          if (k == "document") {
            SHOAL_RETURN_IF_ERROR(DocumentsOnlyToExtract(out->task, field));
            document = text, has_document = true;  // added once its pages are known
          } else {
            SHOAL_RETURN_IF_ERROR(k == "image" ? AddJsonImage(field, text, limits, storage.get(), &pending)
                                               : AddJsonText(Field("items", i), text, limits, storage.get(), &pending));
          }
        }
        if (inputs == 0) return InvalidInput(Field("items", i, ".text") + ": missing");
        if (has_pages && !has_document) return InvalidInput(Field("items", i, ".pages") + ": only with a document");
        if (has_text_layer && !has_document) {
          return InvalidInput(Field("items", i, ".text_layer") + ": only with a document");
        }
        if (has_document) {
          SHOAL_RETURN_IF_ERROR(
              AddJsonDocument(Field("items", i, ".document"), document, options, limits, storage.get(), &pending));
        }
        ++i;
      }
      has_items = true;
      return CheckItemCount("items", pending.size(), limits);
    }
    if (key == "truncate") return ReadJsonBool(v, "truncate", &out->options.truncate);
    if (key == "lora") return ReadLora(v, out);
    return other(key, v);
  });
  SHOAL_RETURN_IF_ERROR(s);
  if (!has_items) return InvalidInput("items: missing");
  FinishItems(std::move(storage), pending, out);
  return Status::Ok();
}

}  // namespace shoal::wire
