// A runtime's section of a model profile (`native: {precision: bf16}`),
// parsed: typed values by key. This is what crosses the runtime boundary,
// not the profile's text, so an out-of-process runtime gets the same values
// (as a MessagePack map). A runtime reads the keys it knows with an
// OptionReader, which refuses the others: an option is implemented or
// refused, never ignored.
//
// Values are scalars (a boolean, an integer, a number, a string); a
// section that nests is refused when the model's config is made.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <variant>

#include "common/status.h"

namespace shoal {

class RuntimeOptions {
 public:
  using Value = std::variant<bool, int64_t, double, std::string>;

  RuntimeOptions() = default;
  // `section` names the options in messages ("native").
  explicit RuntimeOptions(std::string section) : section_(std::move(section)) {}

  // From the section as a JSON object (ModelSpec::runtime_options_json).
  static Result<RuntimeOptions> FromJson(std::string section, std::string_view json);

  void Set(std::string key, Value value) { values_[std::move(key)] = std::move(value); }
  const std::map<std::string, Value, std::less<>>& values() const { return values_; }
  const std::string& section() const { return section_; }

 private:
  std::string section_;
  std::map<std::string, Value, std::less<>> values_;
};

// Typed reads of a RuntimeOptions; every error is INVALID_INPUT naming the
// option ("native.precision: expected one of f32, bf16"). Finish() refuses
// what was not read.
class OptionReader {
 public:
  explicit OptionReader(const RuntimeOptions& options) : options_(options) {}

  bool Has(std::string_view key) const { return options_.values().count(key) > 0; }
  // Each reads `key` into `*v`, and leaves `*v` as it is (the default) when
  // the option is absent.
  Status String(std::string_view key, std::string* v);
  Status OneOf(std::string_view key, std::initializer_list<std::string_view> choices, std::string* v);
  Status Count(std::string_view key, uint64_t min, uint64_t max, uint64_t* v);
  Status Count(std::string_view key, uint64_t min, uint64_t max, uint32_t* v);
  Status Bool(std::string_view key, bool* v);
  // An integer or a number within [min, max].
  Status Number(std::string_view key, double min, double max, double* v);
  // An option nobody read: INVALID_INPUT "<section>: unknown option 'key'".
  Status Finish() const;

  // The error for `key`'s value.
  Status Invalid(std::string_view key, std::string_view why) const;

 private:
  const RuntimeOptions::Value* Find(std::string_view key);

  const RuntimeOptions& options_;
  std::set<std::string, std::less<>> read_;
};

}  // namespace shoal
