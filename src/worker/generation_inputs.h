// What a generation request asks of a Generator, in the runtime's terms:
// its messages as chat turns (tool calls' arguments as the objects
// templates read), the chat template's variables (the request's, and its
// tools), and the grammar its response_format holds the output to.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/generator.h"
#include "wire/generate.h"

namespace shoal::worker {

// (An image part becomes a ChatPart that says where it stands; its bytes
// stay in the message, for Generator::EmbedImage.)
std::vector<ChatTurn> Turns(const std::vector<wire::ChatMessage>& messages);

// The messages' images, in the order a template meets them (message by
// message, part by part), with the field that names each.
struct RequestImage {
  std::string_view bytes;
  std::string field;  // messages[i].content[j]
};
std::vector<RequestImage> Images(const std::vector<wire::ChatMessage>& messages);

// `kwargs_json` (a JSON object's text, or empty) with "tools" added when
// there are some; left as it is when it is not an object (RenderChat
// refuses it).
std::string TemplateKwargs(const std::string& kwargs_json, const std::string& tools_json);

// The format's grammar as GBNF text; `field` gets the request field its
// errors name.
Result<std::string> FormatGrammar(const wire::ResponseFormat& f, std::string* field);

// The model's defaults in place of the sampling fields the client left out
// (p->unsaid); those it sent stay.
void ApplySamplingDefaults(const SamplingDefaults& d, wire::SamplingParams* p);

}  // namespace shoal::worker
