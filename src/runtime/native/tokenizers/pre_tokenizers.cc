// The pre-tokenizers of tokenizer.json, with the split behaviors of the Rust
// `tokenizers` crate (Removed, Isolated, MergedWithPrevious, MergedWithNext,
// Contiguous; invert).
// Threading: every class is immutable after parsing; scratch vectors are
// per call.
#include "runtime/native/tokenizers/pre_tokenizers.h"

#include <string>
#include <utility>

#include "runtime/native/tokenizers/regex.h"

namespace shoal::native::tok {
namespace {

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Result<Behavior> ParseBehavior(Json json, std::string_view where, Behavior dflt) {
  SHOAL_ASSIGN_OR_RETURN(auto name, OptString(json, "behavior", where));
  if (!name) return dflt;
  // Accept both the serialized CamelCase and the Python API's snake_case.
  std::string n;
  for (char c : *name) {
    if (c != '_') n.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
  }
  if (n == "removed") return Behavior::kRemoved;
  if (n == "isolated") return Behavior::kIsolated;
  if (n == "mergedwithprevious") return Behavior::kMergedWithPrevious;
  if (n == "mergedwithnext") return Behavior::kMergedWithNext;
  if (n == "contiguous") return Behavior::kContiguous;
  return LoadError(Path(where, "behavior"),
                   "unknown split behavior \"" + std::string(*name) + "\"");
}

struct Segment {
  Range r;
  bool match;
};

// Turns the segments of one piece (covering it, in order) into pieces
// according to the behavior; empty pieces are dropped.
void ApplyBehavior(const std::vector<Segment>& segs, Behavior b, std::vector<Range>& out) {
  const size_t first = out.size();
  switch (b) {
    case Behavior::kRemoved:
      for (const Segment& s : segs) {
        if (!s.match) out.push_back(s.r);
      }
      break;
    case Behavior::kIsolated:
      for (const Segment& s : segs) out.push_back(s.r);
      break;
    case Behavior::kMergedWithPrevious: {
      bool prev_match = false;
      for (const Segment& s : segs) {
        if (s.match && !prev_match && out.size() > first) {
          out.back().end = s.r.end;
        } else {
          out.push_back(s.r);
        }
        prev_match = s.match;
      }
      break;
    }
    case Behavior::kMergedWithNext: {
      // A delimiter joins the piece after it: walk backwards.
      std::vector<Range> rev;
      bool next_match = false;
      for (size_t i = segs.size(); i-- > 0;) {
        const Segment& s = segs[i];
        if (s.match && !next_match && !rev.empty()) {
          rev.back().start = s.r.start;
        } else {
          rev.push_back(s.r);
        }
        next_match = s.match;
      }
      out.insert(out.end(), rev.rbegin(), rev.rend());
      break;
    }
    case Behavior::kContiguous: {
      bool prev_match = false;
      for (const Segment& s : segs) {
        if (s.match == prev_match && out.size() > first) {
          out.back().end = s.r.end;
        } else {
          out.push_back(s.r);
        }
        prev_match = s.match;
      }
      break;
    }
  }
  // Drop empty pieces (empty regex matches, delimiters at the edges).
  size_t w = first;
  for (size_t i = first; i < out.size(); ++i) {
    if (out[i].end > out[i].start) out[w++] = out[i];
  }
  out.resize(w);
}

// Segments of a piece where each character satisfying `is_match` is its own
// match and the characters between are one non-match segment (how the Rust
// crate splits on a char predicate).
template <class Pred>
void CharSegments(std::string_view text, Range piece, Pred&& is_match, std::vector<Segment>& segs) {
  segs.clear();
  uint32_t run = piece.start;
  for (uint32_t i = piece.start; i < piece.end;) {
    int len;
    uint32_t cp = DecodeUtf8(text, i, &len);
    if (is_match(cp)) {
      if (run < i) segs.push_back({{run, i}, false});
      segs.push_back({{i, i + static_cast<uint32_t>(len)}, true});
      run = i + static_cast<uint32_t>(len);
    }
    i += static_cast<uint32_t>(len);
  }
  if (run < piece.end) segs.push_back({{run, piece.end}, false});
}

template <class Pred>
void SplitOnChars(PreTokenized& pt, Pred&& is_match, Behavior b) {
  std::vector<Range> out;
  out.reserve(pt.pieces.size() * 2);
  std::vector<Segment> segs;
  std::string_view text = pt.arena.text();
  for (Range piece : pt.pieces) {
    CharSegments(text, piece, is_match, segs);
    ApplyBehavior(segs, b, out);
  }
  pt.pieces = std::move(out);
}

// Segments from regex or literal matches inside a piece.
void MatchSegments(const std::vector<Range>& matches, Range piece, bool invert,
                   std::vector<Segment>& segs) {
  segs.clear();
  uint32_t at = piece.start;
  for (Range m : matches) {
    Range abs{piece.start + m.start, piece.start + m.end};
    if (abs.start > at) segs.push_back({{at, abs.start}, invert});
    segs.push_back({abs, !invert});
    at = abs.end;
  }
  if (at < piece.end) segs.push_back({{at, piece.end}, invert});
}

// Replaces piece `i`'s text: appends `text` to the arena (every byte aligned
// per `align`) and points the piece at it.
Range AppendPiece(PreTokenized& pt, const NormalizedString& piece_text) {
  auto start = static_cast<uint32_t>(pt.arena.size());
  pt.arena.AppendFrom(piece_text, 0, static_cast<uint32_t>(piece_text.size()));
  return {start, static_cast<uint32_t>(pt.arena.size())};
}

class WhitespaceSplitPre final : public PreTokenizer {
 public:
  Status PreTokenize(PreTokenized& pt) const override {
    SplitOnChars(pt, IsWhitespace, Behavior::kRemoved);
    return Status::Ok();
  }
};

class CharDelimiterPre final : public PreTokenizer {
 public:
  explicit CharDelimiterPre(uint32_t delimiter) : delimiter_(delimiter) {}
  Status PreTokenize(PreTokenized& pt) const override {
    SplitOnChars(
        pt, [this](uint32_t cp) { return cp == delimiter_; }, Behavior::kRemoved);
    return Status::Ok();
  }

