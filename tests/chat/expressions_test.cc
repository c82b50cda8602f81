// Expressions, filters, tests and methods on small templates. Each expected
// output is what @huggingface/jinja 0.5.11 renders for the same template and
// variables (with object keys sorted, as nlohmann::json holds them); where it
// throws, ChatTemplate must fail with INVALID_INPUT.
#include <gtest/gtest.h>

#include <iterator>
#include <optional>
#include <string>

#include "runtime/native/chat/chat_template.h"

namespace shoal::native {
namespace {

struct Case {
  const char* source;
  const char* variables;                // JSON
  std::optional<std::string> expected;  // nullopt: rendering fails
};

const Case kCases[] = {
    {R"j({{ 1 + 2 * 3 }})j", R"j({})j", R"j(7)j"},
    {R"j({{ (1 + 2) * 3 }})j", R"j({})j", R"j(9)j"},
    {R"j({{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 4 / 2 }})j", R"j({})j",
     R"j(3 -4 1 -1 3.5 2.0)j"},
    {R"j({{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ 3.0 if false else 1 }})j",
     R"j({})j", R"j(1024 0.5 2.5 0.30000000000000004 1)j"},
    {R"j({{ x * 2 }} {{ x - 0.5 }} {{ -x }} {{ +x }} {{ - - x }})j", R"j({"x": 3})j",
     R"j(6 2.5 -3 3 3)j"},
    {R"j({{ 'a' ~ 1 ~ true ~ 2.5 }} {{ 'n=' + 3 }} {{ 1.0 ~ '' }})j", R"j({})j",
     R"j(a1true2.5 n=3 1)j"},
    {R"j({{ [1, 2] + [3] }} {{ [] }} {{ {'b': 1, 'a': [true, none]} }})j", R"j({})j",
     R"j([1, 2, 3] [] {"b": 1, "a": [true, null]})j"},
    {R"j({{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' == 'a' }} {{ none == missing }} {{ 'a' != 'b' }} {{ [1] == [1] }})j",
     R"j({})j", R"j(true true true true true false)j"},
    {R"j({{ 1 < 2 }} {{ 2 <= 2 }} {{ 3 > 4 }} {{ 1.5 >= 1 }})j", R"j({})j",
     R"j(true true false true)j"},
    {R"j({{ 'b' in 'abc' }} {{ 'z' not in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in d }} {{ 'x' in d }} {{ 1 in missing }} {{ 1 not in missing }})j",
     R"j({"d": {"k": 1}})j", R"j(true true true true false false true)j"},
    {R"j({{ true and 'yes' }} {{ 0 or 'fallback' }} {{ not [] }} {{ none or [] }} {{ '' and x }})j",
     R"j({})j", R"j(yes fallback true [] )j"},
    {R"j({{ 'yes' if flag else 'no' }} {{ 'kept' if flag }}|{{ 'dropped' if not flag }}|)j",
     R"j({"flag": true})j", R"j(yes kept||)j"},
    {R"j({{ s[1:] }} {{ s[:-1] }} {{ s[::-1] }} {{ s[-2:] }} {{ s[4:2] }} {{ s[::2] }} {{ s[1:4:2] }})j",
     R"j({"s": "abcdef"})j", R"j(bcdef abcde fedcba ef  ace bd)j"},
    {R"j({{ xs[1:] }} {{ xs[::-1] }} {{ xs[-1] }} {{ xs[5] is defined }} {{ xs[0:0] }})j",
     R"j({"xs": [1, 2, 3]})j", R"j([2, 3] [3, 2, 1] 3 false [])j"},
    {R"j({{ s[0] }}{{ s[-1] }} {{ s|length }} {{ s.length }})j", R"j({"s": "héllo wörld"})j",
     R"j(hd 11 11)j"},
    {R"j({{ d.a }} {{ d['b'].c }} {{ d.missing }}|{{ d.missing.deeper }}|{{ d.get('a') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }})j",
     R"j({"d": {"a": 1, "b": {"c": 2}}})j", R"j(1 2 ||1 dflt )j"},
    {R"j({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {{ d.keys() }} {{ d.values() }} {{ d|items }})j",
     R"j({"d": {"x": 1, "y": "two"}})j",
     R"j(x=1;y=two; ["x", "y"] [1, "two"] [["x", 1], ["y", "two"]])j"},
    {R"j({{ '  hi  '.strip() }}|{{ '\n\nx\n'.lstrip('\n') }}|{{ 'x  \n'.rstrip() }}|{{ '  a b '.strip('a') }}|)j",
     R"j({})j",
     R"j(hi|x
|x|a b|)j"},
    {R"j({{ 'Hello World'.upper() }} {{ 'Hello'.lower() }} {{ 'hello big-world_x y'.title() }} {{ 'hello'.capitalize() }})j",
     R"j({})j", R"j(HELLO WORLD hello Hello Big-World_x Y Hello)j"},
    {R"j({{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('bc') }} {{ 'abc'.startswith(('x', 'a')) }} {{ 'abc'.endswith('x') }})j",
     R"j({})j", R"j(true true true false)j"},
    {R"j({{ 'a,b,,c'.split(',') }} {{ '  a  b c '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a b c'.split(none, 1) }} {{ 'x</think>y</think>z'.split('</think>')[-1] }})j",
     R"j({})j", R"j(["a", "b", "", "c"] ["a", "b", "c"] ["a", "b,c"] ["a", "b c"] z)j"},
    {R"j({{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'ab'.replace('', '-') }} {{ 'ab'.replace('x', 'y') }})j",
     R"j({})j", R"j(bbb bba -a-b- ab)j"},
    {R"j({{ xs|length }} {{ xs|first }} {{ xs|last }} {{ xs|join(', ') }} {{ xs|join }} {{ 'abc'|join('-') }} {{ xs|list }})j",
     R"j({"xs": ["a", "b", "c"]})j", R"j(3 a c a, b, c abc a-b-c ["a", "b", "c"])j"},
    {R"j({{ '  x  '|trim }}|{{ 'Ab'|upper }}|{{ 'Ab'|lower }}|{{ 42|string }}|{{ true|string }}|{{ [1, 'a']|string }}|{{ '12abc'|int }}|{{ 'x'|int }}|{{ 3.7|int }}|{{ ' -5'|int }})j",
     R"j({})j", R"j(x|AB|ab|42|true|[1, "a"]|12|0|3|-5)j"},
    {R"j({{ missing|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ 0|default(5) }} {{ none|default('d') }})j",
     R"j({})j", R"j(d  d 0 )j"},
    {R"j({{ msgs|selectattr('role', 'equalto', 'user')|list|length }})j", R"j({"msgs": []})j",
     R"j(0)j"},
    {R"j({% set users = msgs|selectattr('role', 'equalto', 'user')|list %}{{ users|length }} {{ (msgs|selectattr('tool'))|length }} {{ msgs|rejectattr('role', 'eq', 'user')|length }} {{ users[-1] == msgs[2] }} {{ users[0] == msgs[2] }})j",
     R"j({"msgs": [{"content": "a", "role": "user"}, {"content": "b", "role": "assistant", "tool": true}, {"content": "a", "role": "user"}]})j",
     R"j(2 1 1 true false)j"},
    {R"j({{ x|tojson }} {{ 'q"\\\n\t\u0001é'|tojson }} {{ 2.0|tojson }} {{ none|tojson }} {{ missing|tojson }})j",
     R"j({"x": {"a": {}, "b": [1, 2.5, "s", true, null]}})j",
     R"j({"a": {}, "b": [1, 2.5, "s", true, null]} "q\"\\\n\t\u0001é" 2 null null)j"},
    {R"j({{ x|tojson(indent=2) }})j", R"j({"x": {"a": [1, {"b": []}], "c": {}}})j",
     R"j({
  "a": [
    1,
    {
      "b": []
    }
  ],
  "c": {}
})j"},
    {R"j({{ x is defined }} {{ y is undefined }} {{ n is none }} {{ s is string }} {{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ d is mapping }} {{ xs is mapping }} {{ s is iterable }} {{ xs is iterable }} {{ d is iterable }} {{ d is sequence }} {{ f is false }} {{ t is true }} {{ 1 is true }} {{ x is not none }})j",
     R"j({"d": {}, "f": false, "n": null, "s": "s", "t": true, "x": 1, "xs": []})j",
     R"j(true true true true true true false true false true true false true true true false true)j"},
    {R"j({{ 1 is integer }} {{ 1.5 is integer }} {{ t is boolean }})j", R"j({"t": true})j",
     R"j(true false true)j"},
    {R"j({{ 'a' 'b' "c" }} {{ "it's" }} {{ '\x41\u00e9' }})j", R"j({})j", R"j(abc it's Aé)j"},
    {R"j({{ n }} {{ f }} {{ big }} {{ tiny }} {{ neg0 }} {{ huge }} {{ f2 }})j",
     R"j({"big": 1e+21, "f": 2.5, "f2": 1, "huge": 1.5e+21, "n": 5, "neg0": 0, "tiny": 1e-06})j",
     R"j(5 2.5 1e+21 0.000001 0 1.5e+21 1)j"},
    {R"j({{ xs }} {{ d }} {{ t }} {{ n }}|{{ missing }}|)j",
     R"j({"d": {"k": [true]}, "n": null, "t": false, "xs": [1, "a", null]})j",
     R"j([1, "a", null] {"k": [true]} false ||)j"},
    {R"j({% set ns = namespace(a=1, c='x') %}{{ ns.a }}{% set ns.a = ns.a + 1 %}{{ ns.a }} {{ ns.b }} {{ ns }})j",
     R"j({})j", R"j(12  {"a": 2, "c": "x"})j"},
    {R"j({{ messages|length - 1 }} {{ not(true and false) }} {{ -1 + 1 }} {{ [1, 2][-1] }} {{ (1, 2)[0] }})j",
     R"j({"messages": [1, 2, 3]})j", R"j(2 true 0 2 1)j"},
    // @huggingface/jinja: "Cannot perform operation ~ on undefined values"
    {R"j({{ 'x' ~ missing }})j", R"j({})j", std::nullopt},
    // @huggingface/jinja: "Cannot perform operation on null values"
    {R"j({{ none + 1 }})j", R"j({})j", std::nullopt},
    // @huggingface/jinja: "Unknown operator "<" between StringValue and StringValue"
    {R"j({{ 'a' < 'b' }})j", R"j({})j", std::nullopt},
    // @huggingface/jinja: "Cannot call something that is not a function: got UndefinedValue"
    {R"j({{ s.nosuchmethod() }})j", R"j({"s": "x"})j", std::nullopt},
    {R"j({{ 1 / 0 }} {{ -1 / 0 }})j", R"j({})j", R"j(Infinity -Infinity)j"},
    // @huggingface/jinja: "Expected iterable or object type in for loop: got StringValue"
    {R"j({% for x in 'abc' %}{{ x }}{% endfor %})j", R"j({})j", std::nullopt},
    // @huggingface/jinja: "Unknown ArrayValue filter: trim"
    {R"j({{ [1,2]|trim }})j", R"j({})j", std::nullopt},
    {R"j({{ {'a': 1}|length }} {{ {'a': 1, 'a': 2} }})j", R"j({})j", R"j(1 {"a": 2})j"},
    {R"j({{ 3|tojson }}{{ 3.25|string }}{{ -0.0 }})j", R"j({})j", R"j(33.25-0.0)j"},
    // @huggingface/jinja: "Unknown operator "in" between IntegerValue and IntegerValue"
    {R"j({{ 1 in 2 }})j", R"j({})j", std::nullopt},
    {R"j({{ 'abc'[1::9223372036854775807] }}{{ 'abc'[::-9223372036854775807] }})j", R"j({})j",
     R"j(bc)j"},
};

// Parameterized by index, so test names stay short.
class Expressions : public ::testing::TestWithParam<size_t> {};

TEST_P(Expressions, RenderLikeHuggingFaceJinja) {
  const Case& c = kCases[GetParam()];
  auto t = ChatTemplate::Parse(c.source);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto out = (*t)->Render(nlohmann::json::parse(c.variables));
  if (!c.expected) {
    ASSERT_FALSE(out.ok()) << "rendered " << nlohmann::json(out.value()).dump();
    EXPECT_EQ(out.status().code(), Code::kInvalidInput);
    return;
  }
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out.value(), *c.expected);
}

INSTANTIATE_TEST_SUITE_P(Table, Expressions, ::testing::Range<size_t>(0, std::size(kCases)));

}  // namespace
}  // namespace shoal::native
