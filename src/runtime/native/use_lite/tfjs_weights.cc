// TF.js weights manifest + shards → one buffer (see tfjs_weights.h).
#include "runtime/native/use_lite/tfjs_weights.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <nlohmann/json.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/file.h"

namespace shoal::native {
namespace {

constexpr std::align_val_t kAlign{64};

Status WeightsError(std::string message) {
  return Status(Code::kModelLoadFailed, "tfjs weights: " + std::move(message));
}

// Reads a whole file; `what` names it in errors.
Result<std::string> ReadText(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return WeightsError(text.status().message());
  return text;
}

// Appends the whole of `path` at `dst` (room for at most `room` bytes); returns
// the byte count, which may exceed `room` (the caller reports it) but never
// writes past it.
Result<size_t> ReadShard(const std::string& path, std::byte* dst, size_t room) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return WeightsError(fmt::format("cannot open shard {}: {}", path, std::strerror(errno)));
  size_t total = 0;
  size_t n = 0;
  while (total < room && (n = std::fread(dst + total, 1, room - total, f)) > 0) total += n;
  // Anything beyond `room` is only counted.
  char sink[4096];
  while ((n = std::fread(sink, 1, sizeof sink, f)) > 0) total += n;
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return WeightsError(fmt::format("cannot read shard {}", path));
  return total;
}

Result<TfjsDtype> ParseDtype(const std::string& name, const std::string& tensor) {
  if (name == "float32") return TfjsDtype::kFloat32;
  if (name == "int32") return TfjsDtype::kInt32;
  if (name == "bool") return TfjsDtype::kBool;
  return WeightsError(
      fmt::format("tensor '{}': unsupported dtype '{}' (float32, int32, bool)", tensor, name));
}

size_t ElementBytes(TfjsDtype dtype) { return dtype == TfjsDtype::kBool ? 1 : 4; }

// One manifest group, validated, before any byte is read.
struct Group {
  std::vector<std::string> paths;
  size_t bytes = 0;  // what its tensors need
};

}  // namespace

std::string_view TfjsDtypeName(TfjsDtype dtype) {
  switch (dtype) {
    case TfjsDtype::kFloat32:
      return "float32";
    case TfjsDtype::kInt32:
      return "int32";
    case TfjsDtype::kBool:
      return "bool";
  }
  return "?";
}

void TfjsWeights::AlignedFree::operator()(std::byte* p) const { ::operator delete[](p, kAlign); }

Result<std::unique_ptr<TfjsWeights>> TfjsWeights::Load(const std::string& model_json_path) {
  Result<std::string> text = ReadText(model_json_path);
  if (!text.ok()) return text.status();
  std::string dir = std::filesystem::path(model_json_path).parent_path().string();
  if (dir.empty()) dir = ".";
  return Parse(*text, dir);
}