 private:
  uint32_t delimiter_;
};

class BertPre final : public PreTokenizer {
 public:
  Status PreTokenize(PreTokenized& pt) const override {
    SplitOnChars(pt, IsWhitespace, Behavior::kRemoved);
    SplitOnChars(pt, IsPunctuation, Behavior::kIsolated);
    return Status::Ok();
  }
};

class PunctuationPre final : public PreTokenizer {
 public:
  explicit PunctuationPre(Behavior b) : behavior_(b) {}
  Status PreTokenize(PreTokenized& pt) const override {
    SplitOnChars(pt, IsPunctuation, behavior_);
    return Status::Ok();
  }

 private:
  Behavior behavior_;
};

class DigitsPre final : public PreTokenizer {
 public:
  explicit DigitsPre(bool individual) : individual_(individual) {}
  Status PreTokenize(PreTokenized& pt) const override {
    SplitOnChars(pt, IsNumeric, individual_ ? Behavior::kIsolated : Behavior::kContiguous);
    return Status::Ok();
  }

 private:
  bool individual_;
};

// `\w+|[^\w\s]+`: runs of word characters, runs of other non-space characters.
class WhitespacePre final : public PreTokenizer {
 public:
  Status PreTokenize(PreTokenized& pt) const override {
    std::vector<Range> out;
    std::string_view text = pt.arena.text();
    for (Range piece : pt.pieces) {
      int cls_prev = 0;  // 0 space, 1 word, 2 other
      for (uint32_t i = piece.start; i < piece.end;) {
        int len;
        uint32_t cp = DecodeUtf8(text, i, &len);
        int cls = IsWordChar(cp) ? 1 : (IsWhitespace(cp) ? 0 : 2);
        if (cls != 0) {
          if (cls == cls_prev) {
            out.back().end = i + static_cast<uint32_t>(len);
          } else {
            out.push_back({i, i + static_cast<uint32_t>(len)});
          }
        }
        cls_prev = cls;
        i += static_cast<uint32_t>(len);
      }
    }
    pt.pieces = std::move(out);
    return Status::Ok();
  }
};

class SplitPre final : public PreTokenizer {
 public:
  SplitPre(std::string literal, std::unique_ptr<Regex> regex, Behavior b, bool invert)
      : literal_(std::move(literal)), regex_(std::move(regex)), behavior_(b), invert_(invert) {}

  Status PreTokenize(PreTokenized& pt) const override {
    std::vector<Range> out;
    out.reserve(pt.arena.size() / 4 + 4);
    thread_local std::vector<Range> tls_matches;
    thread_local std::vector<Segment> tls_segs;
    std::vector<Range>& matches = tls_matches;
    std::vector<Segment>& segs = tls_segs;
    for (Range piece : pt.pieces) {
      std::string_view text = pt.Text(piece);
      matches.clear();
      if (regex_) {
        SHOAL_RETURN_IF_ERROR(regex_->FindAll(text, matches));
      } else if (!literal_.empty()) {
        for (size_t p = text.find(literal_); p != std::string_view::npos;
             p = text.find(literal_, p + literal_.size())) {
          matches.push_back({static_cast<uint32_t>(p), static_cast<uint32_t>(p + literal_.size())});
        }
      }
      MatchSegments(matches, piece, invert_, segs);
      ApplyBehavior(segs, behavior_, out);
    }
    pt.pieces = std::move(out);
    return Status::Ok();
  }

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
  Behavior behavior_;
  bool invert_;
};

// GPT-2's split, used by ByteLevel when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevelPre final : public PreTokenizer {
 public:
  ByteLevelPre(bool add_prefix_space, std::unique_ptr<Regex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}

