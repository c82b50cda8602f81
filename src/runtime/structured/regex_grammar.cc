#include "runtime/structured/regex_grammar.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "runtime/structured/gbnf.h"
#include "runtime/structured/utf8_ranges.h"

namespace shoal::structured {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

constexpr int kMaxRegexDepth = 64;  // the translator recurses per group

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\r'}, {' ', ' '}};  // \t \n \v \f \r and space

Ranges Complement(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  uint32_t next = 0;
  for (auto [lo, hi] : r) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = std::max(next, hi + 1);
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

// A GBNF class of `ranges`, every bound escaped.
std::string ClassText(const Ranges& ranges) {
  auto esc = [](uint32_t c) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\U%08x", c);
    return std::string(buf);
  };
  std::string out = "[";
  for (auto [lo, hi] : ranges) out += lo == hi ? esc(lo) : esc(lo) + "-" + esc(hi);
  return out + "]";
}

std::string CodePointLiteral(uint32_t c) {
  std::vector<Utf8Sequence> seq;
  AppendUtf8Sequences(c, c, &seq);
  std::string bytes;
  for (auto [lo, hi] : seq.at(0)) bytes += static_cast<char>(lo);
  return GbnfLiteral(bytes);
}

class RegexTranslator {
 public:
  RegexTranslator(std::string_view p, const std::string& field) : p_(p), field_(field) {}

  Result<std::string> Translate() {
    if (!p_.empty() && p_.front() == '^') p_.remove_prefix(1);
    if (!p_.empty() && p_.back() == '$' && !(p_.size() >= 2 && p_[p_.size() - 2] == '\\')) p_.remove_suffix(1);
    SHOAL_ASSIGN_OR_RETURN(std::string body, Alternation());
    if (pos_ < p_.size()) return Error("unmatched ')'");
    return "root ::= " + body + "\n";
  }

 private:
  Status Error(const std::string& why) const {
    return InvalidInput(field_ + ": " + why + " (at character " + std::to_string(pos_) + ")");
  }
  bool More() const { return pos_ < p_.size(); }

  Result<std::string> Alternation() {
    std::string out;
    for (;;) {
      SHOAL_ASSIGN_OR_RETURN(std::string seq, Sequence());
      out += seq;
      if (More() && p_[pos_] == '|') {
        ++pos_;
        out += " | ";
        continue;
      }
      return "( " + out + " )";
    }
  }

  Result<std::string> Sequence() {
    std::string out;
    while (More() && p_[pos_] != '|' && p_[pos_] != ')') {
      SHOAL_ASSIGN_OR_RETURN(std::string atom, Atom());
      SHOAL_ASSIGN_OR_RETURN(std::string rep, Quantifier());
      out += (out.empty() ? "" : " ") + atom + rep;
    }
    return out;
  }

  Result<std::string> Quantifier() {
    if (!More()) return std::string();
    std::string q;
    const char c = p_[pos_];
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      ++pos_;
    } else if (c == '{') {
      const size_t close = p_.find('}', pos_);
      if (close == std::string_view::npos) return Error("'{' without '}'");
      const std::string_view body = p_.substr(pos_ + 1, close - pos_ - 1);
      if (body.empty() || body.find_first_not_of("0123456789,") != std::string_view::npos || body.front() == ',' ||
          std::count(body.begin(), body.end(), ',') > 1) {
        return Error("a repetition is {m}, {m,} or {m,n}");
      }
      q = "{" + std::string(body) + "}";
      pos_ = close + 1;
    } else {
      return std::string();
    }
    if (More() && p_[pos_] == '?') {
      ++pos_;  // lazy: the same strings match the whole pattern
    } else if (More() && p_[pos_] == '+') {
      return Error("possessive quantifiers are not supported");
    }
    if (More() && (p_[pos_] == '*' || p_[pos_] == '+' || p_[pos_] == '?' || p_[pos_] == '{')) {
      return Error("a quantifier after a quantifier");
    }
    return q;
  }

  Result<std::string> Atom() {
    const char c = p_[pos_];
    if (c == '(') {
      if (++depth_ > kMaxRegexDepth) return Error("groups nested deeper than " + std::to_string(kMaxRegexDepth));
      ++pos_;
      if (More() && p_[pos_] == '?') {
        const std::string_view rest = p_.substr(pos_);
        if (rest.substr(0, 2) == "?:") {
          pos_ += 2;
        } else if (rest.substr(0, 3) == "?P<" || (rest.substr(0, 2) == "?<" && rest.substr(0, 3) != "?<=" && rest.substr(0, 3) != "?<!")) {
          const size_t close = p_.find('>', pos_);
          if (close == std::string_view::npos) return Error("a group name without '>'");
          pos_ = close + 1;
        } else {
          return Error("lookaround, flags and other (?...) groups are not supported");
        }
      }
      SHOAL_ASSIGN_OR_RETURN(std::string inner, Alternation());
      if (!More() || p_[pos_] != ')') return Error("'(' without ')'");
      ++pos_;
      --depth_;
      return inner;
    }
    if (c == '[') return Class();
    if (c == '.') {
      ++pos_;
      return ClassText(Complement({{'\n', '\n'}}));
    }
    if (c == '^' || c == '$') return Error("anchors inside the pattern are not supported");
    if (c == '*' || c == '+' || c == '?' || c == '{') return Error("a quantifier with nothing before it");
    if (c == '\\') {
      SHOAL_ASSIGN_OR_RETURN(Ranges r, Escape(/*in_class=*/false));
      return r.size() == 1 && r[0].first == r[0].second ? CodePointLiteral(r[0].first) : ClassText(r);
    }
    SHOAL_ASSIGN_OR_RETURN(uint32_t cp, CodePoint());
    return CodePointLiteral(cp);
  }

