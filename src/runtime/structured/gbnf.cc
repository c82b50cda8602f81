#include "runtime/structured/gbnf.h"

#include <algorithm>
#include <map>
#include <utility>

#include "runtime/structured/utf8_ranges.h"

namespace shoal::structured {
namespace {

using Kind = GrammarElement::Kind;
using Elements = std::vector<GrammarElement>;  // one alternative, without its kEnd
using Alternatives = std::vector<Elements>;
using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;  // code points

constexpr int kMaxGroupDepth = 256;

GrammarElement Byte(uint8_t lo, uint8_t hi) { return {Kind::kByte, lo, hi, 0}; }
GrammarElement RuleRef(uint32_t rule) { return {Kind::kRule, 0, 0, rule}; }

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// Code point `c` as UTF-8 byte elements.
void AppendCodePoint(uint32_t c, Elements* out) {
  std::vector<Utf8Sequence> seqs;
  AppendUtf8Sequences(c, c, &seqs);
  for (const Utf8Sequence& seq : seqs) {
    for (auto [lo, hi] : seq) out->push_back(Byte(lo, hi));
  }
}

class GbnfCompiler {
 public:
  GbnfCompiler(std::string_view text, const std::string& field) : text_(text), field_(field) {}

  Result<std::shared_ptr<const Grammar>> Compile() {
    SkipSpace();
    while (pos_ < text_.size()) {
      const size_t at = pos_;
      SHOAL_ASSIGN_OR_RETURN(std::string name, Name());
      SkipSpace();
      if (text_.substr(pos_, 3) != "::=") return Error("expected ::= after '" + name + "'");
      pos_ += 3;
      const uint32_t rule = RuleNamed(name);
      if (defined_[rule]) return Error("rule '" + name + "' is defined twice", at);
      defined_[rule] = true;
      Alternatives alts;
      SHOAL_RETURN_IF_ERROR(ParseAlternatives(&alts));
      rules_[rule] = std::move(alts);
      if (pos_ < text_.size() && text_[pos_] == ')') return Error("unmatched ')'");
    }
    for (const auto& [name, rule] : by_name_) {
      if (!defined_[rule]) return Whole("rule '" + name + "' is used but never defined");
    }
    auto root = by_name_.find("root");
    if (root == by_name_.end()) return Whole("no rule named root");
    SHOAL_RETURN_IF_ERROR(Check(root->second));
    return Flatten(root->second);
  }

 private:
  Status Error(const std::string& why) const { return Error(why, pos_); }
  // About the grammar as a whole.
  Status Whole(const std::string& why) const { return InvalidInput(field_ + ": " + why); }
  Status Error(const std::string& why, size_t at) const {
    return InvalidInput(field_ + ": grammar: " + why + " (at byte " + std::to_string(at) + ")");
  }

  void SkipSpace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  // Whether `name ::=` starts here: the end of the rule before.
  bool AtRuleStart() const {
    size_t p = pos_;
    while (p < text_.size() && IsNameChar(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\n' || text_[p] == '\r')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  Result<std::string> Name() {
    const size_t start = pos_;
    while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
    if (pos_ == start) return Error("expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  uint32_t RuleNamed(const std::string& name) {
    auto [it, added] = by_name_.emplace(name, static_cast<uint32_t>(rules_.size()));
    if (added) {
      rules_.emplace_back();
      defined_.push_back(false);
    }
    return it->second;
  }

  uint32_t NewRule(Alternatives alts) {
    rules_.push_back(std::move(alts));
    defined_.push_back(true);
    return static_cast<uint32_t>(rules_.size() - 1);
  }

  Status Count(size_t n) {
    elements_ += n;
    if (elements_ > kMaxGrammarElements) {
      return Error("too large (over " + std::to_string(kMaxGrammarElements) + " elements)");
    }
    return Status::Ok();
  }

  Status ParseAlternatives(Alternatives* out) {
    for (;;) {
      Elements seq;
      SHOAL_RETURN_IF_ERROR(ParseSequence(&seq));
      out->push_back(std::move(seq));
      if (pos_ < text_.size() && text_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return Status::Ok();
    }
  }

  Status ParseSequence(Elements* out) {
    for (;;) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] == '|' || text_[pos_] == ')' || AtRuleStart()) return Status::Ok();
      Elements item;
      SHOAL_RETURN_IF_ERROR(ParseItem(&item));
      SHOAL_RETURN_IF_ERROR(ParseRepetition(&item));
      SHOAL_RETURN_IF_ERROR(Count(item.size()));
      out->insert(out->end(), item.begin(), item.end());
    }
  }

  Status ParseItem(Elements* out) {
    const char c = text_[pos_];
    if (c == '"') return ParseLiteral(out);
    if (c == '[') return ParseClass(out);
    if (c == '.') {
      ++pos_;
      return AppendClass({{0, kMaxCodePoint}}, out);
    }
    if (c == '(') {
      if (++depth_ > kMaxGroupDepth) return Error("groups nested deeper than " + std::to_string(kMaxGroupDepth));
      ++pos_;
      Alternatives alts;
      SHOAL_RETURN_IF_ERROR(ParseAlternatives(&alts));
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ')') return Error("expected ')'");
      ++pos_;
      --depth_;
      out->push_back(RuleRef(NewRule(std::move(alts))));
      return Status::Ok();
    }
    if (IsNameChar(c)) {
      SHOAL_ASSIGN_OR_RETURN(std::string name, Name());
      out->push_back(RuleRef(RuleNamed(name)));
      return Status::Ok();
    }
    return Error(std::string("unexpected '") + c + "'");
  }

