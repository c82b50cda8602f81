// The `precision` option of a runtime's section of a profile (native:
// {precision: int8}), read and set on its JSON — what tune's search, the
// quantized variants and the dashboard share.
#pragma once

#include <string>
#include <string_view>

namespace shoal {

// The precision named in a spec's runtime options ("f32" when none).
std::string PrecisionOf(std::string_view runtime_options_json);
// The same options with `precision` set.
std::string WithPrecision(std::string_view runtime_options_json, std::string_view precision);

}  // namespace shoal
