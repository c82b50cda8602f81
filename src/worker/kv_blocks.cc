#include "worker/kv_blocks.h"

#include <algorithm>

namespace shoal::worker {

KvBlocks::KvBlocks(uint32_t blocks, uint32_t block_tokens)
    : block_tokens_(block_tokens == 0 ? 1 : block_tokens), refs_(blocks, 0) {
  free_.reserve(blocks);
  for (uint32_t b = blocks; b-- > 0;) free_.push_back(static_cast<int32_t>(b));  // 0 is taken first
}

uint64_t KvBlocks::ChainHash(uint64_t prev, std::span<const int32_t> block) {
  // FNV-1a over the previous hash and the block's tokens.
  uint64_t h = 1469598103934665603ull ^ prev;
  for (int32_t t : block) {
    for (int i = 0; i < 4; ++i) {
      h ^= static_cast<uint8_t>(static_cast<uint32_t>(t) >> (8 * i));
      h *= 1099511628211ull;
    }
  }
  return h;
}

uint64_t KvBlocks::ChainStart(std::string_view lora) {
  if (lora.empty()) return 0;
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : lora) h = (h ^ c) * 1099511628211ull;
  return h | 1;  // never the base's 0
}

uint32_t KvBlocks::AdoptPrefix(std::span<const int32_t> tokens, std::string_view lora,
                               std::vector<int32_t>* table) {
  if (tokens.empty()) return 0;
  const size_t usable = (tokens.size() - 1) / block_tokens_;  // keep one token to compute
  uint64_t hash = ChainStart(lora);
  uint32_t adopted = 0;
  for (size_t i = 0; i < usable; ++i) {
    ++counters_.lookups;
    const auto end = (i + 1) * block_tokens_;
    hash = ChainHash(hash, tokens.subspan(i * block_tokens_, block_tokens_));
    auto it = by_hash_.find(hash);
    if (it == by_hash_.end()) break;
    Cached& c = cached_.at(it->second);
    if (c.lora != lora || !std::equal(c.tokens.begin(), c.tokens.end(), tokens.begin(), tokens.begin() + end)) {
      break;
    }
    if (c.evictable) {
      evictable_.erase(c.lru);
      c.evictable = false;
    }
    ++refs_[it->second];
    table->push_back(it->second);
    ++counters_.hits;
    adopted += block_tokens_;
  }
  return adopted;
}

int32_t KvBlocks::TakeBlock() {
  if (!free_.empty()) {
    const int32_t b = free_.back();
    free_.pop_back();
    return b;
  }
  if (evictable_.empty()) return -1;
  const int32_t b = evictable_.front();  // the cached block unused longest
  evictable_.pop_front();
  by_hash_.erase(cached_.at(b).hash);
  cached_.erase(b);
  return b;
}

bool KvBlocks::Grow(std::vector<int32_t>* table, uint32_t positions) {
  const uint32_t need = BlocksFor(positions);
  if (need <= table->size()) return true;
  if (need - table->size() > available()) return false;
  while (table->size() < need) {
    const int32_t b = TakeBlock();
    refs_[b] = 1;
    table->push_back(b);
  }
  return true;
}

void KvBlocks::Publish(std::span<const int32_t> tokens, std::string_view lora, uint32_t computed,
                       std::span<const int32_t> table, uint32_t* published) {
  const uint32_t full = std::min<uint32_t>(computed / block_tokens_, static_cast<uint32_t>(table.size()));
  for (uint32_t i = *published; i < full; ++i) {
    const int32_t b = table[i];
    if (cached_.count(b)) continue;  // adopted: already published
    // The chain hash needs the previous block's; recompute from the start
    // (a few hundred tokens at most per publish, once per block).
    uint64_t hash = ChainStart(lora);
    for (uint32_t k = 0; k <= i; ++k) hash = ChainHash(hash, tokens.subspan(k * block_tokens_, block_tokens_));
    if (by_hash_.count(hash)) continue;  // another sequence published the same prefix
    Cached c;
    c.hash = hash;
    c.tokens.assign(tokens.begin(), tokens.begin() + (i + 1) * block_tokens_);
    c.lora = std::string(lora);
    cached_.emplace(b, std::move(c));
    by_hash_.emplace(hash, b);
  }
  *published = std::max(*published, full);
}

void KvBlocks::Release(std::vector<int32_t>* table) {
  // Last block first: a prefix's tail is evicted before its head, which
  // other prompts are likelier to share.
  for (auto it = table->rbegin(); it != table->rend(); ++it) {
    const int32_t b = *it;
    if (--refs_[b] > 0) continue;
    auto c = cached_.find(b);
    if (c == cached_.end()) {
      free_.push_back(b);
    } else {
      c->second.lru = evictable_.insert(evictable_.end(), b);
      c->second.evictable = true;
    }
  }
  table->clear();
}

}  // namespace shoal::worker
