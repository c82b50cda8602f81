// Statements, scoping and whitespace control on small templates. Each
// expected output is what @huggingface/jinja 0.5.11 renders (trim_blocks and
// lstrip_blocks on, one trailing newline dropped).
#include <gtest/gtest.h>

#include <iterator>
#include <string>

#include "runtime/native/chat/chat_template.h"

namespace shoal::native {
namespace {

struct StatementCase {
  const char* what;
  const char* source;
  const char* variables;  // JSON
  const char* expected;
};

const StatementCase kStatements[] = {
    {"if/elif/else",
     R"j({% if x == 1 %}one{% elif x == 2 %}two{% elif x == 3 %}three{% else %}many{% endif %})j",
     R"j({"x": 2})j", R"j(two)j"},
    {"if without else, false", R"j([{% if x %}yes{% endif %}])j", R"j({"x": 0})j", R"j([])j"},
    {"nested if", R"j({% if a %}{% if b %}ab{% else %}a{% endif %}{% endif %})j",
     R"j({"a": true, "b": false})j", R"j(a)j"},
    {"for with loop variables",
     R"j({% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}|{% endfor %})j",
     R"j({"xs": ["a", "b", "c"]})j", R"j(1032truefalse3b|2121falsefalse3ac|3210falsetrue3b|)j"},
    {"for else on empty", R"j({% for x in xs %}{{ x }}{% else %}empty{% endfor %})j",
     R"j({"xs": []})j", R"j(empty)j"},
    {"for with filter: loop counts kept items",
     R"j({% for x in xs if x > 1 %}{{ x }}:{{ loop.index }}/{{ loop.length }} {% endfor %})j",
     R"j({"xs": [1, 2, 3]})j", R"j(2:1/2 3:2/2 )j"},
    {"for over a dict's keys", R"j({% for k in d %}{{ k }}{% endfor %})j",
     R"j({"d": {"a": 2, "b": 1}})j", R"j(ab)j"},
    {"for with tuple target", R"j({% for a, b in pairs %}{{ a }}{{ b }};{% endfor %})j",
     R"j({"pairs": [[1, 2], [3, 4]]})j", R"j(12;34;)j"},
    {"nested for and outer loop",
     R"j({% for x in xs %}{% for y in ys %}{{ x }}{{ y }}{{ loop.index }} {% endfor %}{{ loop.index }}|{% endfor %})j",
     R"j({"xs": [1, 2], "ys": ["a", "b"]})j", R"j(1a1 1b2 1|2a1 2b2 2|)j"},
    {"set in a loop is gone after it",
     R"j({% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %} {{ x }})j",
     R"j({})j", R"j(24 1)j"},
    {"set in a loop carries to the next iteration",
     R"j({% for i in [1, 2, 3] %}{% if i > 1 %}{{ prev }}{% endif %}{% set prev = i %}{% endfor %})j",
     R"j({})j", R"j(12)j"},
    {"namespace survives a loop",
     R"j({% set ns = namespace(total=0) %}{% for i in [1, 2, 3] %}{% set ns.total = ns.total + i %}{% endfor %}{{ ns.total }})j",
     R"j({})j", R"j(6)j"},
    {"set inside if is visible after", R"j({% if true %}{% set y = 'set' %}{% endif %}{{ y }})j",
     R"j({})j", R"j(set)j"},
    {"set overrides a variable", R"j({% set messages = messages[1:] %}{{ messages|length }})j",
     R"j({"messages": [1, 2, 3]})j", R"j(2)j"},
    {"tuple set", R"j({% set a, b = [1, 2] %}{{ b }}{{ a }})j", R"j({})j", R"j(21)j"},
    {"trim_blocks drops the newline after a tag",
     R"j({% if true %}
yes
{% endif %}
end)j",
     R"j({})j",
     R"j(yes
end)j"},
    {"lstrip_blocks drops indentation before a tag",
     R"j(a
    {% if true %}
    b
    {% endif %}
c)j",
     R"j({})j",
     R"j(a
    b
c)j"},
    {"lstrip_blocks does not touch {{",
     R"j(a
    {{ 'b' }}
c)j",
     R"j({})j",
     R"j(a
    b
c)j"},
    {"minus strips whitespace both ways", R"j(a   {%- if true -%}   b   {%- endif -%}   c)j",
     R"j({})j", R"j(abc)j"},
    {"expression minus strips",
     R"j(a 
 {{- 'b' -}} 
 c)j",
     R"j({})j", R"j(abc)j"},
    {"comment prints nothing and strips with minus", R"j(a {#- note -#} b {# kept #} c)j",
     R"j({})j", R"j(ab  c)j"},
    {"comment line is trimmed",
     R"j(a
{# comment #}
b)j",
     R"j({})j",
     R"j(a
b)j"},
    {"one trailing newline is dropped",
     R"j(x

)j",
     R"j({})j",
     R"j(x
)j"},
    {"text with braces", R"j(a { b } c {x})j", R"j({})j", R"j(a { b } c {x})j"},
    {"string escapes", R"j({{ 'tab\tnl\nq\'' }})j", R"j({})j",
     R"j(tab	nl
q')j"},
    {"dict literal in expression", R"j({{ {'a': {'b': 1}}['a']['b'] }})j", R"j({})j", R"j(1)j"},
    {"multiline literal string",
     R"j({{ 'line1
line2' }})j",
     R"j({})j",
     R"j(line1
line2)j"},
    {"raise in an untaken branch is fine",
     R"j({% if false %}{{ raise_exception('no') }}{% endif %}ok)j", R"j({})j", R"j(ok)j"},
};

// Parameterized by index, so test names stay short.
class Statements : public ::testing::TestWithParam<size_t> {};

TEST_P(Statements, RenderLikeHuggingFaceJinja) {
  const StatementCase& c = kStatements[GetParam()];
  SCOPED_TRACE(c.what);
  auto t = ChatTemplate::Parse(c.source);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto out = (*t)->Render(nlohmann::json::parse(c.variables));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out.value(), c.expected);
}

INSTANTIATE_TEST_SUITE_P(Table, Statements, ::testing::Range<size_t>(0, std::size(kStatements)));

}  // namespace
}  // namespace shoal::native
