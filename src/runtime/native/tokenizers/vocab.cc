// Vocab construction (load time only).
// Threading: not thread-safe while building; see the header.
#include "runtime/native/tokenizers/vocab.h"

#include <algorithm>

namespace shoal::native::tok {

void Vocab::Rehash(size_t want) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(want, Slot{});
  mask_ = want - 1;
  for (const Slot& s : old) {
    if (s.id < 0) continue;
    size_t i = HashBytes(Text(s.offset, s.length)) & mask_;
    while (slots_[i].id >= 0) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

void Vocab::Reserve(size_t tokens, size_t bytes) {
  bytes_.reserve(bytes);
  size_t want = 16;
  while (want < tokens * 2) want <<= 1;
  if (want > slots_.size()) Rehash(want);
}

void Vocab::Add(std::string_view token, int32_t id) {
  if (id < 0) return;
  if ((count_ + 1) * 2 > slots_.size()) Rehash(slots_.empty() ? 16 : slots_.size() * 2);
  if (static_cast<size_t>(id) >= by_id_.size()) by_id_.resize(static_cast<size_t>(id) + 1);
  uint64_t h = HashBytes(token);
  auto tag = static_cast<uint32_t>(h >> 32);
  size_t i = h & mask_;
  for (; slots_[i].id >= 0; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.tag == tag && Text(s.offset, s.length) == token) {  // same string: the new id wins
      s.id = id;
      by_id_[id] = {s.offset, s.length};
      return;
    }
  }
  const auto offset = static_cast<uint32_t>(bytes_.size());
  bytes_.append(token);
  slots_[i] = {tag, offset, static_cast<uint32_t>(token.size()), id};
  ++count_;
  by_id_[id] = {offset, static_cast<uint32_t>(token.size())};
}

Result<size_t> ReadVocabObject(Json model, Vocab* vocab) {
  SHOAL_ASSIGN_OR_RETURN(Json v, ReqField(model, "vocab", "model"));
  simdjson::dom::object obj;
  if (v.get_object().get(obj) != simdjson::SUCCESS) {
    return LoadError("model.vocab", "expected an object of token: id");
  }
  vocab->Reserve(obj.size(), obj.size() * 8);
  size_t longest = 0;
  for (auto kv : obj) {
    SHOAL_ASSIGN_OR_RETURN(int32_t id, ToId(kv.value, "model.vocab[\"" + std::string(kv.key) + "\"]"));
    vocab->Add(kv.key, id);
    longest = std::max(longest, kv.key.size());
  }
  return longest;
}

}  // namespace shoal::native::tok
