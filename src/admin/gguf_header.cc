#include "admin/gguf_header.h"

#include <cstdint>
#include <cstring>
#include <fstream>

namespace shoal::admin {
namespace {

// GGUF value types, as numbered in the format.
enum : uint32_t {
  kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64,
};

class Reader {
 public:
  explicit Reader(std::ifstream& in) : in_(in) {}
  template <class T>
  bool Read(T* v) {
    return static_cast<bool>(in_.read(reinterpret_cast<char*>(v), sizeof(T)));
  }
  bool String(std::string* s) {
    uint64_t n = 0;
    if (!Read(&n) || n > (1u << 20)) return false;  // keys and names are short
    s->resize(n);
    return n == 0 || static_cast<bool>(in_.read(s->data(), static_cast<std::streamsize>(n)));
  }
  bool SkipBytes(uint64_t n) { return static_cast<bool>(in_.seekg(static_cast<std::streamoff>(n), std::ios::cur)); }
  bool SkipString() {
    uint64_t n = 0;
    return Read(&n) && SkipBytes(n);
  }
  bool SkipValue(uint32_t type, int depth = 0) {
    switch (type) {
      case kU8: case kI8: case kBool: return SkipBytes(1);
      case kU16: case kI16: return SkipBytes(2);
      case kU32: case kI32: case kF32: return SkipBytes(4);
      case kU64: case kI64: case kF64: return SkipBytes(8);
      case kString: return SkipString();
      case kArray: {
        uint32_t inner = 0;
        uint64_t n = 0;
        if (depth > 2 || !Read(&inner) || !Read(&n)) return false;
        for (uint64_t i = 0; i < n; ++i) {
          if (!SkipValue(inner, depth + 1)) return false;
        }
        return true;
      }
      default: return false;
    }
  }

 private:
  std::ifstream& in_;
};

}  // namespace

Result<std::string> GgufString(const std::string& path, std::string_view wanted) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidInput("cannot read " + path);
  Reader r(in);
  char magic[4];
  uint32_t version = 0;
  uint64_t tensors = 0, keys = 0;
  if (!in.read(magic, 4) || std::memcmp(magic, "GGUF", 4) != 0) return InvalidInput(path + " is not a GGUF file");
  if (!r.Read(&version) || !r.Read(&tensors) || !r.Read(&keys)) return InvalidInput(path + ": truncated GGUF header");
  if (version < 2 || version > 3) {
    return InvalidInput(path + ": GGUF version " + std::to_string(version) + " (2 and 3 are read)");
  }
  for (uint64_t i = 0; i < keys; ++i) {
    std::string key;
    uint32_t type = 0;
    if (!r.String(&key) || !r.Read(&type)) break;
    if (key == wanted && type == kString) {
      std::string value;
      if (!r.String(&value)) break;
      return value;
    }
    if (!r.SkipValue(type)) break;
  }
  return Status(Code::kNotFound, path + ": the GGUF header names no " + std::string(wanted));
}

Result<std::string> GgufArchitecture(const std::string& path) {
  auto arch = GgufString(path, "general.architecture");
  if (!arch.ok() && arch.status().code() == Code::kNotFound) return InvalidInput(arch.status().message());
  return arch;
}

}  // namespace shoal::admin
