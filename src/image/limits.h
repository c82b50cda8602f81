// ImageLimits: the bounds every image is held to before it is decoded.
//
// A decompression bomb is a small file that says it is huge: a PNG of a few
// kilobytes can declare 100,000 × 100,000 pixels (30 GB of RGB). The header
// (image/header.h) is read first and checked here; nothing is allocated for
// pixels until it passes, so a worker's memory per decode is bounded by
// max_pixels × 3 bytes. The aspect-ratio bound refuses degenerate images
// (1 × 100,000) that no resize to a model's square input can use.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "image/header.h"

namespace shoal::image {

struct ImageLimits {
  size_t max_bytes = 32u << 20;        // the encoded image
  uint64_t max_pixels = 50'000'000;    // width × height, decoded (150 MB of RGB)
  double max_aspect_ratio = 200.0;     // the longer side over the shorter
};

// OK, or INVALID_INPUT saying which bound the image passes and by how much.
Status CheckImageLimits(const ImageHeader& header, size_t encoded_bytes, const ImageLimits& limits);

}  // namespace shoal::image
