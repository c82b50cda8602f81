#include "wire/dense_output.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "wire/json_writer.h"
#include "wire/msgpack_writer.h"

namespace shoal::wire {
namespace {

constexpr struct {
  DenseType type;
  std::string_view name;
} kNames[] = {{DenseType::kFloat32, "float32"}, {DenseType::kFloat16, "float16"}, {DenseType::kInt8, "int8"},
              {DenseType::kUint8, "uint8"},     {DenseType::kBinary, "binary"},   {DenseType::kUbinary, "ubinary"}};

uint16_t FloatToHalfBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // 65520 and up round to infinity
  if (abs < 0x38800000u) {  // below 2^-14: a subnormal half (or zero), in units of 2^-24
    float a;
    std::memcpy(&a, &abs, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t h = ((((abs >> 23) - 127 + 15) << 10) | ((abs & 0x7FFFFFu) >> 13));
  const uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) ++h;  // a carry moves into the exponent, as it should
  return static_cast<uint16_t>(sign | h);
}

float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) / 16777216.0f;
    return sign ? -v : v;
  }
  const uint32_t bits = sign | (exp == 31 ? (0xFFu << 23) | (mant << 13) : ((exp - 15 + 127) << 23) | (mant << 13));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

std::string_view DenseTypeName(DenseType t) {
  for (const auto& n : kNames) {
    if (n.type == t) return n.name;
  }
  return "float32";
}

bool ParseDenseType(std::string_view name, DenseType* t) {
  if (name == "float") name = "float32";
  for (const auto& n : kNames) {
    if (n.name == name) {
      *t = n.type;
      return true;
    }
  }
  return false;
}

Status TruncateDense(uint32_t dimensions, bool normalize, std::vector<float>* v) {
  if (dimensions == 0) return Status::Ok();
  if (dimensions > v->size()) {
    return InvalidInput("dimensions: " + std::to_string(dimensions) + " is more than the model's " +
                        std::to_string(v->size()));
  }
  v->resize(dimensions);
  if (normalize) {
    double norm = 0;
    for (float x : *v) norm += static_cast<double>(x) * x;
    norm = std::sqrt(norm);
    if (norm > 0) {
      for (float& x : *v) x = static_cast<float>(x / norm);
    }
  }
  return Status::Ok();
}

float RoundToHalf(float x) { return HalfBitsToFloat(FloatToHalfBits(x)); }

std::vector<int32_t> QuantizeDense(const std::vector<float>& v, DenseType t) {
  std::vector<int32_t> out;
  if (t == DenseType::kBinary || t == DenseType::kUbinary) {
    out.assign((v.size() + 7) / 8, 0);
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] > 0) out[i / 8] |= 0x80 >> (i % 8);
    }
    if (t == DenseType::kBinary) {
      for (int32_t& b : out) b -= 128;
    }
    return out;
  }
  // In float32, as sentence-transformers computes it on float32 arrays (so
  // 1.0 is level 254.99998, bucket 254, there too).
  const float step = (kQuantizeHigh - kQuantizeLow) / 255.0f;
  out.reserve(v.size());
  for (float x : v) {
    const float level = std::min((std::clamp(x, kQuantizeLow, kQuantizeHigh) - kQuantizeLow) / step, 255.0f);
    // Truncation toward zero, as numpy's astype, after int8's shift (so
    // -64.25 is -64).
    out.push_back(static_cast<int32_t>(t == DenseType::kInt8 ? level - 128.0f : level));
  }
  return out;
}

void WriteDenseJson(const std::vector<float>& v, DenseType t, JsonWriter* w) {
  w->Char('[');
  if (t == DenseType::kFloat32 || t == DenseType::kFloat16) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (i) w->Char(',');
      w->Float(t == DenseType::kFloat16 ? RoundToHalf(v[i]) : v[i]);
    }
  } else {
    const std::vector<int32_t> q = QuantizeDense(v, t);
    for (size_t i = 0; i < q.size(); ++i) {
      if (i) w->Char(',');
      w->Int(q[i]);
    }
  }
  w->Char(']');
}

void WriteDenseMsgpack(const std::vector<float>& v, DenseType t, MsgpackWriter* w) {
  if (t == DenseType::kFloat32) return w->Float32Array(v.data(), v.size());
  if (t == DenseType::kFloat16) {
    w->ArrayHeader(static_cast<uint32_t>(v.size()));
    for (float x : v) w->Float32(RoundToHalf(x));
    return;
  }
  const std::vector<int32_t> q = QuantizeDense(v, t);
  w->ArrayHeader(static_cast<uint32_t>(q.size()));
  for (int32_t x : q) w->Int(x);
}

}  // namespace shoal::wire
