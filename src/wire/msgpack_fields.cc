#include "wire/msgpack_fields.h"

namespace shoal::wire {

Status MsgpackFields::Bits64(uint64_t* v) {
  // MsgpackReader reads integers as int64: a uint64 above INT64_MAX comes as
  // its raw 8 bytes (0xcf tag) and is read here by hand.
  const std::string_view rest = r_.buffer().substr(r_.offset());
  if (rest.size() >= 9 && static_cast<unsigned char>(rest[0]) == 0xcf) {
    uint64_t x = 0;
    for (int i = 1; i <= 8; ++i) x = (x << 8) | static_cast<unsigned char>(rest[i]);
    *v = x;
    return Skip();
  }
  int64_t x = 0;
  if (!r_.ReadInt(&x)) return Expected("an integer");
  *v = static_cast<uint64_t>(x);
  return Status::Ok();
}

Status MsgpackFields::Strings(std::vector<std::string>* v) {
  uint32_t n = 0;
  if (!r_.ReadArrayHeader(&n)) return Expected("an array of strings");
  v->clear();
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view s;
    if (!r_.ReadStr(&s)) return Expected("an array of strings");
    v->emplace_back(s);
  }
  return Status::Ok();
}

Status MsgpackFields::Ints(std::vector<int32_t>* v) {
  uint32_t n = 0;
  if (!r_.ReadArrayHeader(&n)) return Expected("an array of integers");
  v->clear();
  v->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    int32_t x = 0;
    SHOAL_RETURN_IF_ERROR(Int(&x));
    v->push_back(x);
  }
  return Status::Ok();
}

Status MsgpackFields::Floats(std::vector<float>* v) {
  uint32_t n = 0;
  if (!r_.ReadArrayHeader(&n)) return Expected("an array of numbers");
  v->clear();
  v->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (r_.ReadNil()) {
      v->push_back(-std::numeric_limits<float>::infinity());
      continue;
    }
    float x = 0;
    SHOAL_RETURN_IF_ERROR(Float(&x));
    v->push_back(x);
  }
  return Status::Ok();
}

}  // namespace shoal::wire
