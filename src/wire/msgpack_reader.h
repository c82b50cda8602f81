// MsgpackReader: a cursor over one MessagePack buffer that reads values in
// place, without allocating. The gateway uses it to peek request bodies
// (validate fields, find item byte ranges) and to transcode worker results;
// the worker uses it to decode work items.
//
// Every Read* returns false (and leaves the cursor where it was) when the next
// value is not of the asked type or is truncated; Peek() tells what is next so
// callers can name the field and the type they found in their error message.
// Strings and binaries are views into the buffer: they live as long as it does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::wire {

enum class MsgpackType : unsigned char {
  kEnd,      // no bytes left
  kInvalid,  // a byte that starts no MessagePack value (0xc1)
  kNil,
  kBool,
  kInt,      // any integer, signed or not
  kFloat,
  kStr,
  kBin,
  kArray,
  kMap,
  kExt,
};

// "a string", "an integer", ... for error messages.
std::string_view MsgpackTypeName(MsgpackType t);

class MsgpackReader {
 public:
  explicit MsgpackReader(std::string_view buf) : buf_(buf) {}

  MsgpackType Peek() const;
  // What is wrong with the next value when a Read* of its type failed: its
  // header or its declared length runs past the end of the buffer ("string
  // length runs past the end of the body"); empty when it is whole.
  std::string Problem() const;
  bool AtEnd() const { return pos_ >= buf_.size(); }
  size_t offset() const { return pos_; }
  std::string_view buffer() const { return buf_; }

  bool ReadNil();
  bool ReadBool(bool* v);
  bool ReadInt(int64_t* v);      // fails if an unsigned value exceeds int64
  bool ReadDouble(double* v);    // float32, float64, or any integer
  bool ReadStr(std::string_view* v);
  bool ReadBin(std::string_view* v);
  bool ReadArrayHeader(uint32_t* n);
  bool ReadMapHeader(uint32_t* n);

  // Skips one complete value (containers included, iteratively, so nesting
  // depth cannot overflow the stack). Fails on truncated or invalid input.
  bool Skip();

  // Skips one value and returns its raw bytes.
  bool ReadRaw(std::string_view* raw);

 private:
  // Decodes the header at pos_ without moving: its type, the value's length
  // (string/bin/ext bytes, container element count) and header size.
  struct Header {
    MsgpackType type = MsgpackType::kEnd;
    uint64_t length = 0;   // payload bytes for str/bin/ext; elements for containers
    size_t header_bytes = 0;
    size_t payload_bytes = 0;  // bytes after the header that belong to this value
  };
  bool DecodeHeader(size_t pos, Header* h) const;

  std::string_view buf_;
  size_t pos_ = 0;
};

// The error for a value at `r` that is not the `want` ("a string") a field
// needs: "FIELD: expected WANT, got an integer", or what is wrong with a value
// of the right type that is cut short (Problem()).
Status MsgpackExpected(std::string_view field, std::string_view want, const MsgpackReader& r);

}  // namespace shoal::wire