  bool byte_level() const override { return true; }

  Status PreTokenize(PreTokenized& pt) const override {
    if (add_prefix_space_) {
      for (Range& piece : pt.pieces) {
        if (pt.arena.text()[piece.start] == ' ') continue;
        NormalizedString sub = pt.arena.EmptyLike();
        sub.AppendFrom(pt.arena, piece.start, piece.end);
        sub.Prepend(" ");
        piece = AppendPiece(pt, sub);
      }
    }
    if (!regex_) return Status::Ok();
    std::vector<Range> out;
    out.reserve(pt.arena.size() / 4 + 4);
    thread_local std::vector<Range> tls_matches;
    thread_local std::vector<Segment> tls_segs;
    std::vector<Range>& matches = tls_matches;
    std::vector<Segment>& segs = tls_segs;
    for (Range piece : pt.pieces) {
      matches.clear();
      SHOAL_RETURN_IF_ERROR(regex_->FindAll(pt.Text(piece), matches));
      MatchSegments(matches, piece, false, segs);
      ApplyBehavior(segs, Behavior::kIsolated, out);
    }
    pt.pieces = std::move(out);
    return Status::Ok();
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class MetaspacePre final : public PreTokenizer {
 public:
  MetaspacePre(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}

  Status PreTokenize(PreTokenized& pt) const override {
    std::vector<Range> out;
    std::vector<Segment> segs;
    std::vector<Range> matches;
    for (Range piece : pt.pieces) {
      // Spaces become the replacement; then maybe a leading replacement.
      NormalizedString sub = pt.arena.EmptyLike();
      std::string_view text = pt.Text(piece);
      for (uint32_t i = 0; i < text.size(); ++i) {
        if (text[i] == ' ') {
          sub.AppendMapped(replacement_, pt.arena.Original(piece.start + i, piece.start + i + 1));
        } else {
          sub.AppendFrom(pt.arena, piece.start + i, piece.start + i + 1);
        }
      }
      bool prepend = false;
      if (std::string_view(sub.text()).substr(0, replacement_.size()) != replacement_) {
        // "first": only the piece that starts the input (original offset 0).
        prepend = scheme_ == PrependScheme::kAlways ||
                  (scheme_ == PrependScheme::kFirst &&
                   pt.arena.Original(piece.start, piece.end).start == 0);
      }
      if (prepend) sub.Prepend(replacement_);
      Range r = AppendPiece(pt, sub);
      if (!split_) {
        out.push_back(r);
        continue;
      }
      matches.clear();
      std::string_view t = pt.Text(r);
      for (size_t p = t.find(replacement_); p != std::string_view::npos;
           p = t.find(replacement_, p + replacement_.size())) {
        matches.push_back(
            {static_cast<uint32_t>(p), static_cast<uint32_t>(p + replacement_.size())});
      }
      MatchSegments(matches, r, false, segs);
      ApplyBehavior(segs, Behavior::kMergedWithNext, out);
    }
    pt.pieces = std::move(out);
    return Status::Ok();
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class SequencePre final : public PreTokenizer {
 public:
  explicit SequencePre(std::vector<std::unique_ptr<PreTokenizer>> parts)
      : parts_(std::move(parts)) {
    for (const auto& p : parts_) byte_level_ = byte_level_ || p->byte_level();
  }
  bool byte_level() const override { return byte_level_; }
  Status PreTokenize(PreTokenized& pt) const override {
    for (const auto& p : parts_) SHOAL_RETURN_IF_ERROR(p->PreTokenize(pt));
    return Status::Ok();
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
  bool byte_level_ = false;
};

}  // namespace

Result<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(Json json, std::string_view where) {
  using Ptr = std::unique_ptr<PreTokenizer>;
  std::string_view type = TypeOf(json);
  if (type == "BertPreTokenizer") return Ptr(new BertPre());
  if (type == "Whitespace") return Ptr(new WhitespacePre());
  if (type == "WhitespaceSplit") return Ptr(new WhitespaceSplitPre());
  if (type == "Punctuation") {
    SHOAL_ASSIGN_OR_RETURN(Behavior b, ParseBehavior(json, where, Behavior::kIsolated));
    return Ptr(new PunctuationPre(b));
  }
  if (type == "Digits") {
    SHOAL_ASSIGN_OR_RETURN(bool individual, OptBool(json, "individual_digits", false, where));
    return Ptr(new DigitsPre(individual));
  }
  if (type == "CharDelimiterSplit") {
    SHOAL_ASSIGN_OR_RETURN(std::string_view d, ReqString(json, "delimiter", where));
    int len = 0;
    if (d.empty() || (DecodeUtf8(d, 0, &len), static_cast<size_t>(len) != d.size())) {
      return LoadError(Path(where, "delimiter"), "expected one character");
    }
    return Ptr(new CharDelimiterPre(DecodeUtf8(d, 0, &len)));
  }
  if (type == "Split") {
    SHOAL_ASSIGN_OR_RETURN(Json pattern, ReqField(json, "pattern", where));
    std::string literal;
    SHOAL_ASSIGN_OR_RETURN(auto regex, ParsePattern(pattern, Path(where, "pattern"), &literal));
    SHOAL_ASSIGN_OR_RETURN(Behavior b, ParseBehavior(json, where, Behavior::kIsolated));
    SHOAL_ASSIGN_OR_RETURN(bool invert, OptBool(json, "invert", false, where));
    return Ptr(new SplitPre(std::move(literal), std::move(regex), b, invert));
  }
  if (type == "ByteLevel") {
    SHOAL_ASSIGN_OR_RETURN(bool prefix, OptBool(json, "add_prefix_space", true, where));
    SHOAL_ASSIGN_OR_RETURN(bool use_regex, OptBool(json, "use_regex", true, where));
    std::unique_ptr<Regex> regex;
    if (use_regex) {
      SHOAL_ASSIGN_OR_RETURN(regex, Regex::Compile(kGpt2Pattern));
    }
    return Ptr(new ByteLevelPre(prefix, std::move(regex)));
  }
  if (type == "Metaspace") {
    SHOAL_ASSIGN_OR_RETURN(auto repl, OptString(json, "replacement", where));
    std::string replacement = repl ? std::string(*repl) : "\xE2\x96\x81";  // ▁
    if (replacement.empty()) return LoadError(Path(where, "replacement"), "must not be empty");
    SHOAL_ASSIGN_OR_RETURN(auto scheme_name, OptString(json, "prepend_scheme", where));
    PrependScheme scheme;
    if (scheme_name) {
      if (*scheme_name == "always") {
        scheme = PrependScheme::kAlways;
      } else if (*scheme_name == "first") {
        scheme = PrependScheme::kFirst;
      } else if (*scheme_name == "never") {
        scheme = PrependScheme::kNever;
      } else {
        return LoadError(Path(where, "prepend_scheme"),
                         "expected \"always\", \"first\" or \"never\"");
      }
    } else {
      // Files older than prepend_scheme say add_prefix_space.
      SHOAL_ASSIGN_OR_RETURN(bool prefix, OptBool(json, "add_prefix_space", true, where));
      scheme = prefix ? PrependScheme::kAlways : PrependScheme::kNever;
    }
    SHOAL_ASSIGN_OR_RETURN(bool split, OptBool(json, "split", true, where));
    return Ptr(new MetaspacePre(std::move(replacement), scheme, split));
  }
  if (type == "Sequence") {
    SHOAL_ASSIGN_OR_RETURN(Json list, ReqField(json, "pretokenizers", where));
    simdjson::dom::array arr;
    if (list.get_array().get(arr) != simdjson::SUCCESS) {
      return LoadError(Path(where, "pretokenizers"), "expected an array");
    }
    std::vector<Ptr> parts;
    bool seen_byte_level = false;
    size_t i = 0;
    for (Json item : arr) {
      std::string at = Index(Path(where, "pretokenizers"), i++);
      SHOAL_ASSIGN_OR_RETURN(Ptr part, ParsePreTokenizer(item, at));
      // After ByteLevel the Rust crate sees byte-mapped text ("Ġ" for " ");
      // we keep raw text, which is the same only for splits that cannot tell
      // the difference: digits, or another ByteLevel.
      std::string_view t = TypeOf(item);
      if (seen_byte_level && t != "Digits" && t != "ByteLevel") {
        return LoadError(
            at, "a \"" + std::string(t) + "\" pre-tokenizer after ByteLevel is not supported");
      }
      seen_byte_level = seen_byte_level || part->byte_level();
      parts.push_back(std::move(part));
    }
    return Ptr(new SequencePre(std::move(parts)));
  }
  if (type.empty()) return LoadError(where, "missing \"type\"");
  return LoadError(where, "pre-tokenizer type \"" + std::string(type) +
                              "\" is not supported (BertPreTokenizer, Whitespace, "
                              "WhitespaceSplit, ByteLevel, Split, Metaspace, Digits, "
                              "Punctuation, CharDelimiterSplit, Sequence)");
}

}  // namespace shoal::native::tok
