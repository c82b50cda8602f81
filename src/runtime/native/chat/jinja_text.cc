#include "runtime/native/chat/jinja_text.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace shoal::native::jinja {
namespace {

// The length of the UTF-8 sequence that starts with `lead` (1 for a stray byte).
size_t SequenceLength(unsigned char lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// Decodes the code point at `pos`; its byte length goes to `*length`.
char32_t Decode(std::string_view s, size_t pos, size_t* length) {
  auto lead = static_cast<unsigned char>(s[pos]);
  size_t n = SequenceLength(lead);
  if (n == 1 || pos + n > s.size()) {
    *length = 1;
    return lead;
  }
  char32_t cp = lead & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) {
    auto c = static_cast<unsigned char>(s[pos + i]);
    if ((c & 0xC0) != 0x80) {
      *length = 1;
      return lead;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  *length = n;
  return cp;
}

// JavaScript's WhiteSpace and LineTerminator productions.
bool IsJsWhitespace(char32_t c) {
  switch (c) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
    case 0xFEFF:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

}  // namespace

size_t WhitespaceAt(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  size_t length = 0;
  return IsJsWhitespace(Decode(s, pos, &length)) ? length : 0;
}

std::string_view TrimStart(std::string_view s) {
  size_t pos = 0;
  while (size_t n = WhitespaceAt(s, pos)) pos += n;
  return s.substr(pos);
}

std::string_view TrimEnd(std::string_view s) {
  while (!s.empty()) {
    // Step back to the lead byte of the last code point.
    size_t start = s.size() - 1;
    while (start > 0 && s.size() - start < 4 &&
           (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) {
      --start;
    }
    if (WhitespaceAt(s, start) != s.size() - start) break;
    s.remove_suffix(s.size() - start);
  }
  return s;
}

std::string_view Trim(std::string_view s) { return TrimEnd(TrimStart(s)); }

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::vector<std::string_view> CodePoints(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t pos = 0; pos < s.size();) {
    size_t length = 0;
    Decode(s, pos, &length);
    out.push_back(s.substr(pos, length));
    pos += length;
  }
  return out;
}

size_t CodePointCount(std::string_view s) {
  size_t count = 0;
  for (size_t pos = 0; pos < s.size(); ++count) {
    size_t length = 0;
    Decode(s, pos, &length);
    pos += length;
  }
  return count;
}

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out->append("\\u00");
          out->push_back(kHex[c >> 4]);
          out->push_back(kHex[c & 0xF]);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

std::string JsNumber(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x < 0 ? "-Infinity" : "Infinity";
  if (x == 0) return "0";
  // Shortest round-trip digits d.ddd and exponent e: x = 0.dddd × 10^n, n = e + 1.
  char buf[64];
  char* end =
      std::to_chars(buf, buf + sizeof(buf) - 1, std::fabs(x), std::chars_format::scientific).ptr;
  *end = '\0';  // for atoi below
  std::string_view sci(buf, end - buf);
  size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits.push_back(c);
  }
  int n = std::atoi(sci.data() + e + 1) + 1;
  int k = static_cast<int>(digits.size());

  std::string out = x < 0 ? "-" : "";
  if (k <= n && n <= 21) {
    out += digits + std::string(n - k, '0');
  } else if (0 < n && n <= 21) {
    out += digits.substr(0, n) + "." + digits.substr(n);
  } else if (-6 < n && n <= 0) {
    out += "0." + std::string(-n, '0') + digits;
  } else {
    out += digits.substr(0, 1);
    if (k > 1) out += "." + digits.substr(1);
    out += n - 1 < 0 ? "e-" : "e+";
    out += std::to_string(std::abs(n - 1));
  }
  return out;
}

}  // namespace shoal::native::jinja
