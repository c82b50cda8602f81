#include "runtime/llamacpp/vocab.h"

#include <climits>

namespace shoal::llamacpp {

Result<std::vector<int32_t>> TokenizeText(const llama_vocab* vocab, std::string_view text, bool add_special,
                                          bool parse_special) {
  if (text.size() > static_cast<size_t>(INT32_MAX / 2)) return InvalidInput("the text is too long to tokenize");
  const auto len = static_cast<int32_t>(text.size());
  std::vector<int32_t> ids(text.size() + 8);
  int32_t n = llama_tokenize(vocab, text.data(), len, ids.data(), static_cast<int32_t>(ids.size()), add_special,
                             parse_special);
  if (n < 0 && n != INT32_MIN) {  // the buffer was short: -n is what it needs
    ids.resize(static_cast<size_t>(-n));
    n = llama_tokenize(vocab, text.data(), len, ids.data(), static_cast<int32_t>(ids.size()), add_special,
                       parse_special);
  }
  if (n < 0) return InvalidInput("llama.cpp could not tokenize the text");
  ids.resize(static_cast<size_t>(n));
  return ids;
}

std::string TokenPiece(const llama_vocab* vocab, int32_t id, bool special) {
  std::string piece(32, '\0');
  int32_t n = llama_token_to_piece(vocab, id, piece.data(), static_cast<int32_t>(piece.size()), 0, special);
  if (n < 0) {
    piece.resize(static_cast<size_t>(-n));
    n = llama_token_to_piece(vocab, id, piece.data(), static_cast<int32_t>(piece.size()), 0, special);
  }
  piece.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return piece;
}

Status TokenizeItems(const llama_vocab* vocab, std::span<const TokenizeInput> in, std::span<TokenizeOutput> out) {
  for (size_t i = 0; i < in.size(); ++i) {
    auto ids = TokenizeText(vocab, in[i].text, in[i].add_special_tokens, true);
    if (!ids.ok()) {
      out[i].status = ids.status();
      continue;
    }
    out[i].tokens.clear();
    for (int32_t id : *ids) {
      Token t;
      t.id = id;
      t.text = TokenPiece(vocab, id, true);
      t.special = (llama_vocab_get_attr(vocab, id) & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_UNKNOWN)) != 0;
      out[i].tokens.push_back(std::move(t));
    }
  }
  return Status::Ok();
}

std::string MetaString(const llama_model* model, const char* key) {
  int32_t n = llama_model_meta_val_str(model, key, nullptr, 0);
  if (n < 0) return {};
  std::string value(static_cast<size_t>(n) + 1, '\0');
  llama_model_meta_val_str(model, key, value.data(), value.size());
  value.resize(static_cast<size_t>(n));
  return value;
}

}  // namespace shoal::llamacpp
