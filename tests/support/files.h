// A test's own files (logs, reports, images): their bytes, or "" when one is
// missing, so that a failure message can always print what there is.
#pragma once

#include <fstream>
#include <iterator>
#include <string>

namespace shoal::testing {

inline std::string FileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace shoal::testing
