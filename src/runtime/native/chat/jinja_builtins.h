// What templates call without defining it: filters (`x | trim`), tests
// (`x is string`), attributes and methods (`s.startswith('a')`, `d.get('k')`,
// `xs.length`) and the global functions (namespace, strftime_now;
// raise_exception is the interpreter's, since its message is the error).
//
// Semantics are @huggingface/jinja's (chat_template.h lists the set). Errors
// come back as INVALID_INPUT without a position; the interpreter adds it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "runtime/native/chat/jinja_value.h"

namespace shoal::native::jinja {

// The evaluated arguments of a call or filter.
struct Arguments {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;

  // positional[index], else the keyword `name`, else null.
  const Value* Get(size_t index, std::string_view name) const;
};

// `object.name` and `object['name']`: a dict's or namespace's entry, else a
// method of the value's type (a Function bound to `object`), a string's or
// list's `length`; undefined when there is none.
Value GetAttribute(const Value& object, std::string_view name);

// `object[key]`: a string key as GetAttribute; an int indexes a list or string
// (negative from the end; undefined past either end).
Result<Value> GetItem(const Value& object, const Value& key);

// The names every template sees unless it sets them: true/false/none (and
// True/False/None), namespace, raise_exception, strftime_now. Undefined for
// any other name.
Value Global(std::string_view name);

// Calls a method or global function other than raise_exception.
Result<Value> CallFunction(const Callable& fn, const Arguments& args, Budget& budget);

Result<Value> ApplyFilter(std::string_view name, const Value& operand, const Arguments& args,
                          Budget& budget);

// `operand is name` (`argument` for equalto).
Result<bool> ApplyTest(std::string_view name, const Value& operand,
                       const Value& argument = Value());

}  // namespace shoal::native::jinja
