// Utf8Guard: a llama_sampler that keeps a constrained output's bytes the
// ones its grammar reads. llama.cpp's grammar decodes UTF-8 leniently (an
// overlong "\xC1\xB9" reads as "y"), while the text a client gets is strict
// (runtime/text_stream.h writes U+FFFD for such bytes), so a grammar's "yes"
// could reach the client as "��es". The guard masks every token that would
// make the output invalid UTF-8, and the control tokens the output does not
// render (the grammar reads their text, the client would not).
//
// Threading: a sampler is one sequence's; the table is immutable and shared.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/llamacpp/vocab.h"

namespace shoal::llamacpp {

// Per token of a vocabulary: the bytes the output renders, and how they read alone.
class Utf8Table {
 public:
  explicit Utf8Table(const llama_vocab* vocab);

  const std::string& bytes(int32_t id) const { return bytes_[id]; }
  // Whether the output renders the text the grammar reads (not so for
  // control tokens, which render as nothing).
  bool rendered(int32_t id) const { return rendered_[id]; }
  // -1: its bytes are not valid UTF-8 after a whole character; else the
  // bytes its last character still needs.
  int pending_alone(int32_t id) const { return pending_[id]; }
  bool eog(int32_t id) const { return eog_[id]; }
  int32_t size() const { return static_cast<int32_t>(bytes_.size()); }

 private:
  std::vector<std::string> bytes_;
  std::vector<int8_t> pending_;
  std::vector<bool> rendered_, eog_;
};

SamplerPtr MakeUtf8Guard(std::shared_ptr<const Utf8Table> table);

}  // namespace shoal::llamacpp
