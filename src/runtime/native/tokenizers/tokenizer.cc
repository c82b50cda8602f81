// Tokenizer: loading a tokenizer.json and running its pipeline —
//   added tokens (raw) → normalizer → added tokens (normalized) →
//   pre-tokenizer → model → truncation → post-processor.
//
// Threading: a loaded HfTokenizer is immutable; Encode/EncodePair keep all
// their state on the stack (plus the stages' thread_local scratch), so any
// number of threads may encode at once. Nothing here throws: simdjson and the
// standard library are called inside a catch-all at the loading boundary, and
// the encode path allocates only through std::vector/std::string (an
// out-of-memory there is caught too).
#include "runtime/native/tokenizers/tokenizer.h"

#include <simdjson.h>

#include <algorithm>
#include <exception>
#include <string>

#include "runtime/native/tokenizers/added_tokens.h"
#include "runtime/native/tokenizers/decoder.h"
#include "runtime/native/tokenizers/json_util.h"
#include "runtime/native/tokenizers/model.h"
#include "runtime/native/tokenizers/normalizers.h"
#include "runtime/native/tokenizers/post_processor.h"
#include "runtime/native/tokenizers/pre_tokenizers.h"

namespace shoal::native {
namespace {

using tok::AddedMatch;
using tok::Json;

class HfTokenizer final : public Tokenizer {
 public:
  Status Load(Json root);

  Result<Encoding> Encode(std::string_view text, const EncodeOptions& options) const override;
  Result<Encoding> EncodePair(std::string_view first, std::string_view second,
                              const EncodeOptions& options) const override;

  std::optional<int32_t> TokenToId(std::string_view token) const override {
    if (auto id = added_.Find(token)) return id;
    return model_->TokenToId(token);
  }
  std::string IdToToken(int32_t id) const override {
    std::string_view t = added_.Token(id);
    if (t.empty()) t = model_->IdToToken(id);
    return std::string(t);
  }
  size_t vocab_size() const override { return std::max(model_->id_space(), added_.id_space()); }
  std::string_view continuing_subword_prefix() const override { return model_->continuing_subword_prefix(); }
  std::optional<int32_t> unk_id() const override { return model_->unk_id(); }
  Result<std::vector<std::string>> OutputBytes() const override;

 private:
  Status EncodeSequence(std::string_view text, int32_t type_id, Encoding& out) const;
  Status EncodeSegment(std::string_view text, uint32_t start, uint32_t end, Encoding& out) const;
  Status EncodeNormalized(tok::PreTokenized& pt, tok::Range range, Encoding& out) const;
  size_t AddedTokens(bool pair, const EncodeOptions& options) const {
    return options.add_special_tokens && post_ ? post_->AddedTokens(pair) : 0;
  }
  Encoding Finish(std::vector<Encoding> encs, std::string_view first, std::string_view second,
                  const EncodeOptions& options) const;

