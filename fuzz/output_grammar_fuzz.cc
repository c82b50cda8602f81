// The output-format compilers (src/runtime/structured): the first byte picks
// what the rest is — a regular expression (RegexGrammar), a JSON Schema
// (JsonSchemaGrammar) or GBNF text as it is — compiled with CompileGbnf,
// then the grammar's matcher run over the input's own bytes.
// What must hold: every refusal is INVALID_INPUT; a compiled grammar starts
// alive, and advancing it never crashes; a dead state stays dead.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "runtime/structured/gbnf.h"
#include "runtime/structured/grammar_state.h"
#include "runtime/structured/json_schema_grammar.h"
#include "runtime/structured/regex_grammar.h"

using namespace shoal;
using namespace shoal::structured;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  Result<std::string> gbnf = std::string(text);
  switch (data[0] % 3) {
    case 0: gbnf = RegexGrammar(text, "pattern"); break;
    case 1: gbnf = JsonSchemaGrammar(text); break;
    default: break;
  }
  if (!gbnf.ok()) {
    FUZZ_CHECK(gbnf.status().code() == Code::kInvalidInput);
    return 0;
  }
  auto grammar = CompileGbnf(*gbnf, "f");
  if (!grammar.ok()) {
    FUZZ_CHECK(grammar.status().code() == Code::kInvalidInput);
    return 0;
  }
  GrammarState state = GrammarState::Start(**grammar);
  FUZZ_CHECK(!state.dead());
  for (size_t i = 0; i < text.size() && i < 256; ++i) {
    state = state.Advance(static_cast<uint8_t>(text[i]));
    if (state.dead()) {
      FUZZ_CHECK(state.Advance('a').dead());
      break;
    }
  }
  return 0;
}
