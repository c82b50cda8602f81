// A line kept in priority order (queue/priority.h): interactive entries
// ahead of batch-class ones, each class in its own order. The local queue's
// per-model lines and a generation engine's waiting line are kept so.
#pragma once

#include <algorithm>

#include "queue/priority.h"

namespace shoal::worker {

// Where an entry of class `p` goes in `line`: behind the others of its
// class (a newcomer), or ahead of them (`head`: one that was already in
// line and steps back in). `priority_of(entry)` reads an entry's class.
template <class Line, class PriorityOf>
typename Line::iterator PlaceInLine(Line& line, queue::Priority p, bool head, PriorityOf priority_of) {
  const bool interactive = p == queue::Priority::kInteractive;
  if (interactive == head) return interactive ? line.begin() : line.end();
  return std::find_if(line.begin(), line.end(),
                      [&](const auto& e) { return priority_of(e) == queue::Priority::kBatch; });
}

}  // namespace shoal::worker
