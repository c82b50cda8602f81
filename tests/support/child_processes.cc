#include "support/child_processes.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace shoal::testing {

std::vector<pid_t> ChildProcesses(pid_t parent, std::string_view cmdline_part) {
  std::vector<pid_t> pids;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat("/proc/" + name + "/stat");
    std::string line;
    std::getline(stat, line);
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) != 2 || ppid != parent ||
        state == 'Z')
      continue;
    std::ifstream cmd("/proc/" + name + "/cmdline");
    const std::string cmdline((std::istreambuf_iterator<char>(cmd)),
                              std::istreambuf_iterator<char>());
    if (cmdline.find(cmdline_part) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

}  // namespace shoal::testing
