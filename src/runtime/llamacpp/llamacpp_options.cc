#include "runtime/llamacpp/llamacpp_options.h"

namespace shoal::llamacpp {

Result<LlamaCppOptions> ParseLlamaCppOptions(const RuntimeOptions& options) {
  LlamaCppOptions o;
  OptionReader read(options);
  SHOAL_RETURN_IF_ERROR(read.String("file", &o.file));
  SHOAL_RETURN_IF_ERROR(read.Count("context", 1, 1u << 20, &o.context));
  SHOAL_RETURN_IF_ERROR(read.Count("threads", 1, 1024, &o.threads));
  SHOAL_RETURN_IF_ERROR(read.Count("poll", 0, 100, &o.poll));
  SHOAL_RETURN_IF_ERROR(read.Finish());
  if (o.file.find('/') != std::string::npos) return read.Invalid("file", "expected a file name in the model's directory");
  return o;
}

}  // namespace shoal::llamacpp
