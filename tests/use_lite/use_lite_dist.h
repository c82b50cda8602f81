// Where USE-Lite's files are: the npm package's dist/ (the target defines
// SHOAL_USE_LITE_DIST).
#pragma once

#include <string>

namespace shoal::native {

inline const std::string kDist = SHOAL_USE_LITE_DIST;

}  // namespace shoal::native