  std::unique_ptr<tok::Normalizer> normalizer_;
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<tok::Model> model_;
  std::unique_ptr<tok::PostProcessor> post_;
  tok::AddedTokens added_;
  tok::PieceDecoder decoder_;
};

void PushToken(Encoding& out, int32_t id, uint32_t start, uint32_t end, bool special) {
  out.ids.push_back(id);
  out.offsets.emplace_back(start, end);
  out.special.push_back(special ? 1 : 0);
}

void Truncate(Encoding& e, size_t n) {
  if (e.ids.size() <= n) return;
  e.ids.resize(n);
  e.type_ids.resize(n);
  e.offsets.resize(n);
  e.special.resize(n);
}

Status TooLong(size_t tokens, size_t limit) {
  return InvalidInput("input is " + std::to_string(tokens) + " tokens, over the model's limit of " +
                      std::to_string(limit) + "; set truncate to cut it");
}

Status NoRoom(size_t limit, size_t added) {
  return InvalidInput("max_length " + std::to_string(limit) +
                      " leaves no room for the input: the " + "model adds " +
                      std::to_string(added) + " special tokens");
}

Status CheckUtf8(std::string_view text, const char* which) {
  // Offsets are 32-bit; a 4 GiB text is not a request anyone means to send.
  if (text.size() >= UINT32_MAX) return InvalidInput(std::string(which) + " is too large");
  if (simdjson::validate_utf8(text.data(), text.size())) return Status::Ok();
  return InvalidInput(std::string(which) + " is not valid UTF-8");
}

Status HfTokenizer::Load(Json root) {
  if (root.type() != simdjson::dom::element_type::OBJECT) {
    return tok::LoadError("(root)", "expected a JSON object");
  }
  if (auto n = tok::OptField(root, "normalizer")) {
    SHOAL_ASSIGN_OR_RETURN(normalizer_, tok::ParseNormalizer(*n, "normalizer"));
  }
  if (auto p = tok::OptField(root, "pre_tokenizer")) {
    SHOAL_ASSIGN_OR_RETURN(pre_tokenizer_, tok::ParsePreTokenizer(*p, "pre_tokenizer"));
  }
  SHOAL_ASSIGN_OR_RETURN(Json model, tok::ReqField(root, "model", ""));
  const bool byte_level = pre_tokenizer_ && pre_tokenizer_->byte_level();
  SHOAL_ASSIGN_OR_RETURN(model_, tok::ParseModel(model, byte_level));
  if (auto pp = tok::OptField(root, "post_processor")) {
    SHOAL_ASSIGN_OR_RETURN(post_, tok::ParsePostProcessor(*pp, "post_processor"));
  }
  if (auto a = tok::OptField(root, "added_tokens")) {
    SHOAL_RETURN_IF_ERROR(added_.Load(*a, normalizer_.get()));
  }
  decoder_ = tok::PieceDecoder::Parse(tok::OptField(root, "decoder"));
  // A special id past the vocabulary would index past the embedding table.
  if (post_ && post_->MaxSpecialId() >= 0 && static_cast<size_t>(post_->MaxSpecialId()) >= vocab_size()) {
    return tok::LoadError("post_processor", "special token id " + std::to_string(post_->MaxSpecialId()) +
                                                " is outside the vocabulary (" + std::to_string(vocab_size()) +
                                                " ids)");
  }
  // "truncation" and "padding" are not read: each request says whether to
  // truncate (EncodeOptions), and batching pads.
  return Status::Ok();
}

Result<std::vector<std::string>> HfTokenizer::OutputBytes() const {
  SHOAL_RETURN_IF_ERROR(decoder_.status());
  std::vector<std::string> out(vocab_size());
  for (size_t id = 0; id < out.size(); ++id) {
    const std::string_view piece = model_->IdToToken(static_cast<int32_t>(id));
    if (!piece.empty()) out[id] = decoder_.Bytes(piece);
  }
  // Added tokens go through the decoder too (as the Rust crate decodes
  // them: Gemma's "▁▁▁" runs become spaces); special ones are left out.
  for (const tok::AddedToken& t : added_.tokens()) {
    if (t.id >= 0 && static_cast<size_t>(t.id) < out.size()) out[t.id] = t.special ? "" : decoder_.Bytes(t.content);
  }
  return out;
}

// Splits on raw added tokens; the text between them goes through the rest.
Status HfTokenizer::EncodeSequence(std::string_view text, int32_t type_id, Encoding& out) const {
  // Roughly a token per 3 bytes: most texts then never regrow the vectors.
  const size_t guess = text.size() / 3 + 8;
  out.ids.reserve(guess);
  out.offsets.reserve(guess);
  out.special.reserve(guess);
  std::vector<AddedMatch> matches;
  if (added_.has_raw()) added_.FindMatches(text, false, matches);
  uint32_t at = 0;
  for (const AddedMatch& m : matches) {
    if (m.start > at) SHOAL_RETURN_IF_ERROR(EncodeSegment(text, at, m.start, out));
    PushToken(out, m.id, m.start, m.end, m.special);
    at = m.end;
  }
  if (at < text.size()) {
    SHOAL_RETURN_IF_ERROR(EncodeSegment(text, at, static_cast<uint32_t>(text.size()), out));
  }
  out.type_ids.assign(out.ids.size(), type_id);
  return Status::Ok();
}

Status HfTokenizer::EncodeSegment(std::string_view text, uint32_t start, uint32_t end,
                                  Encoding& out) const {
  tok::PreTokenized pt;
  pt.arena = tok::NormalizedString(text.substr(start, end - start), start);
  if (normalizer_) SHOAL_RETURN_IF_ERROR(normalizer_->Normalize(pt.arena));
  const auto size = static_cast<uint32_t>(pt.arena.size());
  if (size == 0) return Status::Ok();
  if (!added_.has_normalized()) return EncodeNormalized(pt, {0, size}, out);

  // Added tokens that match the normalized spelling, found in normalized text.
  std::vector<AddedMatch> matches;
  added_.FindMatches(pt.arena.text(), true, matches);
  uint32_t at = 0;
  for (const AddedMatch& m : matches) {
    if (m.start > at) SHOAL_RETURN_IF_ERROR(EncodeNormalized(pt, {at, m.start}, out));
    tok::Range orig = pt.arena.Original(m.start, m.end);
    PushToken(out, m.id, orig.start, orig.end, m.special);
    at = m.end;
  }
  if (at < size) SHOAL_RETURN_IF_ERROR(EncodeNormalized(pt, {at, size}, out));
  return Status::Ok();
}

Status HfTokenizer::EncodeNormalized(tok::PreTokenized& pt, tok::Range range, Encoding& out) const {
  pt.pieces.assign(1, range);
  if (pre_tokenizer_) SHOAL_RETURN_IF_ERROR(pre_tokenizer_->PreTokenize(pt));
  thread_local std::vector<tok::ModelToken> toks;
  for (tok::Range piece : pt.pieces) {
    toks.clear();
    model_->Tokenize(pt.Text(piece), toks);
    for (const tok::ModelToken& t : toks) {
      tok::Range orig = pt.arena.Original(piece.start + t.start, piece.start + t.end);
      PushToken(out, t.id, orig.start, orig.end, false);
    }
  }
  return Status::Ok();
}

Encoding HfTokenizer::Finish(std::vector<Encoding> encs, std::string_view first,
                             std::string_view second, const EncodeOptions& options) const {
  if (post_ && post_->trims_offsets()) {
    tok::TrimOffsets(encs[0], first);
    if (encs.size() > 1) tok::TrimOffsets(encs[1], second);
  }
  if (post_) post_->AddSpecialTokens(encs, options.add_special_tokens);
  Encoding out = std::move(encs[0]);
  for (size_t k = 1; k < encs.size(); ++k) {
    const Encoding& e = encs[k];
    out.ids.insert(out.ids.end(), e.ids.begin(), e.ids.end());
    out.type_ids.insert(out.type_ids.end(), e.type_ids.begin(), e.type_ids.end());
    out.offsets.insert(out.offsets.end(), e.offsets.begin(), e.offsets.end());
    out.special.insert(out.special.end(), e.special.begin(), e.special.end());
  }
  return out;
}

Result<Encoding> HfTokenizer::Encode(std::string_view text, const EncodeOptions& options) const {
  try {
    SHOAL_RETURN_IF_ERROR(CheckUtf8(text, "text"));
    std::vector<Encoding> encs(1);
    SHOAL_RETURN_IF_ERROR(EncodeSequence(text, 0, encs[0]));
    const size_t added = AddedTokens(false, options);
    const size_t total = encs[0].ids.size() + added;
    bool truncated = false;
    if (options.max_length > 0 && total > options.max_length) {
      if (!options.truncate) return TooLong(total, options.max_length);
      if (options.max_length < added) return NoRoom(options.max_length, added);
      Truncate(encs[0], options.max_length - added);
      truncated = true;
    }
    Encoding out = Finish(std::move(encs), text, {}, options);
    out.untruncated_length = static_cast<uint32_t>(total);
    out.truncated = truncated;
    return out;
  } catch (const std::exception& e) {
    return Internal(std::string("tokenizer: ") + e.what());
  }
}

Result<Encoding> HfTokenizer::EncodePair(std::string_view first, std::string_view second,
                                         const EncodeOptions& options) const {
  try {
    SHOAL_RETURN_IF_ERROR(CheckUtf8(first, "first text"));
    SHOAL_RETURN_IF_ERROR(CheckUtf8(second, "second text"));
    std::vector<Encoding> encs(2);
    SHOAL_RETURN_IF_ERROR(EncodeSequence(first, 0, encs[0]));
    SHOAL_RETURN_IF_ERROR(EncodeSequence(second, 1, encs[1]));
    const size_t added = AddedTokens(true, options);
    size_t n1 = encs[0].ids.size(), n2 = encs[1].ids.size();
    const size_t total = n1 + n2 + added;
    bool truncated = false;
    if (options.max_length > 0 && total > options.max_length) {
      if (!options.truncate) return TooLong(total, options.max_length);
      if (options.max_length < added) return NoRoom(options.max_length, added);
      // longest_first: the shorter sequence keeps its length when it fits in
      // half the budget; otherwise both get half (the longer one the odd token).
      const size_t budget = options.max_length - added;
      const bool swap = n1 > n2;
      size_t short_len = swap ? n2 : n1;
      size_t long_len = swap ? n1 : n2;
      if (short_len > budget) {
        long_len = short_len;
      } else {
        long_len = std::max(short_len, budget - short_len);
      }
      if (short_len + long_len > budget) {
        short_len = budget / 2;
        long_len = short_len + budget % 2;
      }
      n1 = swap ? long_len : short_len;
      n2 = swap ? short_len : long_len;
      Truncate(encs[0], n1);
      Truncate(encs[1], n2);
      truncated = true;
    }
    Encoding out = Finish(std::move(encs), first, second, options);
    out.untruncated_length = static_cast<uint32_t>(total);
    out.truncated = truncated;
    return out;
  } catch (const std::exception& e) {
    return Internal(std::string("tokenizer: ") + e.what());
  }
}

Result<std::unique_ptr<Tokenizer>> ParseDocument(simdjson::padded_string_view json) {
  simdjson::dom::parser parser;
  Json root;
  if (auto err = parser.parse(json).get(root); err != simdjson::SUCCESS) {
    return Status(Code::kModelLoadFailed, std::string("tokenizer.json: malformed JSON (") +
                                              simdjson::error_message(err) + ")");
  }
  auto tokenizer = std::make_unique<HfTokenizer>();
  SHOAL_RETURN_IF_ERROR(tokenizer->Load(root));
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

}  // namespace

Result<Encoding> EncodingOfIds(std::span<const int32_t> ids, uint32_t vocab_size, const EncodeOptions& options) {
  for (int32_t id : ids) {
    if (id < 0 || static_cast<uint32_t>(id) >= vocab_size) {
      return InvalidInput("input: token id " + std::to_string(id) + " is outside the model's vocabulary of " +
                          std::to_string(vocab_size));
    }
  }
  Encoding e;
  e.ids.assign(ids.begin(), ids.end());
  e.type_ids.assign(ids.size(), 0);
  e.offsets.assign(ids.size(), {0, 0});
  e.special.assign(ids.size(), 0);
  e.untruncated_length = static_cast<uint32_t>(ids.size());
  if (options.max_length > 0 && ids.size() > options.max_length) {
    if (!options.truncate) return TooLong(ids.size(), options.max_length);
    Truncate(e, options.max_length);
    e.truncated = true;
  }
  return e;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::Parse(std::string_view tokenizer_json) {
  try {
    simdjson::padded_string padded(tokenizer_json);
    return ParseDocument(padded);
  } catch (const std::exception& e) {
    return Status(Code::kModelLoadFailed, std::string("tokenizer.json: ") + e.what());
  }
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::LoadFile(const std::string& path) {
  try {
    simdjson::padded_string content;
    if (auto err = simdjson::padded_string::load(path).get(content); err != simdjson::SUCCESS) {
      return Status(Code::kModelLoadFailed,
                    "cannot read " + path + ": " + simdjson::error_message(err));
    }
    auto result = ParseDocument(content);
    if (!result.ok()) {
      return Status(result.status().code(), path + ": " + result.status().message());
    }
    return result;
  } catch (const std::exception& e) {
    return Status(Code::kModelLoadFailed, path + ": " + e.what());
  }
}

}  // namespace shoal::native
