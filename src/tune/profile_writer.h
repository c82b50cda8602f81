// Writing a tuned entry into a model profile, as text: `shoal tune` rewrites
// only the `tuned:` block of the file, so everything else — comments, key
// order, quoting, blank lines — stays byte for byte.
//
// The block is the top-level `tuned:` line and the indented (or blank)
// lines after it, up to the next line that starts in column 0. It is kept at
// the end of the file: a file without one gets it appended (after a comment
// line saying what wrote it); a block found elsewhere is moved to the end,
// the lines around it otherwise untouched. Within the block, entries are the
// lines at the block's first indentation, each a hardware class and its
// more-indented body (block or flow style); the entry of the class being
// written is replaced where it stands, or appended after the others, and the
// other entries are left as they are.
//
// A `tuned:` written in flow style with entries (`tuned: {cpu-x: {...}}`)
// cannot be edited line by line and is refused; `tuned: {}` is taken as
// empty.
//
// Threading: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"

namespace shoal::tune {

// One entry's body in YAML, each line indented by `indent` spaces plus the
// nesting: mappings of scalars in flow style (`batching: {a: 1, b: 2}`),
// except `evidence`, in block style, one figure a line; scalars as JSON
// (a string that YAML would read as a string unquoted is left bare).
std::string FormatTunedEntry(std::string_view hardware_class, const nlohmann::ordered_json& entry,
                             int indent = 2);

// `profile` with the entry for `hardware_class` replaced by (or given)
// `entry` (as FormatTunedEntry writes it). The result is checked to be
// valid YAML.
Result<std::string> WriteTunedEntry(std::string_view profile, std::string_view hardware_class,
                                    const nlohmann::ordered_json& entry);

// The profile without its `tuned:` block (what WriteTunedEntry keeps).
std::string WithoutTunedBlock(std::string_view profile);

}  // namespace shoal::tune
