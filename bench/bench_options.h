// The command-line options the model-serving benchmarks share: where the
// figures go, where the generated bench models are, and how many rounds a
// figure's median takes.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace shoal::bench {

inline void AddFigureOptions(CLI::App& app, std::string* out, std::string* models_dir, int* repeats) {
  app.add_option("--out", *out, "where the figures go");
  app.add_option("--models", *models_dir, "the generated bench models (default: <source>/build-models)");
  app.add_option("--repeats", *repeats, "rounds per figure (median kept)");
}

}  // namespace shoal::bench
