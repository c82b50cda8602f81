// A model's runtime configuration from a profile's YAML, as registration
// builds it; a test fails where the YAML does not parse.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "catalog/model_spec.h"
#include "runtime/model_config.h"

namespace shoal::testing {

inline ModelConfig Config(const std::string& yaml) {
  auto spec = ModelSpec::Parse(yaml);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  auto config = ModelConfig::FromSpec(*spec);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return *config;
}

}  // namespace shoal::testing
