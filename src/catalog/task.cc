#include "catalog/task.h"

namespace shoal {

std::string_view TaskName(Task task) {
  switch (task) {
    case Task::kEncode: return "encode";
    case Task::kScore: return "score";
    case Task::kTokenize: return "tokenize";
    case Task::kGenerate: return "generate";
    case Task::kExtract: return "extract";
  }
  return "encode";
}

bool ParseTask(std::string_view name, Task* task) {
  for (Task t : {Task::kEncode, Task::kScore, Task::kTokenize, Task::kGenerate, Task::kExtract}) {
    if (name == TaskName(t)) {
      *task = t;
      return true;
    }
  }
  return false;
}

std::string_view AggregationName(Aggregation a) {
  switch (a) {
    case Aggregation::kNone: return "none";
    case Aggregation::kSimple: return "simple";
    case Aggregation::kFirst: return "first";
    case Aggregation::kAverage: return "average";
    case Aggregation::kMax: return "max";
  }
  return "simple";
}

bool ParseAggregation(std::string_view name, Aggregation* a) {
  for (Aggregation x : {Aggregation::kNone, Aggregation::kSimple, Aggregation::kFirst, Aggregation::kAverage,
                        Aggregation::kMax}) {
    if (name == AggregationName(x)) {
      *a = x;
      return true;
    }
  }
  return false;
}

}  // namespace shoal
