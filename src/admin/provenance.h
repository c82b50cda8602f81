// Provenance: what a promotion record (catalog/model_version.h) says of
// where a model came from — its files and their digests, its license, who
// registered it.
//
// The license is read from the model's own files where they state one, in
// this order: the model card's front matter (README.md, `license:`, and
// `license_name:` when that is "other"), a GGUF header's general.license,
// a LICENSE file (LICENSE, LICENSE.txt, LICENSE.md, LICENCE) recognised by
// its text (Apache-2.0, MIT, BSD-2/3-Clause, GPL-3.0, CC-BY-4.0, the Llama
// and Gemma licenses; any other: "other"). Ids are the Hugging Face Hub's
// (apache-2.0, mit, ...). The registrant may state one where the files do
// not; a statement that contradicts the files is refused, and so is a
// model with neither when the catalog requires a license.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "catalog/model_version.h"
#include "common/status.h"

namespace shoal::admin {

struct LicenseFinding {
  std::string license;  // "" none found
  std::string source;   // "README.md", "gguf", "LICENSE", ...
};

// `path`: the model's directory, or its one file (a GGUF).
LicenseFinding FindLicense(const std::string& path);

// The license a version records: the files' (a `stated` one must agree), else
// `stated` ("registrant"); INVALID_INPUT on a contradiction, or when
// `required` and there is none.
Result<LicenseFinding> SettleLicense(const std::string& path, std::string_view stated,
                                     bool required);

// Every file of the model at `path` (a directory, or one file), hashed
// (store/manifest.h): the record's files and their manifest digest.
// Nothing for a model without files (an upstream's).
Status RecordFiles(const std::string& path, PromotionRecord* record);

// Who registers: the admin API's caller ("key:<name>", "admin-token",
// "local") or, from the command line, "cli:<user>@<host>".
std::string CommandLineOwner();

}  // namespace shoal::admin
