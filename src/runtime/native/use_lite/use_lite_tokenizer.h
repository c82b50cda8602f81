// The USE-Lite tokenizer: text → token ids exactly as the JS reference
// (`@energetic-ai/embeddings` 0.2.0, `Tokenizer.encode`) computes them, from the
// package's `vocab.json`. SentencePiece-unigram-like, but with the JS quirks
// that change ids kept on purpose; /work/shared/notes/use-lite-forward.md §1
// is the spec and the comments in the .cc cite its steps.
//
// Threading: immutable after Load/Parse; Encode may run on any number of
// threads at once (all its state is local).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace shoal::native {

class UseLiteTokenizer {
 public:
  // Ids 0..5 (`�`, `<s>`, `</s>`, `extra_token_id_1..3`) are never matched;
  // id 0 is the unknown token.
  static constexpr int32_t kUnknownId = 0;
  static constexpr int32_t kReservedIds = 6;

  static Result<std::unique_ptr<UseLiteTokenizer>> Load(const std::string& vocab_json_path);
  // `vocab_json`: an array of [piece, score] pairs; the index is the id.
  static Result<std::unique_ptr<UseLiteTokenizer>> Parse(std::string_view vocab_json);

  // All ids, no truncation, no BOS/EOS. Invalid UTF-8 is read as U+FFFD per
  // bad sequence first (what a JS caller's TextDecoder would have produced).
  std::vector<int32_t> Encode(std::string_view text) const;

  // The vocabulary's piece for `id` ("" when out of range).
  std::string_view Piece(int32_t id) const;
  size_t vocab_size() const { return pieces_.size(); }
  size_t memory_bytes() const;

 private:
  // A trie over code points. Node 0 is the root; children live in one hash
  // map keyed by (node, code point) so the 8,000 pieces cost a few hundred KiB.
  struct Node {
    int32_t id = -1;  // the piece that ends here, -1 if none
    double score = 0;
  };
  // One lattice arc found by the prefix walk.
  struct Arc {
    uint32_t length;  // in code points
    int32_t id;
    double score;
  };

  UseLiteTokenizer() = default;
  void Insert(const std::u32string& piece, int32_t id, double score);
  int32_t Child(int32_t node, char32_t c) const;
  // The pieces that start at `cps[start]`, shortest first (the JS
  // commonPrefixSearch), or the 1-code-point unknown arc when there is none.
  void Arcs(const std::u32string& cps, size_t start, std::vector<Arc>& out) const;

  std::vector<std::string> pieces_;  // by id, UTF-8
  std::vector<Node> nodes_{Node{}};
  std::unordered_map<uint64_t, int32_t> children_;
  std::vector<uint32_t> utf16_length_;  // by id: JS `piece.length`, the backtrack step
};

}  // namespace shoal::native