  // x* x+ x? x{m} x{m,} x{m,n}, as rules: x* is s ::= x s | (empty).
  Status ParseRepetition(Elements* item) {
    if (pos_ >= text_.size()) return Status::Ok();
    const char c = text_[pos_];
    int64_t min = 0, max = -1;  // -1: no bound
    if (c == '*') {
      ++pos_;
    } else if (c == '+') {
      ++pos_;
      min = 1;
    } else if (c == '?') {
      ++pos_;
      max = 1;
    } else if (c == '{') {
      ++pos_;
      SHOAL_ASSIGN_OR_RETURN(min, Number());
      max = min;
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        max = -1;
        if (pos_ < text_.size() && text_[pos_] != '}') {
          SHOAL_ASSIGN_OR_RETURN(max, Number());
        }
      }
      if (pos_ >= text_.size() || text_[pos_] != '}') return Error("expected '}'");
      ++pos_;
      if (max >= 0 && max < min) return Error("a repetition's maximum is under its minimum");
    } else {
      return Status::Ok();
    }
    const Elements x = std::move(*item);
    item->clear();
    SHOAL_RETURN_IF_ERROR(Count(x.size() * static_cast<size_t>(min + (max < 0 ? 1 : max - min))));
    for (int64_t i = 0; i < min; ++i) item->insert(item->end(), x.begin(), x.end());
    if (max < 0) {
      const uint32_t star = NewRule({});
      Elements again = x;
      again.push_back(RuleRef(star));
      rules_[star] = {std::move(again), {}};
      item->push_back(RuleRef(star));
    } else if (max > min) {
      // Up to max - min more, each optional once the one before is there:
      // o1 ::= x | (empty); o2 ::= x o1 | (empty); ...
      uint32_t inner = NewRule({x, {}});
      for (int64_t i = 1; i < max - min; ++i) {
        Elements more = x;
        more.push_back(RuleRef(inner));
        inner = NewRule({std::move(more), {}});
      }
      item->push_back(RuleRef(inner));
    }
    return Status::Ok();
  }

  Result<int64_t> Number() {
    const size_t start = pos_;
    int64_t n = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9' && n < 1'000'000) {
      n = n * 10 + (text_[pos_++] - '0');
    }
    if (pos_ == start) return Error("expected a number");
    if (n >= 1'000'000) return Error("a repetition count over a million");
    return n;
  }

