// Where the seeded test models are (scripts/make-test-models writes them at
// build time; the target defines SHOAL_TEST_MODELS).
#pragma once

#include <string>

namespace shoal::testing {

inline const std::string kModels = SHOAL_TEST_MODELS;

}  // namespace shoal::testing
