// The native encode route's MessagePack body (wire/encode_request.h:
// ParseEncodeMsgpack). On success every item's payload must be a view into
// the request's own storage or the body, decode as an encode item, and the
// limits must hold.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "wire/encode_request.h"
#include "wire/item.h"

namespace {

bool Within(std::string_view inner, std::string_view outer) {
  return inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::wire;
  const std::string body(reinterpret_cast<const char*>(data), size);
  ParseLimits limits;
  limits.max_items = 64;
  limits.max_item_bytes = 4096;
  WorkRequest req;
  if (!ParseEncodeMsgpack(body, limits, &req).ok()) return 0;
  FUZZ_CHECK(req.items.size() <= limits.max_items);
  for (const RequestItem& item : req.items) {
    const bool in_storage = req.storage && Within(item.payload, *req.storage);
    FUZZ_CHECK(in_storage || Within(item.payload, body));
    std::string_view text;
    FUZZ_CHECK(DecodeTextItem(item.payload, &text).ok());
    FUZZ_CHECK(text.size() <= limits.max_item_bytes);
  }
  return 0;
}
