#include "wire/json_writer.h"

#include <charconv>
#include <cmath>

namespace shoal::wire {

void JsonWriter::String(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out_->push_back('"');
  size_t run = 0;  // start of the pending run of bytes that need no escape
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out_->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out_->append("\\\""); break;
      case '\\': out_->append("\\\\"); break;
      case '\n': out_->append("\\n"); break;
      case '\r': out_->append("\\r"); break;
      case '\t': out_->append("\\t"); break;
      case '\b': out_->append("\\b"); break;
      case '\f': out_->append("\\f"); break;
      default: {
        const char esc[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out_->append(esc, sizeof(esc));
      }
    }
  }
  out_->append(s.data() + run, s.size() - run);
  out_->push_back('"');
}

void JsonWriter::Float(float v) {
  if (!std::isfinite(v)) return Null();
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out_->append(buf, r.ptr);
}

void JsonWriter::Double(double v) {
  if (!std::isfinite(v)) return Null();
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out_->append(buf, r.ptr);
}

void JsonWriter::Int(int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out_->append(buf, r.ptr);
}

void AppendBase64(std::string_view bytes, std::string* out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  out->reserve(out->size() + (n + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const uint32_t v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    const char q[] = {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63],
                      kAlphabet[v & 63]};
    out->append(q, 4);
  }
  if (i < n) {
    uint32_t v = p[i] << 16;
    if (i + 1 < n) v |= p[i + 1] << 8;
    out->push_back(kAlphabet[v >> 18]);
    out->push_back(kAlphabet[(v >> 12) & 63]);
    out->push_back(i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=');
    out->push_back('=');
  }
}

}  // namespace shoal::wire