  // The next UTF-8 character, as it is written.
  Result<uint32_t> CodePoint() {
    auto cp = DecodeUtf8(p_, &pos_);
    if (!cp) return Error("not UTF-8");
    return *cp;
  }

  Result<uint32_t> Hex(int digits) {
    if (pos_ + digits > p_.size()) return Error("a hex escape cut short");
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char h = p_[pos_++];
      const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) return Error("expected a hex digit");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    if (!IsCharacter(v)) return Error("a surrogate is not a character");
    return v;
  }

  // After a backslash: the characters it stands for.
  Result<Ranges> Escape(bool in_class) {
    ++pos_;
    if (!More()) return Error("a pattern ending in '\\'");
    const char e = p_[pos_++];
    auto one = [](uint32_t c) { return Ranges{{c, c}}; };
    switch (e) {
      case 'd': return kDigit;
      case 'w': return kWord;
      case 's': return kSpace;
      case 'D': case 'W': case 'S':
        if (in_class) return Error("\\D, \\W and \\S inside a class are not supported");
        return Complement(e == 'D' ? kDigit : e == 'W' ? kWord : kSpace);
      case 'n': return one('\n');
      case 'r': return one('\r');
      case 't': return one('\t');
      case 'f': return one('\f');
      case 'v': return one('\v');
      case '0': return one(0);
      case 'x': {
        SHOAL_ASSIGN_OR_RETURN(uint32_t v, Hex(2));
        return one(v);
      }
      case 'u': {
        SHOAL_ASSIGN_OR_RETURN(uint32_t v, Hex(4));
        return one(v);
      }
      default:
        break;
    }
    if (e == 'b' && in_class) return one('\b');
    const bool punct = (e >= '!' && e <= '/') || (e >= ':' && e <= '@') || (e >= '[' && e <= '`') || (e >= '{' && e <= '~');
    if (punct) return one(static_cast<uint32_t>(e));
    if (e >= '1' && e <= '9') return Error("back-references are not supported");
    return Error(std::string("'\\") + e + "' is not supported (zero-width assertions and this escape are refused)");
  }

  Result<std::string> Class() {
    ++pos_;  // [
    const bool negated = More() && p_[pos_] == '^';
    if (negated) ++pos_;
    Ranges ranges;
    bool first = true;
    while (More() && (p_[pos_] != ']' || first)) {
      first = false;
      Ranges item;
      if (p_[pos_] == '\\') {
        SHOAL_ASSIGN_OR_RETURN(item, Escape(/*in_class=*/true));
      } else {
        SHOAL_ASSIGN_OR_RETURN(uint32_t c, CodePoint());
        item = {{c, c}};
      }
      if (item.size() == 1 && item[0].first == item[0].second && pos_ + 1 < p_.size() && p_[pos_] == '-' &&
          p_[pos_ + 1] != ']') {
        ++pos_;
        Ranges hi;
        if (p_[pos_] == '\\') {
          SHOAL_ASSIGN_OR_RETURN(hi, Escape(/*in_class=*/true));
        } else {
          SHOAL_ASSIGN_OR_RETURN(uint32_t c, CodePoint());
          hi = {{c, c}};
        }
        if (hi.size() != 1 || hi[0].first != hi[0].second) return Error("a class range ends in a class");
        if (hi[0].first < item[0].first) return Error("a class range runs backwards");
        item = {{item[0].first, hi[0].first}};
      }
      ranges.insert(ranges.end(), item.begin(), item.end());
    }
    if (!More()) return Error("'[' without ']'");
    ++pos_;
    if (negated) ranges = Complement(std::move(ranges));
    std::sort(ranges.begin(), ranges.end());
    if (ranges.empty()) return Error("a class that matches nothing");
    return ClassText(ranges);
  }

  std::string_view p_;
  const std::string& field_;
  size_t pos_ = 0;
  int depth_ = 0;  // groups open
};

}  // namespace

Result<std::string> RegexGrammar(std::string_view pattern, const std::string& field) {
  if (pattern.empty()) return InvalidInput(field + ": an empty pattern");
  if (pattern.size() > kMaxPatternBytes) {
    return InvalidInput(field + ": over " + std::to_string(kMaxPatternBytes) + " bytes");
  }
  return RegexTranslator(pattern, field).Translate();
}

Result<std::string> ChoiceGrammar(const std::vector<std::string>& choices, const std::string& field) {
  if (choices.empty()) return InvalidInput(field + ": at least one choice");
  std::string out = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (choices[i].empty()) return InvalidInput(field + "[" + std::to_string(i) + "]: an empty choice");
    out += (i ? " | " : "") + GbnfLiteral(choices[i]);
  }
  return out + "\n";
}

}  // namespace shoal::structured
