// SafeTensors: the weights of a Hugging Face model directory, memory-mapped.
//
// Format (huggingface/safetensors): an 8-byte little-endian header length N,
// N bytes of JSON {name: {"dtype", "shape", "data_offsets": [begin, end]},
// "__metadata__": {...}}, then the tensor bytes, offsets relative to the end
// of the header. A directory holds `model.safetensors`, or shards listed by
// `model.safetensors.index.json`.
//
// The header is checked in full when a file opens (dtype known, sizes agree
// with shapes, offsets inside the file, tensors not overlapping), so a
// truncated or corrupt file is an error at load, not a crash at run time.
// Tensor bytes are never copied here: views point into the mapping, and
// f32 tensors can be used in place (zero-copy); f16/bf16 are converted by
// the caller that needs f32.
//
// Threading: immutable after Open; views stay valid while the object lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::native {

enum class DType { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool };
std::string_view DTypeName(DType d);
size_t DTypeSize(DType d);

struct TensorView {
  std::string_view name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const std::byte* data = nullptr;
  size_t bytes = 0;

  int64_t elements() const;
};

class SafeTensors {
 public:
  // One .safetensors file.
  static Result<std::unique_ptr<SafeTensors>> OpenFile(const std::string& path);
  // A model directory: model.safetensors, or the shards its index lists.
  static Result<std::unique_ptr<SafeTensors>> OpenDir(const std::string& dir);
  // A whole safetensors file already in memory (tests, fuzzing): the tensors
  // are views into `bytes`, which must outlive the result.
  static Result<std::unique_ptr<SafeTensors>> FromBytes(std::string_view bytes);
  ~SafeTensors();
  SafeTensors(const SafeTensors&) = delete;
  SafeTensors& operator=(const SafeTensors&) = delete;

  const TensorView* Find(std::string_view name) const;
  std::vector<std::string_view> names() const;
  size_t mapped_bytes() const;

  // The tensor `name` as f32, with the shape checked: a view into the
  // mapping when it is stored as f32, else converted into `storage`.
  Result<const float*> F32(std::string_view name, std::vector<int64_t> expected_shape,
                           std::vector<float>* storage) const;

 private:
  struct Mapping;
  SafeTensors() = default;
  Status AddFile(const std::string& path);
  // Parses the header of the file in [base, base + size) (named `path` in
  // errors) and adds its tensors.
  Status AddBytes(const std::string& path, const std::byte* base, size_t size);

  std::vector<std::unique_ptr<Mapping>> files_;
  std::map<std::string, TensorView, std::less<>> tensors_;
};

}  // namespace shoal::native
