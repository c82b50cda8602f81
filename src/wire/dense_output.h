// Dense vectors as a client asks for them: cut to a Matryoshka dimension
// (renormalized when the request normalizes), and written in one or more
// element types. The types and their formulas are sentence-transformers'
// quantize_embeddings (and Cohere's embedding_types, which name the same):
//
//   float32  the vector                     float16  each value rounded to half precision
//   int8     trunc((x - lo) / step - 128)   uint8    trunc((x - lo) / step)
//   binary   the signs (x > 0) packed eight to a byte, first value in the
//            high bit, as int8 (byte - 128)  ubinary  the same bytes as uint8
//
// with the calibration range [lo, hi] = [-1, 1] (step = 2/255), every
// component of a unit vector; values outside it are clamped first. A vector
// of n values packs to ceil(n / 8) bytes, the last padded with zeros.
//
// Threading: functions only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::wire {

class JsonWriter;
class MsgpackWriter;

enum class DenseType : uint8_t { kFloat32, kFloat16, kInt8, kUint8, kBinary, kUbinary };

// "float32", "float16", "int8", "uint8", "binary", "ubinary".
std::string_view DenseTypeName(DenseType t);
// Those names; Cohere's "float" is float32.
bool ParseDenseType(std::string_view name, DenseType* t);

struct DenseOutput {
  uint32_t dimensions = 0;       // 0: the model's own
  std::vector<DenseType> types;  // empty: float32 alone
  // False when the worker's float32 vectors go out as they are.
  bool reshapes() const {
    return dimensions != 0 || (!types.empty() && !(types.size() == 1 && types[0] == DenseType::kFloat32));
  }
};

inline constexpr float kQuantizeLow = -1.0f;
inline constexpr float kQuantizeHigh = 1.0f;

// Cuts `v` to `dimensions` (0: keeps it whole), then scales it to unit
// length when `normalize`. INVALID_INPUT when the vector is shorter.
Status TruncateDense(uint32_t dimensions, bool normalize, std::vector<float>* v);

// The value a float16 holds nearest `x` (round to nearest, ties to even).
float RoundToHalf(float x);
// `v` as int8, uint8, binary or ubinary (see above); each element in that
// type's range.
std::vector<int32_t> QuantizeDense(const std::vector<float>& v, DenseType t);

// `v` in type `t`, as a JSON array or a MessagePack array (float32 and
// float16 as numbers, the rest as integers).
void WriteDenseJson(const std::vector<float>& v, DenseType t, JsonWriter* w);
void WriteDenseMsgpack(const std::vector<float>& v, DenseType t, MsgpackWriter* w);

}  // namespace shoal::wire
