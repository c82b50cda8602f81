// The safetensors header (runtime/native/loaders/safetensors.h), through
// SafeTensors::FromBytes: the input is a whole file (8-byte header length,
// JSON header, data). On success every tensor lies inside the data, its
// bytes are exactly its elements times its dtype's size (no overflow), no
// two tensors overlap, and F32() reads each float tensor.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.h"
#include "runtime/native/loaders/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shoal::native;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto st = SafeTensors::FromBytes(bytes);
  if (!st.ok()) return 0;
  const auto* begin = reinterpret_cast<const std::byte*>(bytes.data());
  const auto* end = begin + bytes.size();
  std::vector<std::pair<const std::byte*, const std::byte*>> extents;
  for (std::string_view name : (*st)->names()) {
    const TensorView* v = (*st)->Find(name);
    FUZZ_CHECK(v != nullptr && v->name == name);
    FUZZ_CHECK(v->data >= begin + 8 && v->data <= end && v->bytes <= static_cast<size_t>(end - v->data));
    uint64_t elements = 1;
    for (int64_t d : v->shape) {
      FUZZ_CHECK(d >= 0);
      FUZZ_CHECK(!__builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements));
    }
    uint64_t want = 0;
    FUZZ_CHECK(!__builtin_mul_overflow(elements, DTypeSize(v->dtype), &want));
    FUZZ_CHECK(want == v->bytes);
    FUZZ_CHECK(static_cast<uint64_t>(v->elements()) == elements);
    if (v->bytes) extents.emplace_back(v->data, v->data + v->bytes);
    if (v->dtype == DType::kF32 || v->dtype == DType::kF16 || v->dtype == DType::kBF16) {
      std::vector<float> storage;
      auto f = (*st)->F32(name, v->shape, &storage);
      FUZZ_CHECK(f.ok());
    }
  }
  std::sort(extents.begin(), extents.end());
  for (size_t i = 1; i < extents.size(); ++i) FUZZ_CHECK(extents[i].first >= extents[i - 1].second);
  return 0;
}
