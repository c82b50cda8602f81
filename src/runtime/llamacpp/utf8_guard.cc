#include "runtime/llamacpp/utf8_guard.h"

#include <cmath>

#include "runtime/text_stream.h"

namespace shoal::llamacpp {

Utf8Table::Utf8Table(const llama_vocab* vocab) {
  const int32_t n = llama_vocab_n_tokens(vocab);
  bytes_.resize(n);
  pending_.resize(n);
  rendered_.resize(n);
  eog_.resize(n);
  for (int32_t id = 0; id < n; ++id) {
    bytes_[id] = TokenPiece(vocab, id, false);
    rendered_[id] = bytes_[id] == TokenPiece(vocab, id, true);
    eog_[id] = llama_vocab_is_eog(vocab, id);
    pending_[id] = static_cast<int8_t>(Utf8Pending(bytes_[id]));
  }
}

namespace {

struct Guard {
  std::shared_ptr<const Utf8Table> table;
  std::string tail;  // the output's unfinished last character, if any
};

Guard& Of(llama_sampler* s) { return *static_cast<Guard*>(s->ctx); }

const char* Name(const llama_sampler*) { return "shoal-utf8-guard"; }

void Apply(llama_sampler* s, llama_token_data_array* cur) {
  const Guard& g = Of(s);
  const Utf8Table& t = *g.table;
  for (size_t i = 0; i < cur->size; ++i) {
    const int32_t id = cur->data[i].id;
    if (id < 0 || id >= t.size() || t.eog(id)) continue;  // the grammar decides the end
    const bool ok = t.rendered(id) &&
                    (g.tail.empty() ? t.pending_alone(id) >= 0 : Utf8Pending(g.tail + t.bytes(id)) >= 0);
    if (!ok) cur->data[i].logit = -INFINITY;
  }
}

void Accept(llama_sampler* s, llama_token id) {
  Guard& g = Of(s);
  if (id < 0 || id >= g.table->size()) return;
  std::string all = g.tail + g.table->bytes(id);
  if (Utf8Pending(all) <= 0) {
    g.tail.clear();
    return;
  }
  size_t lead = all.size();
  while (lead > 0 && (static_cast<unsigned char>(all[lead - 1]) & 0xC0) == 0x80) --lead;
  g.tail = all.substr(lead > 0 ? lead - 1 : 0);
}

void Reset(llama_sampler* s) { Of(s).tail.clear(); }

llama_sampler* Clone(const llama_sampler* s);

void Free(llama_sampler* s) { delete static_cast<Guard*>(s->ctx); }

llama_sampler_i GuardInterface() {
  llama_sampler_i i{};  // no backend sampling
  i.name = Name;
  i.accept = Accept;
  i.apply = Apply;
  i.reset = Reset;
  i.clone = Clone;
  i.free = Free;
  return i;
}
llama_sampler_i kGuard = GuardInterface();  // llama_sampler_init takes it non-const

llama_sampler* Clone(const llama_sampler* s) {
  return llama_sampler_init(&kGuard, new Guard(*static_cast<const Guard*>(s->ctx)));
}

}  // namespace

SamplerPtr MakeUtf8Guard(std::shared_ptr<const Utf8Table> table) {
  return SamplerPtr(llama_sampler_init(&kGuard, new Guard{std::move(table), {}}));
}

}  // namespace shoal::llamacpp
