// The processes a process started, found in /proc: how tests find a worker's
// runtime processes (`shoal runtime-host`, the sidecars) to kill one.
#pragma once

#include <sys/types.h>

#include <string_view>
#include <vector>

namespace shoal::testing {

// The live children of `parent` whose command line holds `cmdline_part`.
std::vector<pid_t> ChildProcesses(pid_t parent, std::string_view cmdline_part);

}  // namespace shoal::testing