  // One character of a literal or class, escapes decoded.
  Result<uint32_t> Char() {
    if (pos_ >= text_.size()) return Error("unexpected end");
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c != '\\') {  // a UTF-8 character as it is written
      auto cp = DecodeUtf8(text_, &pos_);
      if (!cp) return Error("not UTF-8");
      return *cp;
    }
    if (++pos_ >= text_.size()) return Error("unexpected end after '\\'");
    const char e = text_[pos_++];
    switch (e) {
      case 'n': return uint32_t{'\n'};
      case 'r': return uint32_t{'\r'};
      case 't': return uint32_t{'\t'};
      case 'x': return Hex(2);
      case 'u': return Hex(4);
      case 'U': return Hex(8);
      case '\\': case '"': case '[': case ']': case '-': case '^': case '/':
        return static_cast<uint32_t>(e);
      default:
        return Error(std::string("unknown escape '\\") + e + "'", pos_ - 2);
    }
  }

  Result<uint32_t> Hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i, ++pos_) {
      if (pos_ >= text_.size()) return Error("unexpected end in a hex escape");
      const char h = text_[pos_];
      const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) return Error("expected a hex digit");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    if (!IsCharacter(v)) return Error("not a character (a surrogate, or over U+10FFFF)");
    return v;
  }

  Status ParseLiteral(Elements* out) {
    ++pos_;  // "
    while (pos_ < text_.size() && text_[pos_] != '"') {
      SHOAL_ASSIGN_OR_RETURN(uint32_t c, Char());
      AppendCodePoint(c, out);
    }
    if (pos_ >= text_.size()) return Error("unterminated literal");
    ++pos_;
    return Status::Ok();
  }

  Status ParseClass(Elements* out) {
    ++pos_;  // [
    const bool negated = pos_ < text_.size() && text_[pos_] == '^';
    if (negated) ++pos_;
    Ranges ranges;
    while (pos_ < text_.size() && text_[pos_] != ']') {
      SHOAL_ASSIGN_OR_RETURN(uint32_t lo, Char());
      uint32_t hi = lo;
      if (pos_ + 1 < text_.size() && text_[pos_] == '-' && text_[pos_ + 1] != ']') {
        ++pos_;
        SHOAL_ASSIGN_OR_RETURN(hi, Char());
        if (hi < lo) return Error("a class range runs backwards");
      }
      ranges.emplace_back(lo, hi);
    }
    if (pos_ >= text_.size()) return Error("unterminated character class");
    ++pos_;
    std::sort(ranges.begin(), ranges.end());
    Ranges merged;
    for (auto r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    if (negated) {
      Ranges complement;
      uint32_t next = 0;
      for (auto [lo, hi] : merged) {
        if (lo > next) complement.emplace_back(next, lo - 1);
        next = hi + 1;
      }
      if (next <= kMaxCodePoint) complement.emplace_back(next, kMaxCodePoint);
      merged = std::move(complement);
    }
    return AppendClass(merged, out);
  }

  // A class: one byte element when it is one byte range, else a rule with
  // an alternative per UTF-8 byte sequence.
  Status AppendClass(const Ranges& ranges, Elements* out) {
    std::vector<Utf8Sequence> seqs;
    for (auto [lo, hi] : ranges) AppendUtf8Sequences(lo, hi, &seqs);
    if (seqs.size() == 1 && seqs[0].size() == 1) {
      out->push_back(Byte(seqs[0][0].first, seqs[0][0].second));
      return Status::Ok();
    }
    Alternatives alts;
    for (const Utf8Sequence& seq : seqs) {
      Elements e;
      for (auto [lo, hi] : seq) e.push_back(Byte(lo, hi));
      SHOAL_RETURN_IF_ERROR(Count(e.size()));
      alts.push_back(std::move(e));
    }
    out->push_back(RuleRef(NewRule(std::move(alts))));
    return Status::Ok();
  }

  // No left recursion, and a root that derives some string.
  Status Check(uint32_t root) {
    const size_t n = rules_.size();
    std::vector<char> nullable(n, 0), productive(n, 0);
    auto fixpoint = [&](std::vector<char>& flag, bool bytes_count) {
      for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < n; ++r) {
          if (flag[r]) continue;
          for (const Elements& alt : rules_[r]) {
            const bool all = std::all_of(alt.begin(), alt.end(), [&](const GrammarElement& e) {
              return e.kind == Kind::kRule ? flag[e.rule] != 0 : bytes_count;
            });
            if (all) {
              flag[r] = 1;
              changed = true;
              break;
            }
          }
        }
      }
    };
    fixpoint(nullable, /*bytes_count=*/false);
    fixpoint(productive, /*bytes_count=*/true);
    if (!productive[root]) return Whole("no output can satisfy it (it derives no string at all)");
    // Left corners: the rules an alternative may enter before a byte.
    // A depth-first walk of them; a rule met again on the path is a cycle.
    struct Frame {
      uint32_t rule;
      std::vector<uint32_t> corners;
      size_t next = 0;
    };
    std::vector<char> color(n, 0);  // 0 unvisited, 1 on the path, 2 done
    for (uint32_t start = 0; start < n; ++start) {
      if (color[start]) continue;
      std::vector<Frame> stack;
      auto push = [&](uint32_t r) {
        Frame f{r, {}, 0};
        for (const Elements& alt : rules_[r]) {
          for (const GrammarElement& e : alt) {
            if (e.kind != Kind::kRule) break;
            f.corners.push_back(e.rule);
            if (!nullable[e.rule]) break;
          }
        }
        color[r] = 1;
        stack.push_back(std::move(f));
      };
      push(start);
      while (!stack.empty()) {
        Frame& f = stack.back();
        if (f.next == f.corners.size()) {
          color[f.rule] = 2;
          stack.pop_back();
          continue;
        }
        const uint32_t c = f.corners[f.next++];
        if (color[c] == 1) return Whole("it is left-recursive (a rule comes back to itself before a byte: a schema that refers to itself with nothing before)");
        if (color[c] == 0) push(c);
      }
    }
    return Status::Ok();
  }

  std::shared_ptr<const Grammar> Flatten(uint32_t root) const {
    auto g = std::make_shared<Grammar>();
    g->root = root;
    g->alternatives.resize(rules_.size());
    g->elements.reserve(elements_ + rules_.size() * 2);
    for (size_t r = 0; r < rules_.size(); ++r) {
      for (const Elements& alt : rules_[r]) {
        g->alternatives[r].push_back(static_cast<uint32_t>(g->elements.size()));
        g->elements.insert(g->elements.end(), alt.begin(), alt.end());
        g->elements.push_back(GrammarElement{});  // kEnd
      }
    }
    return g;
  }

  std::string_view text_;
  const std::string& field_;
  size_t pos_ = 0;
  int depth_ = 0;  // groups open: the parser recurses per group
  size_t elements_ = 0;
  std::vector<Alternatives> rules_;
  std::vector<bool> defined_;
  std::map<std::string, uint32_t> by_name_;
};

}  // namespace

Result<std::shared_ptr<const Grammar>> CompileGbnf(std::string_view text, const std::string& field) {
  return GbnfCompiler(text, field).Compile();
}

std::string GbnfLiteral(std::string_view bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

}  // namespace shoal::structured
