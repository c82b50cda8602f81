// The normalizers of tokenizer.json. Semantics follow the Rust `tokenizers`
// crate; where @lenml/tokenizers (our Node reference) differs, the comment
// says so.
// Threading: every class is immutable after parsing.
#include "runtime/native/tokenizers/normalizers.h"

#include <string>
#include <vector>

#include "common/base64.h"
#include "runtime/native/tokenizers/precompiled_charsmap.h"
#include "runtime/native/tokenizers/regex.h"

namespace shoal::native::tok {
namespace {

class UnicodeNormalizer final : public Normalizer {
 public:
  explicit UnicodeNormalizer(UnicodeForm form) : form_(form) {}
  Status Normalize(NormalizedString& s) const override {
    s.UnicodeNormalize(form_);
    return Status::Ok();
  }

 private:
  UnicodeForm form_;
};

class LowercaseNormalizer final : public Normalizer {
 public:
  Status Normalize(NormalizedString& s) const override {
    s.Lowercase();
    return Status::Ok();
  }
};

// Drops combining marks (M*). Meant to follow NFD/NFKD, as in the Rust crate.
class StripAccentsNormalizer final : public Normalizer {
 public:
  Status Normalize(NormalizedString& s) const override {
    if (IsAscii(s.text())) return Status::Ok();
    s.MapChars([](uint32_t cp, std::string& out) {
      if (!IsMark(cp)) AppendUtf8(out, cp);
    });
    return Status::Ok();
  }
};

class StripNormalizer final : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  Status Normalize(NormalizedString& s) const override {
    s.Strip(left_, right_);
    return Status::Ok();
  }

 private:
  bool left_, right_;
};

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(std::string literal, std::unique_ptr<Regex> regex, std::string content)
      : literal_(std::move(literal)), regex_(std::move(regex)), content_(std::move(content)) {}
  Status Normalize(NormalizedString& s) const override {
    if (!regex_) {
      s.ReplaceAll(literal_, content_);
      return Status::Ok();
    }
    std::vector<Range> found;
    SHOAL_RETURN_IF_ERROR(regex_->FindAll(s.text(), found));
    // Empty matches replace nothing (and would insert `content` everywhere).
    std::vector<Range> nonempty;
    for (const Range& r : found) {
      if (r.end > r.start) nonempty.push_back(r);
    }
    s.ReplaceRanges(nonempty, content_);
    return Status::Ok();
  }

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
  std::string content_;
};

// Prepends only to non-empty text (the Rust crate; @lenml prepends always).
class PrependNormalizer final : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  Status Normalize(NormalizedString& s) const override {
    if (!s.empty()) s.Prepend(prefix_);
    return Status::Ok();
  }

 private:
  std::string prefix_;
};

class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text),
        chinese_(chinese),
        strip_accents_(strip_accents),
        lowercase_(lowercase) {}

  Status Normalize(NormalizedString& s) const override {
    const bool ascii = IsAscii(s.text());
    if (clean_text_) {
      // Drops NUL, U+FFFD and control characters; every whitespace becomes ' '.
      bool needed = !ascii;
      if (ascii) {
        for (char c : s.text()) {
          auto u = static_cast<unsigned char>(c);
          if (u < 0x20 || u == 0x7F) needed = true;
        }
      }
      if (needed) {
        s.MapChars([](uint32_t cp, std::string& out) {
          if (cp == 0 || cp == 0xFFFD || IsBertControl(cp)) return;
          if (IsWhitespace(cp)) {
            out.push_back(' ');
          } else {
            AppendUtf8(out, cp);
          }
        });
      }
    }
    if (chinese_ && !ascii) {
      s.MapChars([](uint32_t cp, std::string& out) {
        if (IsCjkIdeograph(cp)) {
          out.push_back(' ');
          AppendUtf8(out, cp);
          out.push_back(' ');
        } else {
          AppendUtf8(out, cp);
        }
      });
    }
    if (strip_accents_ && !IsAscii(s.text())) {
      // BERT's accent stripping drops only nonspacing marks (Mn), after NFD.
      s.UnicodeNormalize(UnicodeForm::kNFD);
      s.MapChars([](uint32_t cp, std::string& out) {
        if (!IsNonspacingMark(cp)) AppendUtf8(out, cp);
      });
    }
    if (lowercase_) s.Lowercase();
    return Status::Ok();
  }

 private:
  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

// SentencePiece's rules (precompiled_charsmap.h), applied as its normalizer
// applies them: at each position the longest rule that matches; where none
// does, the character is kept (an invalid UTF-8 byte, which the trie cannot
// hold, too: the caller's text was validated before). The Rust crate matches
// per grapheme cluster instead; the two agree wherever no rule matches only
// part of a cluster (tokenizer_reference_xlmr checks nmt_nfkc against the
// sentencepiece library).
class PrecompiledNormalizer final : public Normalizer {
 public:
  explicit PrecompiledNormalizer(PrecompiledCharsmap map) : map_(std::move(map)) {}
  Status Normalize(NormalizedString& s) const override {
    NormalizedString out = s.EmptyLike();
    const std::string& text = s.text();
    bool changed = false;
    for (size_t i = 0; i < text.size();) {
      const auto match = map_.Longest(std::string_view(text).substr(i));
      if (match.length == 0) {
        const size_t len = std::min<size_t>(Utf8Length(static_cast<unsigned char>(text[i])), text.size() - i);
        out.AppendFrom(s, i, i + len);
        i += len;
        continue;
      }
      const auto end = static_cast<uint32_t>(i + match.length);
      if (text.compare(i, match.length, match.replacement) == 0) {
        out.AppendFrom(s, i, end);
      } else {
        changed = true;
        if (!match.replacement.empty()) out.AppendMapped(match.replacement, s.Original(i, end));
      }
      i = end;
    }
    if (changed) s = std::move(out);
    return Status::Ok();
  }

