// Running a shell command line as an operator would (`shoal models ...`):
// its exit status and what it wrote to stdout. The caller's command line
// says where stderr goes (`2>&1` to read it too).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <utility>

namespace shoal::testing {

inline std::pair<int, std::string> RunCommand(const std::string& command_line) {
  FILE* p = popen(command_line.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace shoal::testing
