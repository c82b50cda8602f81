#include "wire/item.h"

#include "wire/msgpack_writer.h"

namespace shoal::wire {

void AppendTextItem(std::string_view text, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1);
  w.Str("text");
  w.Str(text);
}

void AppendIdsItem(std::span<const int32_t> ids, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1);
  w.Str("ids");
  w.ArrayHeader(static_cast<uint32_t>(ids.size()));
  for (int32_t id : ids) w.Int(id);
}

void AppendImageItem(std::string_view bytes, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1);
  w.Str("image");
  w.Bin(bytes);
}

Status ParseTextLayer(std::string_view field, std::string_view value, bool* text_layer) {
  if (value != "auto" && value != "ignore") {
    return InvalidInput(std::string(field) + ": '" + std::string(value) + "' is neither auto nor ignore");
  }
  *text_layer = value == "auto";
  return Status::Ok();
}

void AppendDocumentItem(std::string_view bytes, const DocumentOptions& options, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1 + !options.pages.empty() + !options.text_layer);
  w.Str("document");
  w.Bin(bytes);
  if (!options.pages.empty()) {
    w.Str("pages");
    w.Str(options.pages);
  }
  if (!options.text_layer) {
    w.Str("text_layer");
    w.Str("ignore");
  }
}

void AppendTextImageItem(std::string_view text, std::string_view image, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(2);
  w.Str("text");
  w.Str(text);
  w.Str("image");
  w.Bin(image);
}

void AppendPairItem(std::string_view text, std::string_view pair, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(2);
  w.Str("text");
  w.Str(text);
  w.Str("text_pair");
  w.Str(pair);
}

void AppendTokenizeItem(std::string_view text, bool add_special_tokens, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(2);
  w.Str("text");
  w.Str(text);
  w.Str("add_special_tokens");
  w.Bool(add_special_tokens);
}

Status DecodeItem(std::string_view msgpack, Task task, ItemFields* out) {
  MsgpackReader r(msgpack);
  uint32_t fields;
  if (!r.ReadMapHeader(&fields)) return MsgpackExpected("item", "a map", r);
  bool has_text = false, has_pair = false, has_ids = false, has_image = false, has_document = false,
       has_pages = false, has_text_layer = false;
  auto read_str = [&](std::string_view name, std::string_view* v) -> Status {
    if (r.ReadStr(v)) return Status::Ok();
    return MsgpackExpected("item." + std::string(name), "a string", r);
  };
  for (uint32_t f = 0; f < fields; ++f) {
    std::string_view key;
    if (!r.ReadStr(&key)) return MsgpackExpected("item", "a field name (a string)", r);
    if (key == "text") {
      SHOAL_RETURN_IF_ERROR(read_str(key, &out->text));
      has_text = true;
    } else if (key == "ids" && task == Task::kEncode) {
      MsgpackFields ids(r, "item.ids");
      SHOAL_RETURN_IF_ERROR(ids.Ints(&out->ids));
      has_ids = true;
    } else if (key == "image" && task != Task::kTokenize) {
      if (!r.ReadBin(&out->image)) return MsgpackExpected("item.image", "binary (the encoded image)", r);
      if (out->image.empty()) return InvalidInput("item.image: empty");
      has_image = true;
    } else if (key == "document" && task == Task::kExtract) {
      if (!r.ReadBin(&out->document)) return MsgpackExpected("item.document", "binary (the PDF's bytes)", r);
      if (out->document.empty()) return InvalidInput("item.document: empty");
      has_document = true;
    } else if (key == "pages" && task == Task::kExtract) {
      SHOAL_RETURN_IF_ERROR(read_str(key, &out->pages));
      has_pages = true;
    } else if (key == "text_layer" && task == Task::kExtract) {
      std::string_view value;
      SHOAL_RETURN_IF_ERROR(read_str(key, &value));
      SHOAL_RETURN_IF_ERROR(ParseTextLayer("item.text_layer", value, &out->text_layer));
      has_text_layer = true;
    } else if (key == "text_pair" && task == Task::kScore) {
      SHOAL_RETURN_IF_ERROR(read_str(key, &out->text_pair));
      has_pair = true;
    } else if (key == "add_special_tokens" && task == Task::kTokenize) {
      if (!r.ReadBool(&out->add_special_tokens)) {
        return InvalidInput("item.add_special_tokens: expected a boolean");
      }
    } else {
      return InvalidInput("item: unknown field '" + std::string(key) + "' for " +
                          std::string(TaskName(task)));
    }
  }
  if (task == Task::kScore) {  // a text and what it is scored against: a text or an image
    if (!has_text) return InvalidInput("item.text: missing");
    if (has_pair == has_image) return InvalidInput(has_pair ? "item: both text_pair and image" : "item.text_pair: missing");
  } else {
    if (has_text + has_ids + has_image + has_document > 1) {
      return InvalidInput("item: more than one of text, ids, image and document");
    }
    if (!has_text && !has_ids && !has_image && !has_document) return InvalidInput("item.text: missing");
    if (has_pages && !has_document) return InvalidInput("item.pages: only with a document");
    if (has_text_layer && !has_document) return InvalidInput("item.text_layer: only with a document");
  }
  if (has_ids && out->ids.empty()) return InvalidInput("item.ids: empty");
  if (!r.AtEnd()) return InvalidInput("item: trailing bytes after the item");
  return Status::Ok();
}

void AppendDenseResult(const float* v, size_t n, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1);
  w.Str("dense");
  w.Float32Array(v, n);
}

void AppendEncodeResult(const EncodeResultView& r, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(static_cast<uint32_t>(r.dense.has_value() + r.sparse.has_value() + r.multivector.has_value()));
  if (r.dense) {
    w.Str("dense");
    w.Float32Array(r.dense->data(), r.dense->size());
  }
  if (r.sparse) {
    const auto& sp = *r.sparse;
    w.Str("sparse");
    w.MapHeader(sp.tokens.empty() ? 2 : 3);
    w.Str("indices");
    w.ArrayHeader(static_cast<uint32_t>(sp.indices.size()));
    for (uint32_t i : sp.indices) w.Uint(i);
    w.Str("values");
    w.Float32Array(sp.values.data(), sp.values.size());
    if (!sp.tokens.empty()) {
      w.Str("tokens");
      w.ArrayHeader(static_cast<uint32_t>(sp.tokens.size()));
      for (const std::string& t : sp.tokens) w.Str(t);
    }
  }
  if (r.multivector) {
    const auto& mv = *r.multivector;
    const size_t rows = mv.dim == 0 ? 0 : mv.values.size() / mv.dim;
    w.Str("multivector");
    w.ArrayHeader(static_cast<uint32_t>(rows));
    for (size_t i = 0; i < rows; ++i) w.Float32Array(mv.values.data() + i * mv.dim, mv.dim);
  }
}

void AppendLogitsResult(const float* v, size_t n, std::string* out) {
  MsgpackWriter w(out);
  w.MapHeader(1);
  w.Str("logits");
  w.Float32Array(v, n);
}

Status ReadAggregation(MsgpackFields& f, std::optional<Aggregation>* out) {
  std::string_view name;
  SHOAL_RETURN_IF_ERROR(f.Str(&name));
  Aggregation a;
  if (!ParseAggregation(name, &a)) return f.Error("unknown aggregation '" + std::string(name) + "'");
  *out = a;
  return Status::Ok();
}

}  // namespace shoal::wire
