#include "runtime/native/loaders/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/native/kernels/cpu/kernels.h"

namespace shoal::native {
namespace {

// A header larger than this is not a weights file (real ones are < 1 MB).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

struct DTypeInfo {
  const char* name;
  DType dtype;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {"F32", DType::kF32, 4}, {"F16", DType::kF16, 2},   {"BF16", DType::kBF16, 2},
    {"F64", DType::kF64, 8}, {"I64", DType::kI64, 8},   {"I32", DType::kI32, 4},
    {"I16", DType::kI16, 2}, {"I8", DType::kI8, 1},     {"U8", DType::kU8, 1},
    {"BOOL", DType::kBool, 1},
};

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

std::string_view DTypeName(DType d) {
  for (const auto& t : kDTypes) {
    if (t.dtype == d) return t.name;
  }
  return "?";
}

size_t DTypeSize(DType d) {
  for (const auto& t : kDTypes) {
    if (t.dtype == d) return t.size;
  }
  return 0;
}

int64_t TensorView::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

struct SafeTensors::Mapping {
  void* addr = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (addr != MAP_FAILED) munmap(addr, size);
  }
};

SafeTensors::~SafeTensors() = default;

Result<std::unique_ptr<SafeTensors>> SafeTensors::OpenFile(const std::string& path) {
  std::unique_ptr<SafeTensors> st(new SafeTensors());
  SHOAL_RETURN_IF_ERROR(st->AddFile(path));
  return st;
}

Result<std::unique_ptr<SafeTensors>> SafeTensors::OpenDir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::unique_ptr<SafeTensors> st(new SafeTensors());
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(single, ec)) {
    SHOAL_RETURN_IF_ERROR(st->AddFile(single.string()));
    return st;
  }
  if (!fs::exists(index, ec)) {
    return InvalidInput(dir + ": no model.safetensors or model.safetensors.index.json");
  }
  std::set<std::string> shards;
  try {
    std::ifstream in(index);
    auto j = nlohmann::json::parse(in);
    for (const auto& [name, file] : j.at("weight_map").items()) shards.insert(file.get<std::string>());
  } catch (const std::exception& e) {
    return InvalidInput(index.string() + ": " + e.what());
  }
  for (const auto& shard : shards) {
    if (shard.find('/') != std::string::npos) return InvalidInput(index.string() + ": shard '" + shard + "' is not a file name");
    SHOAL_RETURN_IF_ERROR(st->AddFile((fs::path(dir) / shard).string()));
  }
  return st;
}

Status SafeTensors::AddFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InvalidInput(path + ": " + std::strerror(errno));
  struct stat sb {};
  if (fstat(fd, &sb) != 0) {
    close(fd);
    return InvalidInput(path + ": " + std::strerror(errno));
  }
  auto m = std::make_unique<Mapping>();
  m->size = static_cast<size_t>(sb.st_size);
  if (m->size < 8) {
    close(fd);
    return InvalidInput(path + ": too short for a safetensors file");
  }
  m->addr = mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);  // the mapping keeps the file
  if (m->addr == MAP_FAILED) return InvalidInput(path + ": mmap: " + std::strerror(errno));
  SHOAL_RETURN_IF_ERROR(AddBytes(path, static_cast<const std::byte*>(m->addr), m->size));
  files_.push_back(std::move(m));
  return Status::Ok();
}

