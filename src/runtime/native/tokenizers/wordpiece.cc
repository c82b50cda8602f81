// WordPiece (BERT): greedy longest-match-first over each word; pieces after
// the first carry continuing_subword_prefix ("##"). A word with a character no
// piece covers, or longer than max_input_chars_per_word characters, becomes
// one unk token.
//
// Threading: immutable after ParseWordPiece; scratch is thread_local.
#include <algorithm>

#include "runtime/native/tokenizers/model.h"
#include "runtime/native/tokenizers/unicode.h"
#include "runtime/native/tokenizers/vocab.h"

namespace shoal::native::tok {
namespace {

class WordPieceModel final : public Model {
 public:
  void Tokenize(std::string_view word, std::vector<ModelToken>& out) const override {
    const auto n = static_cast<uint32_t>(word.size());
    size_t chars = 0;
    for (uint32_t i = 0; i < n;
         i += static_cast<uint32_t>(Utf8Length(static_cast<unsigned char>(word[i])))) {
      ++chars;
    }
    if (chars > max_chars_) {
      out.push_back({unk_id_, 0, n});
      return;
    }
    const size_t first = out.size();
    thread_local std::string key;
    uint32_t start = 0;
    while (start < n) {
      // Longest piece first; no piece is longer than the longest token.
      uint32_t end = std::min<uint32_t>(n, start + static_cast<uint32_t>(max_token_bytes_));
      std::optional<int32_t> found;
      while (end > start) {
        // Only character boundaries can end a piece.
        if (end < n && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) {
          --end;
          continue;
        }
        std::string_view sub = word.substr(start, end - start);
        if (start > 0) {
          key.assign(prefix_);
          key.append(sub);
          found = vocab_.Find(key);
        } else {
          found = vocab_.Find(sub);
        }
        if (found) break;
        --end;
      }
      if (!found) {
        out.resize(first);
        out.push_back({unk_id_, 0, n});
        return;
      }
      out.push_back({*found, start, end});
      start = end;
    }
  }

  std::optional<int32_t> TokenToId(std::string_view token) const override {
    return vocab_.Find(token);
  }
  std::string_view IdToToken(int32_t id) const override { return vocab_.Token(id); }
  std::string_view continuing_subword_prefix() const override { return prefix_; }
  std::optional<int32_t> unk_id() const override { return unk_id_; }
  size_t id_space() const override { return vocab_.id_space(); }

  Status Load(Json json) {
    SHOAL_ASSIGN_OR_RETURN(max_token_bytes_, ReadVocabObject(json, &vocab_));
    SHOAL_ASSIGN_OR_RETURN(auto prefix, OptString(json, "continuing_subword_prefix", "model"));
    prefix_ = prefix ? std::string(*prefix) : "##";
    SHOAL_ASSIGN_OR_RETURN(auto max_chars, OptInt(json, "max_input_chars_per_word", "model"));
    max_chars_ = max_chars && *max_chars > 0 ? static_cast<size_t>(*max_chars) : 100;
    SHOAL_ASSIGN_OR_RETURN(auto unk, OptString(json, "unk_token", "model"));
    std::string unk_name = unk ? std::string(*unk) : "[UNK]";
    auto unk_id = vocab_.Find(unk_name);
    if (!unk_id) {
      return LoadError("model.unk_token", "\"" + unk_name + "\" is not in the vocabulary");
    }
    unk_id_ = *unk_id;
    return Status::Ok();
  }

 private:
  Vocab vocab_;
  std::string prefix_;
  size_t max_chars_ = 100;
  size_t max_token_bytes_ = 0;
  int32_t unk_id_ = 0;
};

}  // namespace

Result<std::unique_ptr<Model>> ParseWordPiece(Json json) {
  auto model = std::make_unique<WordPieceModel>();
  SHOAL_RETURN_IF_ERROR(model->Load(json));
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace shoal::native::tok
