// What a model is asked to do. A profile names the task its model serves
// (encode, score or generate); a work item names the task it asks for, and
// tokenize may be asked of any model.
#pragma once

#include <cstdint>
#include <string_view>

namespace shoal {

enum class Task : uint8_t {
  kEncode,    // a vector per text (embedders)
  kScore,     // a relevance logit per text pair (cross-encoders)
  kTokenize,  // the model's tokens (debugging; any model)
  kGenerate,  // text from a prompt or a conversation (decoders)
};

// "encode", "score", "tokenize", "generate".
std::string_view TaskName(Task task);
// False for any other name.
bool ParseTask(std::string_view name, Task* task);

}  // namespace shoal
