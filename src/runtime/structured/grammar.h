// Grammar: a context-free grammar over bytes, the form every output
// constraint compiles to (JSON Schema, json_object, a regular expression, a
// list of choices — each written as GBNF text first, gbnf.h). Working on
// bytes rather than characters lets a token that ends inside a UTF-8
// character be checked like any other: a character class is compiled to
// the UTF-8 byte sequences of its code points (utf8_ranges.h).
//
// A rule is a list of alternatives; an alternative is a run of elements in
// `elements`, ended by a kEnd element. An element matches one byte in
// [lo, hi] or refers to a rule. A position is an index into `elements`.
//
// Invariants (checked by Compile in gbnf.cc): every rule referred to
// exists, no rule is left-recursive (expanding one never comes back to it
// before a byte is consumed), and the root can derive at least one string.
//
// Threading: immutable once built; shared by every sequence that uses it.
#pragma once

#include <cstdint>
#include <vector>

namespace shoal::structured {

struct GrammarElement {
  enum class Kind : uint8_t { kByte, kRule, kEnd };
  Kind kind = Kind::kEnd;
  uint8_t lo = 0, hi = 0;  // kByte: the bytes matched
  uint32_t rule = 0;       // kRule: which
};

struct Grammar {
  std::vector<GrammarElement> elements;
  // Per rule, the position of each alternative's first element.
  std::vector<std::vector<uint32_t>> alternatives;
  uint32_t root = 0;
};

}  // namespace shoal::structured