 private:
  PrecompiledCharsmap map_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts)
      : parts_(std::move(parts)) {}
  Status Normalize(NormalizedString& s) const override {
    for (const auto& p : parts_) SHOAL_RETURN_IF_ERROR(p->Normalize(s));
    return Status::Ok();
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

Result<std::unique_ptr<Normalizer>> ParseNormalizer(Json json, std::string_view where) {
  std::string_view type = TypeOf(json);
  if (type == "NFC") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UnicodeForm::kNFC));
  if (type == "NFD") return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UnicodeForm::kNFD));
  if (type == "NFKC") {
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UnicodeForm::kNFKC));
  }
  if (type == "NFKD") {
    return std::unique_ptr<Normalizer>(new UnicodeNormalizer(UnicodeForm::kNFKD));
  }
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(new LowercaseNormalizer());
  if (type == "StripAccents") return std::unique_ptr<Normalizer>(new StripAccentsNormalizer());
  if (type == "Strip") {
    SHOAL_ASSIGN_OR_RETURN(bool left, OptBool(json, "strip_left", true, where));
    SHOAL_ASSIGN_OR_RETURN(bool right, OptBool(json, "strip_right", true, where));
    return std::unique_ptr<Normalizer>(new StripNormalizer(left, right));
  }
  if (type == "Replace") {
    SHOAL_ASSIGN_OR_RETURN(Json pattern, ReqField(json, "pattern", where));
    SHOAL_ASSIGN_OR_RETURN(std::string_view content, ReqString(json, "content", where));
    std::string literal;
    SHOAL_ASSIGN_OR_RETURN(auto regex, ParsePattern(pattern, Path(where, "pattern"), &literal));
    return std::unique_ptr<Normalizer>(
        new ReplaceNormalizer(std::move(literal), std::move(regex), std::string(content)));
  }
  if (type == "Prepend") {
    SHOAL_ASSIGN_OR_RETURN(std::string_view prefix, ReqString(json, "prepend", where));
    return std::unique_ptr<Normalizer>(new PrependNormalizer(std::string(prefix)));
  }
  if (type == "BertNormalizer") {
    SHOAL_ASSIGN_OR_RETURN(bool clean, OptBool(json, "clean_text", true, where));
    SHOAL_ASSIGN_OR_RETURN(bool chinese, OptBool(json, "handle_chinese_chars", true, where));
    SHOAL_ASSIGN_OR_RETURN(bool lower, OptBool(json, "lowercase", true, where));
    // strip_accents: null means "as lowercase".
    SHOAL_ASSIGN_OR_RETURN(bool strip, OptBool(json, "strip_accents", lower, where));
    return std::unique_ptr<Normalizer>(new BertNormalizer(clean, chinese, strip, lower));
  }
  if (type == "Precompiled") {
    // null or "" (a model trained without rules) maps nothing.
    std::string_view encoded;
    if (json.at_key("precompiled_charsmap").get_string().get(encoded) != simdjson::SUCCESS) encoded = {};
    std::string blob;
    if (!DecodeBase64(encoded, &blob)) return LoadError(Path(where, "precompiled_charsmap"), "not base64");
    SHOAL_ASSIGN_OR_RETURN(auto map, PrecompiledCharsmap::Parse(blob));
    return std::unique_ptr<Normalizer>(new PrecompiledNormalizer(std::move(map)));
  }
  if (type == "Sequence") {
    SHOAL_ASSIGN_OR_RETURN(Json list, ReqField(json, "normalizers", where));
    simdjson::dom::array arr;
    if (list.get_array().get(arr) != simdjson::SUCCESS) {
      return LoadError(Path(where, "normalizers"), "expected an array");
    }
    std::vector<std::unique_ptr<Normalizer>> parts;
    size_t i = 0;
    for (Json item : arr) {
      SHOAL_ASSIGN_OR_RETURN(auto part, ParseNormalizer(item, Index(Path(where, "normalizers"), i++)));
      parts.push_back(std::move(part));
    }
    return std::unique_ptr<Normalizer>(new SequenceNormalizer(std::move(parts)));
  }
  if (type.empty()) return LoadError(where, "missing \"type\"");
  return LoadError(where, "normalizer type \"" + std::string(type) +
                              "\" is not supported (NFC, NFD, NFKC, NFKD, Lowercase, "
                              "StripAccents, Strip, Replace, Prepend, BertNormalizer, Precompiled, Sequence)");
}

}  // namespace shoal::native::tok
