// GBNF text (the grammar format of llama.cpp's grammars/README.md) compiled
// into a byte-level Grammar (grammar.h). Shoal's converters write it
// (json_schema_grammar.h, regex_grammar.h); the llama.cpp runtime hands the
// same text to llama.cpp's own grammar sampler.
//
// The syntax read: rules `name ::= alternatives` (a rule ends where the
// next `name ::=` begins), `|`, grouping `( )`, literals "..." and
// character classes [...] / [^...] with the escapes \n \r \t \\ \" \] \-
// \xHH \uHHHH \UHHHHHHHH, `.` for any character, rule names, the postfix
// repetitions * + ? {m} {m,} {m,n}, and # comments. Literals and classes
// are Unicode code points, matched as their UTF-8 bytes.
//
// Refused with INVALID_INPUT naming `field`: a syntax error, a rule used
// and never defined, no `root`, left recursion, a root that derives no
// string at all ("cannot be satisfied"), more than kMaxGrammarElements,
// groups nested more than 256 deep.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "runtime/structured/grammar.h"

namespace shoal::structured {

inline constexpr size_t kMaxGrammarElements = 1 << 20;

Result<std::shared_ptr<const Grammar>> CompileGbnf(std::string_view text, const std::string& field);

// `bytes` (UTF-8) as a GBNF literal, quotes and escapes added: for writers.
std::string GbnfLiteral(std::string_view bytes);

}  // namespace shoal::structured
