// JsonWriter: appends JSON text to a std::string. Escaping follows RFC 8259
// (control characters as \u00XX, '"' and '\\' escaped, UTF-8 passed through,
// each byte of malformed UTF-8 replaced by U+FFFD so the output stays valid);
// floats print in their shortest round-trip form and non-finite values, which
// JSON cannot carry, print as null.
#pragma once

#include "common/base64.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace shoal::wire {

class JsonWriter {
 public:
  explicit JsonWriter(std::string* out) : out_(out) {}

  void String(std::string_view s);
  void Float(float v);
  void Double(double v);
  void Int(int64_t v);
  void Bool(bool v) { out_->append(v ? "true" : "false"); }
  void Null() { out_->append("null"); }
  void Raw(std::string_view text) { out_->append(text); }
  void Char(char c) { out_->push_back(c); }
  // `"key":`
  void Key(std::string_view k) {
    String(k);
    out_->push_back(':');
  }

 private:
  std::string* out_;
};

// Standard base64 (RFC 4648, with padding): common/base64.h's.
using shoal::AppendBase64;

}  // namespace shoal::wire
