#include "wire/msgpack_reader.h"

#include <cstring>

namespace shoal::wire {
namespace {

uint64_t BigEndian(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string_view MsgpackTypeName(MsgpackType t) {
  switch (t) {
    case MsgpackType::kEnd: return "nothing (truncated)";
    case MsgpackType::kInvalid: return "an invalid byte";
    case MsgpackType::kNil: return "nil";
    case MsgpackType::kBool: return "a boolean";
    case MsgpackType::kInt: return "an integer";
    case MsgpackType::kFloat: return "a float";
    case MsgpackType::kStr: return "a string";
    case MsgpackType::kBin: return "binary";
    case MsgpackType::kArray: return "an array";
    case MsgpackType::kMap: return "a map";
    case MsgpackType::kExt: return "an extension";
  }
  return "?";
}

bool MsgpackReader::DecodeHeader(size_t pos, Header* h) const {
  *h = Header{};
  if (pos >= buf_.size()) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(buf_.data()) + pos;
  const size_t avail = buf_.size() - pos;
  const unsigned char b = p[0];

  // Sized forms: a 1-byte tag followed by an n-byte big-endian length.
  auto sized = [&](MsgpackType type, size_t n, bool payload_follows) {
    h->type = type;  // known even when the length is cut short
    if (avail < 1 + n) return false;
    h->length = BigEndian(p + 1, n);
    h->header_bytes = 1 + n;
    h->payload_bytes = payload_follows ? h->length : 0;
    return true;
  };
  // ext 8/16/32: an n-byte length, a type byte, then the data.
  auto ext = [&](size_t n) {
    h->type = MsgpackType::kExt;
    if (avail < 2 + n || !sized(MsgpackType::kExt, n, true)) return false;
    h->header_bytes += 1;
    return true;
  };
  auto fixed = [&](MsgpackType type, size_t payload) {
    h->type = type;
    h->header_bytes = 1;
    h->payload_bytes = payload;
    return true;
  };

  if (b <= 0x7f || b >= 0xe0) return fixed(MsgpackType::kInt, 0);
  if (b <= 0x8f) { fixed(MsgpackType::kMap, 0); h->length = b & 0x0f; return true; }
  if (b <= 0x9f) { fixed(MsgpackType::kArray, 0); h->length = b & 0x0f; return true; }
  if (b <= 0xbf) { fixed(MsgpackType::kStr, b & 0x1f); h->length = b & 0x1f; return true; }
  switch (b) {
    case 0xc0: return fixed(MsgpackType::kNil, 0);
    case 0xc2: case 0xc3: return fixed(MsgpackType::kBool, 0);
    case 0xc4: return sized(MsgpackType::kBin, 1, true);
    case 0xc5: return sized(MsgpackType::kBin, 2, true);
    case 0xc6: return sized(MsgpackType::kBin, 4, true);
    case 0xc7: return ext(1);
    case 0xc8: return ext(2);
    case 0xc9: return ext(4);
    case 0xca: return fixed(MsgpackType::kFloat, 4);
    case 0xcb: return fixed(MsgpackType::kFloat, 8);
    case 0xcc: case 0xd0: return fixed(MsgpackType::kInt, 1);
    case 0xcd: case 0xd1: return fixed(MsgpackType::kInt, 2);
    case 0xce: case 0xd2: return fixed(MsgpackType::kInt, 4);
    case 0xcf: case 0xd3: return fixed(MsgpackType::kInt, 8);
    case 0xd4: return fixed(MsgpackType::kExt, 2);
    case 0xd5: return fixed(MsgpackType::kExt, 3);
    case 0xd6: return fixed(MsgpackType::kExt, 5);
    case 0xd7: return fixed(MsgpackType::kExt, 9);
    case 0xd8: return fixed(MsgpackType::kExt, 17);
    case 0xd9: return sized(MsgpackType::kStr, 1, true);
    case 0xda: return sized(MsgpackType::kStr, 2, true);
    case 0xdb: return sized(MsgpackType::kStr, 4, true);
    case 0xdc: return sized(MsgpackType::kArray, 2, false);
    case 0xdd: return sized(MsgpackType::kArray, 4, false);
    case 0xde: return sized(MsgpackType::kMap, 2, false);
    case 0xdf: return sized(MsgpackType::kMap, 4, false);
    default: h->type = MsgpackType::kInvalid; return false;  // 0xc1
  }
}

std::string MsgpackReader::Problem() const {
  if (AtEnd()) return {};
  Header h;
  const bool whole_header = DecodeHeader(pos_, &h);
  if (h.type == MsgpackType::kInvalid) return {};
  std::string noun(MsgpackTypeName(h.type));
  noun = noun.substr(noun.find(' ') + 1);  // "a string" -> "string"
  if (!whole_header) return noun + " header runs past the end of the body";
  if (buf_.size() - pos_ - h.header_bytes >= h.payload_bytes) return {};
  const bool has_length = h.type == MsgpackType::kStr || h.type == MsgpackType::kBin || h.type == MsgpackType::kExt;
  return noun + (has_length ? " length" : "") + " runs past the end of the body";
}

Status MsgpackExpected(std::string_view field, std::string_view want, const MsgpackReader& r) {
  if (std::string problem = r.Problem(); !problem.empty()) return InvalidInput(std::string(field) + ": " + problem);
  return InvalidInput(std::string(field) + ": expected " + std::string(want) + ", got " +
                      std::string(MsgpackTypeName(r.Peek())));
}

MsgpackType MsgpackReader::Peek() const {
  if (AtEnd()) return MsgpackType::kEnd;
  Header h;
  if (!DecodeHeader(pos_, &h)) {
    return h.type == MsgpackType::kInvalid ? MsgpackType::kInvalid : MsgpackType::kEnd;
  }
  return h.type;
}

bool MsgpackReader::ReadNil() {
  if (AtEnd() || static_cast<unsigned char>(buf_[pos_]) != 0xc0) return false;
  ++pos_;
  return true;
}

bool MsgpackReader::ReadBool(bool* v) {
  if (AtEnd()) return false;
  const auto b = static_cast<unsigned char>(buf_[pos_]);
  if (b != 0xc2 && b != 0xc3) return false;
  *v = b == 0xc3;
  ++pos_;
  return true;
}

bool MsgpackReader::ReadInt(int64_t* v) {
  Header h;
  if (!DecodeHeader(pos_, &h) || h.type != MsgpackType::kInt) return false;
  if (buf_.size() - pos_ < h.header_bytes + h.payload_bytes) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(buf_.data()) + pos_;
  const unsigned char b = p[0];
  if (b <= 0x7f) {
    *v = b;
  } else if (b >= 0xe0) {
    *v = static_cast<int8_t>(b);
  } else if (b >= 0xcc && b <= 0xcf) {
    uint64_t u = BigEndian(p + 1, h.payload_bytes);
    if (u > static_cast<uint64_t>(INT64_MAX)) return false;
    *v = static_cast<int64_t>(u);
  } else {
    uint64_t u = BigEndian(p + 1, h.payload_bytes);
    switch (h.payload_bytes) {
      case 1: *v = static_cast<int8_t>(u); break;
      case 2: *v = static_cast<int16_t>(u); break;
      case 4: *v = static_cast<int32_t>(u); break;
      default: *v = static_cast<int64_t>(u); break;
    }
  }
  pos_ += 1 + h.payload_bytes;
  return true;
}

bool MsgpackReader::ReadDouble(double* v) {
  if (AtEnd()) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(buf_.data()) + pos_;
  const size_t avail = buf_.size() - pos_;
  if (p[0] == 0xca) {
    if (avail < 5) return false;
    uint32_t bits = static_cast<uint32_t>(BigEndian(p + 1, 4));
    float f;
    std::memcpy(&f, &bits, 4);
    *v = f;
    pos_ += 5;
    return true;
  }
  if (p[0] == 0xcb) {
    if (avail < 9) return false;
    uint64_t bits = BigEndian(p + 1, 8);
    std::memcpy(v, &bits, 8);
    pos_ += 9;
    return true;
  }
  if (p[0] == 0xcf) {  // uint64, possibly above INT64_MAX
    if (avail < 9) return false;
    *v = static_cast<double>(BigEndian(p + 1, 8));
    pos_ += 9;
    return true;
  }
  int64_t i;
  if (!ReadInt(&i)) return false;
  *v = static_cast<double>(i);
  return true;
}

bool MsgpackReader::ReadStr(std::string_view* v) {
  Header h;
  if (!DecodeHeader(pos_, &h) || h.type != MsgpackType::kStr) return false;
  if (buf_.size() - pos_ - h.header_bytes < h.payload_bytes) return false;
  *v = buf_.substr(pos_ + h.header_bytes, h.payload_bytes);
  pos_ += h.header_bytes + h.payload_bytes;
  return true;
}

bool MsgpackReader::ReadBin(std::string_view* v) {
  Header h;
  if (!DecodeHeader(pos_, &h) || h.type != MsgpackType::kBin) return false;
  if (buf_.size() - pos_ - h.header_bytes < h.payload_bytes) return false;
  *v = buf_.substr(pos_ + h.header_bytes, h.payload_bytes);
  pos_ += h.header_bytes + h.payload_bytes;
  return true;
}

bool MsgpackReader::ReadArrayHeader(uint32_t* n) {
  Header h;
  if (!DecodeHeader(pos_, &h) || h.type != MsgpackType::kArray) return false;
  *n = static_cast<uint32_t>(h.length);
  pos_ += h.header_bytes;
  return true;
}

bool MsgpackReader::ReadMapHeader(uint32_t* n) {
  Header h;
  if (!DecodeHeader(pos_, &h) || h.type != MsgpackType::kMap) return false;
  *n = static_cast<uint32_t>(h.length);
  pos_ += h.header_bytes;
  return true;
}

bool MsgpackReader::Skip() {
  size_t pos = pos_;
  uint64_t pending = 1;  // values still to skip
  while (pending > 0) {
    Header h;
    if (!DecodeHeader(pos, &h)) return false;
    const size_t avail = buf_.size() - pos - h.header_bytes;
    if (h.payload_bytes > avail) return false;
    pos += h.header_bytes + h.payload_bytes;
    --pending;
    if (h.type == MsgpackType::kArray) pending += h.length;
    if (h.type == MsgpackType::kMap) pending += 2 * h.length;
    // Every value takes at least one byte: more pending values than bytes
    // left means the input is truncated (and stops a tiny header from
    // claiming four billion elements).
    if (pending > buf_.size() - pos) return false;
  }
  pos_ = pos;
  return true;
}

bool MsgpackReader::ReadRaw(std::string_view* raw) {
  const size_t start = pos_;
  if (!Skip()) return false;
  *raw = buf_.substr(start, pos_ - start);
  return true;
}

}  // namespace shoal::wire
