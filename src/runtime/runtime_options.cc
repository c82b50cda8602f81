#include "runtime/runtime_options.h"

#include <nlohmann/json.hpp>

namespace shoal {

Result<RuntimeOptions> RuntimeOptions::FromJson(std::string section, std::string_view json) {
  RuntimeOptions options(std::move(section));
  if (json.empty()) return options;
  const auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidInput(options.section_ + ": expected a mapping of options");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& v = it.value();
    if (v.is_boolean()) {
      options.Set(it.key(), v.get<bool>());
    } else if (v.is_number_integer()) {
      if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
        return InvalidInput(options.section_ + "." + it.key() + ": out of range");
      }
      options.Set(it.key(), v.get<int64_t>());
    } else if (v.is_number()) {
      options.Set(it.key(), v.get<double>());
    } else if (v.is_string()) {
      options.Set(it.key(), v.get<std::string>());
    } else {
      return InvalidInput(options.section_ + "." + it.key() + ": expected a value (a boolean, number or string)");
    }
  }
  return options;
}

const RuntimeOptions::Value* OptionReader::Find(std::string_view key) {
  auto it = options_.values().find(key);
  if (it == options_.values().end()) return nullptr;
  read_.emplace(key);
  return &it->second;
}

Status OptionReader::Invalid(std::string_view key, std::string_view why) const {
  return InvalidInput(options_.section() + "." + std::string(key) + ": " + std::string(why));
}

Status OptionReader::String(std::string_view key, std::string* v) {
  const RuntimeOptions::Value* found = Find(key);
  if (!found) return Status::Ok();
  const auto* s = std::get_if<std::string>(found);
  if (!s) return Invalid(key, "expected a string");
  *v = *s;
  return Status::Ok();
}

Status OptionReader::OneOf(std::string_view key, std::initializer_list<std::string_view> choices, std::string* v) {
  std::string s = *v;
  SHOAL_RETURN_IF_ERROR(String(key, &s));
  for (std::string_view c : choices) {
    if (s == c) {
      *v = s;
      return Status::Ok();
    }
  }
  std::string list;
  for (std::string_view c : choices) list += (list.empty() ? "" : ", ") + std::string(c);
  return Invalid(key, "expected one of " + list);
}

Status OptionReader::Count(std::string_view key, uint64_t min, uint64_t max, uint64_t* v) {
  const RuntimeOptions::Value* found = Find(key);
  if (!found) return Status::Ok();
  const auto* n = std::get_if<int64_t>(found);
  if (!n || *n < 0 || static_cast<uint64_t>(*n) < min || static_cast<uint64_t>(*n) > max) {
    return Invalid(key, "expected a whole number from " + std::to_string(min) + " to " + std::to_string(max));
  }
  *v = static_cast<uint64_t>(*n);
  return Status::Ok();
}

Status OptionReader::Number(std::string_view key, double min, double max, double* v) {
  const RuntimeOptions::Value* found = Find(key);
  if (!found) return Status::Ok();
  double x = 0;
  if (const auto* d = std::get_if<double>(found)) {
    x = *d;
  } else if (const auto* n = std::get_if<int64_t>(found)) {
    x = static_cast<double>(*n);
  } else {
    return Invalid(key, "expected a number");
  }
  if (!(x >= min && x <= max)) {
    return Invalid(key, "expected a number from " + std::to_string(min) + " to " + std::to_string(max));
  }
  *v = x;
  return Status::Ok();
}

Status OptionReader::Count(std::string_view key, uint64_t min, uint64_t max, uint32_t* v) {
  uint64_t wide = *v;
  SHOAL_RETURN_IF_ERROR(Count(key, min, std::min<uint64_t>(max, UINT32_MAX), &wide));
  *v = static_cast<uint32_t>(wide);
  return Status::Ok();
}

Status OptionReader::Bool(std::string_view key, bool* v) {
  const RuntimeOptions::Value* found = Find(key);
  if (!found) return Status::Ok();
  const auto* b = std::get_if<bool>(found);
  if (!b) return Invalid(key, "expected true or false");
  *v = *b;
  return Status::Ok();
}

Status OptionReader::Finish() const {
  for (const auto& [key, value] : options_.values()) {
    if (!read_.count(key)) return InvalidInput(options_.section() + ": unknown option '" + key + "'");
  }
  return Status::Ok();
}

}  // namespace shoal
