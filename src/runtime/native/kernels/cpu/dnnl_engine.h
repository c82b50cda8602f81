// Internal to shoal_kernels: the one oneDNN CPU engine every primitive runs
// on, and what the Linear implementations (linear.cc, linear_int8.cc) share
// around it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace shoal::native::cpu {

inline dnnl::engine& CpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// A matmul primitive is specialized for its row count; rows run in at most
// two pieces — the largest multiple of this, then the rest — so the
// primitives a Linear keeps stay few (linear.cc says why).
inline constexpr size_t kLinearRowChunk = 256;

// Calls `piece(first_row, row_count)` for each of those (at most two) pieces.
template <class Piece>
void ForEachRowPiece(size_t rows, Piece&& piece) {
  const size_t main_rows = rows > kLinearRowChunk ? rows / kLinearRowChunk * kLinearRowChunk : rows;
  piece(size_t{0}, main_rows);
  if (main_rows < rows) piece(main_rows, rows - main_rows);
}

// A primitive's user scratchpad of `bytes` in `buffer` (grown to fit), as
// its argument; none when it needs none.
inline void AddScratchpad(std::unordered_map<int, dnnl::memory>& args, size_t bytes,
                          std::vector<uint8_t>& buffer) {
  if (bytes == 0) return;
  if (buffer.size() < bytes) buffer.resize(bytes);
  args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory({{static_cast<dnnl::memory::dim>(bytes)},
                                                  dnnl::memory::data_type::u8,
                                                  dnnl::memory::format_tag::a},
                                                 CpuEngine(), buffer.data()));
}

// A Linear's matmul primitives by key (row count, thread count, ...),
// built on first use. Thread-safe; bounded by `cap` (cleared past it: the
// keys a Linear makes are bounded by construction, the cap guards odd mixes).
template <class Key>
class MatmulCache {
 public:
  struct Entry {
    dnnl::matmul prim;
    size_t scratchpad_bytes;
  };
  explicit MatmulCache(size_t cap) : cap_(cap) {}

  std::shared_ptr<const Entry> Get(
      const Key& key, const std::function<dnnl::matmul::primitive_desc()>& make) const {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = entries_.find(key); it != entries_.end()) return it->second;
    }
    // Built outside the lock (JIT takes up to ~1 ms); a racing duplicate is
    // harmless, and oneDNN's own primitive cache shares identical ones.
    const auto pd = make();
    auto entry =
        std::make_shared<const Entry>(Entry{dnnl::matmul(pd), pd.scratchpad_desc().get_size()});
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.size() >= cap_) entries_.clear();
    entries_.emplace(key, entry);
    return entry;
  }

 private:
  const size_t cap_;
  mutable std::mutex mu_;  // guards entries_
  mutable std::map<Key, std::shared_ptr<const Entry>> entries_;
};

// `init()`, with what oneDNN (or an allocation) throws as INTERNAL.
inline Status CatchingDnnl(const std::function<Status()>& init) {
  try {
    return init();
  } catch (const dnnl::error& e) {
    return Internal(std::string("Linear: oneDNN matmul unavailable: ") + e.what());
  } catch (const std::exception& e) {
    return Internal(std::string("Linear: ") + e.what());
  }
}

}  // namespace shoal::native::cpu