Result<std::unique_ptr<TfjsWeights>> TfjsWeights::Parse(std::string_view model_json,
                                                        const std::string& shard_dir) {
  std::unique_ptr<TfjsWeights> w(new TfjsWeights());
  std::vector<Group> groups;

  // The JSON library throws; nothing of it escapes this block.
  try {
    nlohmann::json doc = nlohmann::json::parse(model_json);
    if (!doc.is_object() || !doc.contains("weightsManifest") || !doc["weightsManifest"].is_array())
      return WeightsError("model.json has no weightsManifest array");
    size_t offset = 0;
    for (const nlohmann::json& g : doc["weightsManifest"]) {
      if (!g.is_object() || !g.contains("paths") || !g["paths"].is_array() ||
          !g.contains("weights") || !g["weights"].is_array())
        return WeightsError("a weightsManifest group lacks its paths or weights array");
      Group group;
      for (const nlohmann::json& p : g["paths"]) {
        if (!p.is_string()) return WeightsError("a shard path is not a string");
        group.paths.push_back(p.get<std::string>());
      }
      for (const nlohmann::json& t : g["weights"]) {
        if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
          return WeightsError("a weights entry has no name");
        TfjsTensor tensor;
        tensor.name = t["name"].get<std::string>();
        if (!t.contains("dtype") || !t["dtype"].is_string())
          return WeightsError(fmt::format("tensor '{}': no dtype", tensor.name));
        Result<TfjsDtype> dtype = ParseDtype(t["dtype"].get<std::string>(), tensor.name);
        if (!dtype.ok()) return dtype.status();
        tensor.dtype = *dtype;
        if (t.contains("quantization"))
          return WeightsError(
              fmt::format("tensor '{}': quantized weights are not supported", tensor.name));
        if (!t.contains("shape") || !t["shape"].is_array())
          return WeightsError(fmt::format("tensor '{}': no shape", tensor.name));
        size_t elements = 1;
        for (const nlohmann::json& d : t["shape"]) {
          if (!d.is_number_integer() || d.get<int64_t>() < 0)
            return WeightsError(
                fmt::format("tensor '{}': bad shape {}", tensor.name, t["shape"].dump()));
          tensor.shape.push_back(d.get<int64_t>());
          if (__builtin_mul_overflow(elements, static_cast<size_t>(d.get<int64_t>()), &elements))
            return WeightsError(fmt::format("tensor '{}': shape too large", tensor.name));
        }
        if (__builtin_mul_overflow(elements, ElementBytes(tensor.dtype), &tensor.bytes) ||
            __builtin_add_overflow(offset, tensor.bytes, &offset))
          return WeightsError(fmt::format("tensor '{}': shape too large", tensor.name));
        tensor.offset = offset - tensor.bytes;
        group.bytes += tensor.bytes;
        w->tensors_.push_back(std::move(tensor));
      }
      if (group.paths.empty() && group.bytes > 0)
        return WeightsError("a weightsManifest group has tensors but no shard paths");
      groups.push_back(std::move(group));
    }
    w->size_ = offset;
  } catch (const nlohmann::json::exception& e) {
    return WeightsError(fmt::format("model.json: {}", e.what()));
  }

  for (size_t i = 0; i < w->tensors_.size(); ++i) {
    if (!w->by_name_.emplace(w->tensors_[i].name, i).second)
      return WeightsError(
          fmt::format("tensor '{}' appears twice in the manifest", w->tensors_[i].name));
  }

  // Read every group's shards back to back into one buffer: a tensor may
  // straddle a shard border (USE-Lite's do: the shards are 4 MiB slices).
  w->data_.reset(static_cast<std::byte*>(::operator new[](std::max<size_t>(w->size_, 1), kAlign)));
  size_t group_start = 0;
  for (const Group& group : groups) {
    size_t filled = 0;
    for (const std::string& path : group.paths) {
      std::string full = (std::filesystem::path(shard_dir) / path).string();
      size_t room = group.bytes > filled ? group.bytes - filled : 0;
      Result<size_t> n = ReadShard(full, w->data_.get() + group_start + filled, room);
      if (!n.ok()) return n.status();
      filled += *n;
    }
    if (filled != group.bytes) {
      return WeightsError(fmt::format(
          "shards [{}] hold {} bytes but their tensors need {} ({})", fmt::join(group.paths, ", "),
          filled, group.bytes, filled < group.bytes ? "a shard is short" : "a shard is too long"));
    }
    group_start += group.bytes;
  }
  return w;
}

const TfjsTensor* TfjsWeights::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

Result<const TfjsTensor*> TfjsWeights::Check(std::string_view name, TfjsDtype dtype,
                                             const std::vector<int64_t>& shape) const {
  const TfjsTensor* t = Find(name);
  if (t == nullptr) return WeightsError(fmt::format("no tensor named '{}'", name));
  if (t->dtype != dtype)
    return WeightsError(fmt::format("tensor '{}' is {}, expected {}", name, TfjsDtypeName(t->dtype),
                                 TfjsDtypeName(dtype)));
  if (t->shape != shape)
    return WeightsError(fmt::format("tensor '{}' has shape [{}], expected [{}]", name,
                                 fmt::join(t->shape, ","), fmt::join(shape, ",")));
  // Tensors lie back to back; a 4-byte tensor after a bool one could be
  // misaligned. No Shoal asset is, so refuse rather than copy.
  if (t->offset % ElementBytes(dtype) != 0)
    return WeightsError(fmt::format("tensor '{}' is misaligned in the weights buffer", name));
  return t;
}

Result<std::span<const float>> TfjsWeights::Float32(std::string_view name,
                                                    const std::vector<int64_t>& shape) const {
  Result<const TfjsTensor*> t = Check(name, TfjsDtype::kFloat32, shape);
  if (!t.ok()) return t.status();
  const auto* p = reinterpret_cast<const float*>(data_.get() + (*t)->offset);
  return std::span<const float>(p, (*t)->bytes / sizeof(float));
}

Result<std::span<const int32_t>> TfjsWeights::Int32(std::string_view name,
                                                    const std::vector<int64_t>& shape) const {
  Result<const TfjsTensor*> t = Check(name, TfjsDtype::kInt32, shape);
  if (!t.ok()) return t.status();
  const auto* p = reinterpret_cast<const int32_t*>(data_.get() + (*t)->offset);
  return std::span<const int32_t>(p, (*t)->bytes / sizeof(int32_t));
}

}  // namespace shoal::native
