#include "catalog/task.h"

namespace shoal {

std::string_view TaskName(Task task) {
  switch (task) {
    case Task::kEncode: return "encode";
    case Task::kScore: return "score";
    case Task::kTokenize: return "tokenize";
    case Task::kGenerate: return "generate";
  }
  return "encode";
}

bool ParseTask(std::string_view name, Task* task) {
  for (Task t : {Task::kEncode, Task::kScore, Task::kTokenize, Task::kGenerate}) {
    if (name == TaskName(t)) {
      *task = t;
      return true;
    }
  }
  return false;
}

}  // namespace shoal
