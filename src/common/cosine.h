// The cosine of two vectors, summed in double: what the probe comparison,
// the evaluations and the shadow comparison each measure embeddings by.
#pragma once

#include <cmath>
#include <span>

namespace shoal {

// 0 when the lengths differ or either vector is zero.
inline double Cosine(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return 0;
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double{a[i]} * b[i];
    na += double{a[i]} * a[i];
    nb += double{b[i]} * b[i];
  }
  return na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 0;
}

}  // namespace shoal
