#include "runtime/native/tokenizers/decoder.h"

#include "runtime/native/tokenizers/byte_level.h"
#include "runtime/native/tokenizers/unicode.h"

namespace shoal::native::tok {
namespace {

// "<0xAB>" → 0xAB; -1 for anything else.
int FallbackByte(std::string_view piece) {
  if (piece.size() != 6 || !piece.starts_with("<0x") || piece[5] != '>') return -1;
  int v = 0;
  for (char c : piece.substr(3, 2)) {
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else return -1;
  }
  return v;
}

}  // namespace

PieceDecoder PieceDecoder::Parse(std::optional<Json> decoder) {
  PieceDecoder d;
  if (!decoder) {
    d.status_ = LoadError("decoder", "missing: cannot turn generated tokens into text");
  } else {
    d.status_ = d.Add(*decoder, "decoder");
  }
  return d;
}

Status PieceDecoder::Add(Json step, std::string_view where) {
  SHOAL_ASSIGN_OR_RETURN(std::string_view type, ReqString(step, "type", where));
  if (type == "Sequence") {
    SHOAL_ASSIGN_OR_RETURN(Json list, ReqField(step, "decoders", where));
    simdjson::dom::array arr;
    if (list.get_array().get(arr) != simdjson::SUCCESS) return LoadError(Path(where, "decoders"), "expected an array");
    size_t i = 0;
    for (Json s : arr) SHOAL_RETURN_IF_ERROR(Add(s, std::string(where) + ".decoders[" + std::to_string(i++) + "]"));
    return Status::Ok();
  }
  if (type == "ByteLevel") {
    byte_level_ = true;
  } else if (type == "ByteFallback") {
    byte_fallback_ = true;
  } else if (type == "Fuse" || type == "Strip") {
    // Fuse joins pieces (we emit them one by one anyway); Strip: see header.
  } else if (type == "Replace") {
    SHOAL_ASSIGN_OR_RETURN(Json pattern, ReqField(step, "pattern", where));
    SHOAL_ASSIGN_OR_RETURN(std::string_view from, ReqString(pattern, "String", Path(where, "pattern")));
    SHOAL_ASSIGN_OR_RETURN(std::string_view to, ReqString(step, "content", where));
    replace_.emplace_back(std::string(from), std::string(to));
  } else if (type == "Metaspace") {
    SHOAL_ASSIGN_OR_RETURN(auto r, OptString(step, "replacement", where));
    replace_.emplace_back(r ? std::string(*r) : "\u2581", " ");
  } else {
    return LoadError(Path(where, "type"), "decoder '" + std::string(type) + "' is not supported for generation");
  }
  return Status::Ok();
}

std::string PieceDecoder::Bytes(std::string_view piece) const {
  if (byte_fallback_) {
    if (int b = FallbackByte(piece); b >= 0) return std::string(1, static_cast<char>(b));
  }
  std::string out;
  if (byte_level_) {
    for (size_t i = 0; i < piece.size();) {
      int len = 1;
      const uint32_t cp = DecodeUtf8(piece, i, &len);
      const int b = CodePointToByte(cp);
      if (b >= 0) {
        out.push_back(static_cast<char>(b));
      } else {
        out.append(piece.substr(i, len));  // not in the alphabet: keep as is
      }
      i += len;
    }
  } else {
    out.assign(piece);
  }
  for (const auto& [from, to] : replace_) {
    if (from.empty()) continue;
    for (size_t pos = out.find(from); pos != std::string::npos; pos = out.find(from, pos + to.size())) {
      out.replace(pos, from.size(), to);
    }
  }
  return out;
}

}  // namespace shoal::native::tok
