#include "common/file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shoal {

Result<std::string> ReadFile(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return InvalidInput("cannot open " + path + ": " + std::strerror(errno));
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return InvalidInput("cannot read " + path);
  return text;
}

}  // namespace shoal
