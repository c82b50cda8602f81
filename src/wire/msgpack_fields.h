// MsgpackFields: reads a MessagePack map field by field, with typed reads of
// the values whose errors name the field ("work.cost: expected a
// non-negative integer, got a string"). For the messages Shoal writes
// itself (work_message.h, generate.h, and the runtime protocol's,
// runtime/process/protocol.h): readers skip the keys they do not know, so a
// newer writer can add one.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/status.h"
#include "wire/msgpack_reader.h"

namespace shoal::wire {

class MsgpackFields {
 public:
  // `where` prefixes every field's name in errors ("work").
  MsgpackFields(MsgpackReader& r, std::string where) : r_(r), where_(std::move(where)) {}

  // Reads the map's header, then calls `field(key)` for each key: it reads
  // the value with one of the reads below, or Skip()s it.
  template <class Field>
  Status ForEach(Field&& field) {
    uint32_t n = 0;
    if (!r_.ReadMapHeader(&n)) return MsgpackExpected(where_, "a map", r_);
    for (uint32_t i = 0; i < n; ++i) {
      std::string_view key;
      if (!r_.ReadStr(&key)) return MsgpackExpected(where_, "a field name (a string)", r_);
      key_ = key;
      SHOAL_RETURN_IF_ERROR(field(key));
    }
    return Status::Ok();
  }

  Status Skip() { return r_.Skip() ? Status::Ok() : Expected("a value"); }
  Status Str(std::string_view* v) { return r_.ReadStr(v) ? Status::Ok() : Expected("a string"); }
  Status String(std::string* v) {
    std::string_view s;
    SHOAL_RETURN_IF_ERROR(Str(&s));
    v->assign(s);
    return Status::Ok();
  }
  Status Bool(bool* v) { return r_.ReadBool(v) ? Status::Ok() : Expected("a boolean"); }
  // An integer that fits T (signed or not).
  template <class T>
  Status Int(T* v) {
    int64_t x = 0;
    if (!r_.ReadInt(&x)) return Expected(std::is_signed_v<T> ? "an integer" : "a non-negative integer");
    const bool fits = std::is_signed_v<T>
                          ? x >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                x <= static_cast<int64_t>(std::numeric_limits<T>::max())
                          : x >= 0 && static_cast<uint64_t>(x) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    if (!fits) return Error(std::to_string(x) + " is out of range");
    *v = static_cast<T>(x);
    return Status::Ok();
  }
  // Any 64 bits (a seed): unsigned values beyond int64 too.
  Status Bits64(uint64_t* v);
  Status Float(float* v) {
    double d = 0;
    if (!r_.ReadDouble(&d)) return Expected("a number");
    *v = static_cast<float>(d);
    return Status::Ok();
  }
  Status Double(double* v) { return r_.ReadDouble(v) ? Status::Ok() : Expected("a number"); }
  Status Strings(std::vector<std::string>* v);
  Status Ints(std::vector<int32_t>* v);
  // Floats; nil reads as -infinity (a logprob of a token of probability 0).
  Status Floats(std::vector<float>* v);

  // An error about the current field.
  Status Error(std::string_view what) const { return InvalidInput(Name() + ": " + std::string(what)); }
  std::string Name() const { return where_ + "." + std::string(key_); }
  MsgpackReader& reader() { return r_; }

 private:
  Status Expected(std::string_view want) const { return MsgpackExpected(Name(), want, r_); }

  MsgpackReader& r_;
  const std::string where_;
  std::string_view key_;
};

// Reads `raw`, an array of maps: calls `item(i, fields)` for each, the
// fields named "<where>[i]" in errors.
template <class Item>
Status ForEachItem(std::string_view raw, std::string_view where, Item&& item) {
  MsgpackReader r(raw);
  uint32_t n = 0;
  if (!r.ReadArrayHeader(&n)) return MsgpackExpected(where, "an array", r);
  for (uint32_t i = 0; i < n; ++i) {
    MsgpackFields f(r, std::string(where) + "[" + std::to_string(i) + "]");
    SHOAL_RETURN_IF_ERROR(item(i, f));
  }
  return Status::Ok();
}

}  // namespace shoal::wire