Result<std::unique_ptr<SafeTensors>> SafeTensors::FromBytes(std::string_view bytes) {
  std::unique_ptr<SafeTensors> st(new SafeTensors());
  SHOAL_RETURN_IF_ERROR(st->AddBytes("safetensors", reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
  return st;
}

Status SafeTensors::AddBytes(const std::string& path, const std::byte* base, size_t size) {
  if (size < 8) return InvalidInput(path + ": too short for a safetensors file");
  uint64_t header_len = 0;
  std::memcpy(&header_len, base, 8);  // little-endian, as x86 is
  if (header_len > kMaxHeaderBytes || 8 + header_len > size) {
    return InvalidInput(path + ": header length " + std::to_string(header_len) +
                        " does not fit the file (" + std::to_string(size) + " bytes)");
  }
  const std::byte* data = base + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(std::string_view(reinterpret_cast<const char*>(base + 8), header_len));
  } catch (const std::exception& e) {
    return InvalidInput(path + ": header is not JSON: " + e.what());
  }
  if (!header.is_object()) return InvalidInput(path + ": header is not a JSON object");

  std::vector<std::pair<uint64_t, uint64_t>> extents;
  for (const auto& item : header.items()) {
    // Not a structured binding: clang before 16 (the fuzz build) cannot
    // capture one in the lambda below.
    const std::string& name = item.key();
    const nlohmann::json& info = item.value();
    if (name == "__metadata__") continue;
    auto bad = [&](const std::string& what) { return InvalidInput(path + ": tensor '" + name + "': " + what); };
    if (!info.is_object()) return bad("expected an object");
    auto dt = info.find("dtype");
    auto shape = info.find("shape");
    auto offsets = info.find("data_offsets");
    if (dt == info.end() || !dt->is_string()) return bad("no dtype");
    if (shape == info.end() || !shape->is_array()) return bad("no shape");
    if (offsets == info.end() || !offsets->is_array() || offsets->size() != 2) return bad("no data_offsets");
    TensorView v;
    const DTypeInfo* ti = nullptr;
    for (const auto& t : kDTypes) {
      if (*dt == t.name) ti = &t;
    }
    if (!ti) return bad("dtype " + dt->get<std::string>() + " is not supported");
    v.dtype = ti->dtype;
    // Checked: a shape whose element count (or byte count) overflows would
    // wrap to a size that matches small data_offsets.
    uint64_t elements = 1;
    for (const auto& d : *shape) {
      if (!d.is_number_unsigned()) return bad("shape must hold non-negative integers");
      const uint64_t n = d.get<uint64_t>();
      if (n > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(elements, n, &elements) ||
          elements > static_cast<uint64_t>(INT64_MAX) / ti->size) {
        return bad("shape " + info.at("shape").dump() + " is too large");
      }
      v.shape.push_back(static_cast<int64_t>(n));
    }
    if (!(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) return bad("bad data_offsets");
    const uint64_t begin = (*offsets)[0].get<uint64_t>(), end = (*offsets)[1].get<uint64_t>();
    if (begin > end || end > data_size) {
      return bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                 ") outside the data (" + std::to_string(data_size) + " bytes; truncated file?)");
    }
    if (end - begin != elements * ti->size) {
      return bad("shape " + ShapeString(v.shape) + " of " + ti->name + " needs " +
                 std::to_string(elements * ti->size) + " bytes, data_offsets give " + std::to_string(end - begin));
    }
    v.data = data + begin;
    v.bytes = end - begin;
    extents.emplace_back(begin, end);
    auto [it, inserted] = tensors_.emplace(name, std::move(v));
    if (!inserted) return bad("appears in two files");
    it->second.name = it->first;
  }
  std::sort(extents.begin(), extents.end());
  for (size_t i = 1; i < extents.size(); ++i) {
    if (extents[i].first < extents[i - 1].second) return InvalidInput(path + ": tensors overlap");
  }
  return Status::Ok();
}

const TensorView* SafeTensors::Find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<std::string_view> SafeTensors::names() const {
  std::vector<std::string_view> out;
  for (const auto& [name, v] : tensors_) out.push_back(name);
  return out;
}

size_t SafeTensors::mapped_bytes() const {
  size_t n = 0;
  for (const auto& f : files_) n += f->size;
  return n;
}

Result<const float*> SafeTensors::F32(std::string_view name, std::vector<int64_t> expected_shape,
                                      std::vector<float>* storage) const {
  const TensorView* v = Find(name);
  if (!v) return InvalidInput("weights: no tensor '" + std::string(name) + "'");
  if (v->shape != expected_shape) {
    return InvalidInput("weights: tensor '" + std::string(name) + "' has shape " + ShapeString(v->shape) +
                        ", the config implies " + ShapeString(expected_shape));
  }
  const size_t n = static_cast<size_t>(v->elements());
  switch (v->dtype) {
    case DType::kF32:
      if (reinterpret_cast<uintptr_t>(v->data) % alignof(float) == 0) {
        return reinterpret_cast<const float*>(v->data);
      }
      storage->resize(n);
      std::memcpy(storage->data(), v->data, n * sizeof(float));
      return static_cast<const float*>(storage->data());
    case DType::kBF16:
    case DType::kF16: {
      storage->resize(n);
      std::vector<uint16_t> raw(n);  // the mapping may be unaligned for uint16
      std::memcpy(raw.data(), v->data, n * 2);
      if (v->dtype == DType::kBF16) {
        cpu::Bf16ToF32(raw.data(), storage->data(), n);
      } else {
        cpu::F16ToF32(raw.data(), storage->data(), n);
      }
      return static_cast<const float*>(storage->data());
    }
    default:
      return InvalidInput("weights: tensor '" + std::string(name) + "' is " + std::string(DTypeName(v->dtype)) +
                          "; expected F32, F16 or BF16");
  }
}

}  // namespace shoal::native
