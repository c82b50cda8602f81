// A regular expression or a list of choices as GBNF text (gbnf.h): the
// native route's `response_format` types "regex" and "choice". The output
// matches the whole pattern (as Python's re.fullmatch); ^ and $ at its ends
// change nothing.
//
// The regex syntax (Python re / ECMAScript, the common part): literals,
// `.` (any character but a newline), classes [...] and [^...] with ranges,
// \d \w \s \D \W \S (ASCII, inside classes too, negated ones outside
// only), escapes \n \r \t \f \v \xHH \uHHHH and any escaped punctuation,
// groups ( ), (?: ), (?P<name> ) and (?<name> ), `|`, and the quantifiers
// * + ? {m} {m,} {m,n}, greedy or lazy (the same strings match). Refused
// with INVALID_INPUT naming `field`: back-references, lookaround, \b and
// other zero-width assertions, flags, possessive quantifiers, groups nested
// more than 64 deep.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace shoal::structured {

inline constexpr size_t kMaxPatternBytes = 16 * 1024;

Result<std::string> RegexGrammar(std::string_view pattern, const std::string& field);

// Exactly one of `choices` (at least one, each non-empty).
Result<std::string> ChoiceGrammar(const std::vector<std::string>& choices, const std::string& field);

}  // namespace shoal::structured
