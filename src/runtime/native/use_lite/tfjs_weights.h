// TF.js weights: the `weightsManifest` of a TF.js `model.json` and the shard
// files it names, read into one buffer and looked up by tensor name.
//
// Format (TF.js "weights manifest"): a list of groups; each group names its
// shard files (`paths`) and its tensors (`weights`: name, shape, dtype). A
// group's shards are consecutive slices of ONE byte buffer, and its tensors
// lie back to back in that buffer in manifest order, little-endian,
// row-major; a tensor may straddle a shard border, so the shards are
// concatenated before anything is cut out of them. Quantized and string
// tensors are not supported (no Shoal asset has them) and fail the load.
//
// Threading: a loaded TfjsWeights is immutable; lookups may run on any number
// of threads at once. Loading is a plain blocking read of the files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace shoal::native {

enum class TfjsDtype { kFloat32, kInt32, kBool };

std::string_view TfjsDtypeName(TfjsDtype dtype);

struct TfjsTensor {
  std::string name;
  TfjsDtype dtype = TfjsDtype::kFloat32;
  std::vector<int64_t> shape;
  size_t offset = 0;  // bytes into the concatenated buffer (all groups, in order)
  size_t bytes = 0;
};

class TfjsWeights {
 public:
  // Reads `model_json_path` and the shards it names (paths relative to the
  // file's directory). Errors (MODEL_LOAD_FAILED) name the file or tensor at
  // fault: a missing or unreadable file, bad JSON or manifest, an unknown
  // dtype, shards shorter (or longer) than their tensors need.
  static Result<std::unique_ptr<TfjsWeights>> Load(const std::string& model_json_path);

  // The same from a model.json already in memory; shard paths are relative to
  // `shard_dir`.
  static Result<std::unique_ptr<TfjsWeights>> Parse(std::string_view model_json,
                                                    const std::string& shard_dir);

  // nullptr when there is no tensor of that name.
  const TfjsTensor* Find(std::string_view name) const;

  // The tensor's data, checked: it exists, has this dtype and exactly this
  // shape. The span stays valid as long as this object.
  Result<std::span<const float>> Float32(std::string_view name,
                                         const std::vector<int64_t>& shape) const;
  Result<std::span<const int32_t>> Int32(std::string_view name,
                                         const std::vector<int64_t>& shape) const;

  const std::vector<TfjsTensor>& tensors() const { return tensors_; }
  size_t size_bytes() const { return size_; }

 private:
  struct AlignedFree {
    void operator()(std::byte* p) const;
  };

  TfjsWeights() = default;
  Result<const TfjsTensor*> Check(std::string_view name, TfjsDtype dtype,
                                  const std::vector<int64_t>& shape) const;

  std::vector<TfjsTensor> tensors_;
  std::unordered_map<std::string_view, size_t> by_name_;  // views into tensors_[i].name
  std::unique_ptr<std::byte[], AlignedFree> data_;        // 64-byte aligned
  size_t size_ = 0;
};

}  // namespace shoal::native
