// A PyTorch state dict as `torch.save` writes it (the zip format of
// PyTorch 1.6 and later): `<archive>/data.pkl`, a pickle of an OrderedDict
// of tensors whose storages are the entries `<archive>/data/<key>`. Read for
// the small head files some checkpoints ship beside their safetensors
// (bge-m3's colbert_linear.pt and sparse_linear.pt).
//
// The pickle is not run: a small reader takes the opcodes a state dict of
// tensors uses and builds only OrderedDicts, tuples, lists, strings,
// numbers and tensors (torch._utils._rebuild_tensor_v2 / _rebuild_parameter
// over float32, float16 or bfloat16 storages); any other global or opcode is
// refused, so a file cannot make it call anything. Zip entries must be
// stored (torch.save does not compress), and tensors contiguous.
//
// Threading: functions only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::native {

struct TorchTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;  // converted to float32, row-major
};

// The file's tensors by name. INVALID_INPUT naming the file and what is
// wrong with it (not a zip, an unsupported opcode or global, a storage out
// of range, ...).
Result<std::map<std::string, TorchTensor>> ReadTorchStateDict(const std::string& path);

// The same from the file's bytes (`what` names them in errors).
Result<std::map<std::string, TorchTensor>> ParseTorchStateDict(std::string_view bytes, const std::string& what);

}  // namespace shoal::native
