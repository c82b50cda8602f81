// KvBlocks: which KV-cache blocks each running sequence holds, and the
// prefix cache — the generation engine's bookkeeping over a model's block
// pool (runtime/generator.h owns the memory; this owns the ids).
//
// A sequence holds a block table: block i covers positions
// [i·B, (i+1)·B). Blocks are reference-counted. A block whose B positions
// are all computed can be *published* under a hash of the whole token prefix
// up to its end (a chain: the hash of block i covers blocks 0…i), so a later
// sequence whose tokens start the same way reuses it instead of recomputing
// it — vLLM's automatic prefix caching. Only full blocks are shared, and
// nobody writes into a full block, so sharing needs no copies. A published
// block nobody holds stays cached (evictable, least recently released
// first) until a fresh block is needed; the tokens it covers are kept and
// compared on a hit, so a hash collision can never serve another prompt's
// keys and values.
//
// Keys and values depend on the LoRA adapter a sequence runs under, so a
// prefix is published and found per adapter: the chain starts from a hash of
// the adapter's name (the base: none), and the name is compared on a hit too.
// A vision-language prompt's images stand behind placeholder tokens that are
// alike for every image, so the engine passes the adapter's name with the
// images' digest appended as the partition (Sequence::prefix_key).
//
// Threading: none; the engine's thread owns it.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace shoal::worker {

class KvBlocks {
 public:
  KvBlocks(uint32_t blocks, uint32_t block_tokens);

  uint32_t block_tokens() const { return block_tokens_; }
  uint32_t total() const { return static_cast<uint32_t>(refs_.size()); }
  // Blocks a sequence could get now: free ones plus cached ones nobody holds.
  uint32_t available() const { return static_cast<uint32_t>(free_.size() + evictable_.size()); }
  // Blocks needed to cover `positions` positions.
  uint32_t BlocksFor(uint32_t positions) const { return (positions + block_tokens_ - 1) / block_tokens_; }

  // For a sequence about to start with `tokens`: appends to `table` the
  // cached blocks of its longest published prefix — leaving at least one
  // token to compute, whose logits the sequence needs — and returns the
  // number of positions they cover.
  // `lora`: the partition the sequence's keys and values belong to — the
  // adapter it runs under ("" the base), with its images' digest if any.
  uint32_t AdoptPrefix(std::span<const int32_t> tokens, std::string_view lora, std::vector<int32_t>* table);
  uint32_t AdoptPrefix(std::span<const int32_t> tokens, std::vector<int32_t>* table) {
    return AdoptPrefix(tokens, {}, table);
  }

  // Grows `table` to cover `positions`; false (and `table` unchanged) when
  // there are not enough blocks.
  bool Grow(std::vector<int32_t>* table, uint32_t positions);

  // Publishes the full blocks of `table` whose positions are all computed
  // (`computed` of them, holding `tokens`) from block `*published` on, and
  // advances `*published`.
  void Publish(std::span<const int32_t> tokens, std::string_view lora, uint32_t computed,
               std::span<const int32_t> table, uint32_t* published);
  void Publish(std::span<const int32_t> tokens, uint32_t computed, std::span<const int32_t> table,
               uint32_t* published) {
    Publish(tokens, {}, computed, table, published);
  }

  // Drops the sequence's hold on its blocks and empties `table`.
  void Release(std::vector<int32_t>* table);

  struct Counters {
    uint64_t hits = 0;     // blocks adopted from the prefix cache
    uint64_t lookups = 0;  // full prompt blocks looked up
  };
  const Counters& counters() const { return counters_; }

 private:
  struct Cached {
    uint64_t hash;
    std::vector<int32_t> tokens;  // the whole prefix up to the block's end
    std::string lora;             // the adapter its keys and values were computed under
    std::list<int32_t>::iterator lru;  // in evictable_ when nobody holds it
    bool evictable = false;
  };
  int32_t TakeBlock();  // -1 when none
  static uint64_t ChainHash(uint64_t prev, std::span<const int32_t> block);
  static uint64_t ChainStart(std::string_view lora);  // 0 for the base

  const uint32_t block_tokens_;
  std::vector<uint32_t> refs_;       // per block
  std::vector<int32_t> free_;        // unpublished, unheld
  std::list<int32_t> evictable_;     // published, unheld; front = released longest ago
  std::unordered_map<int32_t, Cached> cached_;  // published blocks by id
  std::unordered_map<uint64_t, int32_t> by_hash_;
  Counters counters_;
};

}  // namespace shoal::worker
