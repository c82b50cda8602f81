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

std::string_view OutputKindName(OutputKind k) {
  switch (k) {
    case OutputKind::kDense: return "dense";
    case OutputKind::kSparse: return "sparse";
    case OutputKind::kMultivector: return "multivector";
  }
  return "dense";
}

bool ParseOutputKind(std::string_view name, OutputKind* k) {
  for (OutputKind x : kOutputKindOrder) {
    if (name == OutputKindName(x)) {
      *k = x;
      return true;
    }
  }
  return false;
}

std::string OutputKindsText(OutputKinds set) {
  std::string out;
  for (OutputKind x : kOutputKindOrder) {
    if (!Has(set, x)) continue;
    if (!out.empty()) out += ", ";
    out += OutputKindName(x);
  }
  return out;
}

OutputKind DefaultOutput(OutputKinds set) {
  if (set == 0 || Has(set, OutputKind::kDense)) return OutputKind::kDense;
  return Has(set, OutputKind::kSparse) ? OutputKind::kSparse : OutputKind::kMultivector;
}

std::string_view InputRoleName(InputRole r) {
  switch (r) {
    case InputRole::kUnspecified: return "";
    case InputRole::kQuery: return "query";
    case InputRole::kDocument: return "document";
  }
  return "";
}

bool ParseInputRole(std::string_view name, InputRole* r) {
  for (InputRole x : {InputRole::kQuery, InputRole::kDocument}) {
    if (name == InputRoleName(x)) {
      *r = x;
      return true;
    }
  }
  return false;
}

}  // namespace shoal
