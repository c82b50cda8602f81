#include "gateway/generation_responses.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "wire/json_writer.h"

namespace shoal::gateway {
namespace {

using wire::JsonWriter;

// A range of the output's tokens: [from, to).
struct Tokens {
  size_t from, to;
  bool empty() const { return from == to; }
};

std::string_view TokenText(const GenerationOutput& o, size_t i) {
  const size_t start = o.token_offsets[i];
  const size_t end = i + 1 < o.token_offsets.size() ? o.token_offsets[i + 1] : o.text.size();
  return std::string_view(o.text).substr(start, end - start);
}

std::string_view FinishReason(const GenerationOutput& o) {
  // A final chunk without a reason ended anyway: as far as a client can
  // tell, it stopped.
  return o.last.finish == wire::FinishReason::kNone ? "stop"
                                                    : wire::FinishReasonName(o.last.finish);
}

uint32_t CompletionTokens(const GenerationOutput& o) {
  return o.last.completion_tokens ? o.last.completion_tokens
                                  : static_cast<uint32_t>(o.token_ids.size());
}

// The prompt counts once, the outputs' tokens all (as OpenAI counts n > 1).
// Every output read the same prompt; the first says how much was cached.
void Usage(JsonWriter& w, const Generation& g) {
  const wire::GenerationChunk& first = g.outputs[0].last;
  uint64_t completion = 0;
  for (const GenerationOutput& o : g.outputs) completion += CompletionTokens(o);
  w.Raw("{\"prompt_tokens\":");
  w.Int(first.prompt_tokens);
  w.Raw(",\"completion_tokens\":");
  w.Int(static_cast<int64_t>(completion));
  w.Raw(",\"total_tokens\":");
  w.Int(static_cast<int64_t>(first.prompt_tokens + completion));
  w.Raw(",\"prompt_tokens_details\":{\"cached_tokens\":");
  w.Int(first.cached_prompt_tokens);
  w.Raw("}}");
}

void Timing(JsonWriter& w, const wire::GenerationChunk& last) {
  w.Raw("{\"ttft_ms\":");
  w.Double(last.ttft_ms);
  w.Raw(",\"itl_ms\":");
  w.Double(last.itl_ms);
  w.Raw(",\"queue_ms\":");
  w.Double(last.queue_ms);
  w.Char('}');
}

// One element per token of `t`, comma-separated, by `each(i)`.
template <class Each>
void ForTokens(JsonWriter& w, Tokens t, Each&& each) {
  for (size_t i = t.from; i < t.to; ++i) {
    if (i > t.from) w.Char(',');
    each(i);
  }
}

// A logprob, or null when the worker sent none (NaN) — JSON has no -inf
// either, so that prints as null too.
void Logprob(JsonWriter& w, const GenerationOutput& o, size_t i) {
  const float lp = i < o.logprobs.size() ? o.logprobs[i] : std::numeric_limits<float>::quiet_NaN();
  w.Float(lp);
}

void Bytes(JsonWriter& w, std::string_view text) {
  w.Char('[');
  for (size_t k = 0; k < text.size(); ++k) {
    if (k) w.Char(',');
    w.Int(static_cast<unsigned char>(text[k]));
  }
  w.Char(']');
}

// Token i's alternatives (empty unless asked).
const std::vector<wire::TopLogprob>& Alternatives(const GenerationOutput& o, size_t i) {
  static const std::vector<wire::TopLogprob> kNone;
  return i < o.top_logprobs.size() ? o.top_logprobs[i] : kNone;
}

// OpenAI chat: {"content":[{"token","logprob","bytes","top_logprobs":[{"token","logprob","bytes"}]}]}.
void ChatLogprobs(JsonWriter& w, const GenerationOutput& o, Tokens t) {
  w.Raw("{\"content\":[");
  ForTokens(w, t, [&](size_t i) {
    const std::string_view text = TokenText(o, i);
    w.Raw("{\"token\":");
    w.String(text);
    w.Raw(",\"logprob\":");
    Logprob(w, o, i);
    w.Raw(",\"bytes\":");
    Bytes(w, text);
    w.Raw(",\"top_logprobs\":[");
    const auto& alternatives = Alternatives(o, i);
    for (size_t k = 0; k < alternatives.size(); ++k) {
      if (k) w.Char(',');
      w.Raw("{\"token\":");
      w.String(alternatives[k].token);
      w.Raw(",\"logprob\":");
      w.Float(alternatives[k].logprob);
      w.Raw(",\"bytes\":");
      Bytes(w, alternatives[k].token);
      w.Char('}');
    }
    w.Raw("]}");
  });
  w.Raw("]}");
}

// OpenAI completions: parallel arrays; text_offset is where each token's
// text starts in the completion.
void CompletionLogprobs(JsonWriter& w, const Generation& g, const GenerationOutput& o, Tokens t) {
  w.Raw("{\"tokens\":[");
  ForTokens(w, t, [&](size_t i) { w.String(TokenText(o, i)); });
  w.Raw("],\"token_logprobs\":[");
  ForTokens(w, t, [&](size_t i) { Logprob(w, o, i); });
  w.Raw("],\"text_offset\":[");
  ForTokens(w, t, [&](size_t i) { w.Int(o.token_offsets[i]); });
  // Per token {text: logprob} of its alternatives (two that spell the same
  // text keep the likelier, as a JSON object must).
  if (g.request.sampling.top_logprobs == 0) {
    w.Raw("],\"top_logprobs\":null}");
    return;
  }
  w.Raw("],\"top_logprobs\":[");
  ForTokens(w, t, [&](size_t i) {
    w.Char('{');
    std::vector<std::string_view> seen;
    for (const wire::TopLogprob& a : Alternatives(o, i)) {
      if (std::find(seen.begin(), seen.end(), a.token) != seen.end()) continue;
      if (!seen.empty()) w.Char(',');
      seen.push_back(a.token);
      w.String(a.token);
      w.Char(':');
      w.Float(a.logprob);
    }
    w.Char('}');
  });
  w.Raw("]}");
}

// choices[].logprobs: null unless asked (and there are tokens to describe).
void ChoiceLogprobs(JsonWriter& w, const Generation& g, const GenerationOutput& o, Tokens t) {
  if (!g.request.sampling.logprobs || t.empty()) {
    w.Null();
  } else if (g.api == GenerationApi::kChat) {
    ChatLogprobs(w, o, t);
  } else {
    CompletionLogprobs(w, g, o, t);
  }
}

void TokenIds(JsonWriter& w, const GenerationOutput& o, Tokens t) {
  w.Char('[');
  ForTokens(w, t, [&](size_t i) { w.Int(o.token_ids[i]); });
  w.Char(']');
}

void NativeLogprobs(JsonWriter& w, const Generation& g, const GenerationOutput& o, Tokens t) {
  w.Char('[');
  ForTokens(w, t, [&](size_t i) { Logprob(w, o, i); });
  w.Char(']');
  if (g.request.sampling.top_logprobs == 0) return;
  w.Raw(",\"top_logprobs\":[");  // per token [{"id", "token", "logprob"}]
  ForTokens(w, t, [&](size_t i) {
    w.Char('[');
    const auto& alternatives = Alternatives(o, i);
    for (size_t k = 0; k < alternatives.size(); ++k) {
      if (k) w.Char(',');
      w.Raw("{\"id\":");
      w.Int(alternatives[k].id);
      w.Raw(",\"token\":");
      w.String(alternatives[k].token);
      w.Raw(",\"logprob\":");
      w.Float(alternatives[k].logprob);
      w.Char('}');
    }
    w.Char(']');
  });
  w.Char(']');
}

// {"id","object","created","model","choices":[  — the OpenAI envelope's start.
void OpenAiHead(JsonWriter& w, const PendingRequest& p, const Generation& g,
                std::string_view object) {
  w.Raw("{\"id\":");
  w.String((g.api == GenerationApi::kChat ? "chatcmpl-" : "cmpl-") + p.id);
  w.Raw(",\"object\":");
  w.String(object);
  w.Raw(",\"created\":");
  w.Int(g.created_unix_s);
  w.Raw(",\"model\":");
  w.String(ResponseModel(p));
  w.Raw(",\"choices\":[");
}

// Milliseconds with three decimals, for headers.
std::string Millis(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", std::isfinite(ms) && ms > 0 ? ms : 0.0);
  return buf;
}

// OpenAI tool_calls: [{"index" (streamed), "id", "type": "function",
// "function": {"name", "arguments"}}].
void ToolCalls(JsonWriter& w, const std::vector<wire::ToolCall>& calls, bool indexed) {
  w.Char('[');
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i) w.Char(',');
    w.Char('{');
    if (indexed) {
      w.Raw("\"index\":");
      w.Int(static_cast<int64_t>(i));
      w.Char(',');
    }
    w.Raw("\"id\":");
    w.String(calls[i].id);
    w.Raw(",\"type\":\"function\",\"function\":{\"name\":");
    w.String(calls[i].name);
    w.Raw(",\"arguments\":");
    w.String(calls[i].arguments);
    w.Raw("}}");
  }
  w.Char(']');
}

// --- non-stream ---

// OpenAI chat and completions differ only in the object name and where
// the text goes (choices[i].message.content or choices[i].text).
std::string OpenAiBody(const PendingRequest& p, const Generation& g, bool chat) {
  std::string out;
  JsonWriter w(&out);
  OpenAiHead(w, p, g, chat ? "chat.completion" : "text_completion");
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const GenerationOutput& o = g.outputs[i];
    w.Raw(i ? ",{\"index\":" : "{\"index\":");
    w.Int(static_cast<int64_t>(i));
    w.Raw(chat ? ",\"message\":{\"role\":\"assistant\",\"content\":" : ",\"text\":");
    const bool calls = chat && !o.last.tool_calls.empty();
    calls && o.text.empty() ? w.Null() : w.String(o.text);  // a message of calls alone has null content
    if (calls) {
      w.Raw(",\"tool_calls\":");
      ToolCalls(w, o.last.tool_calls, /*indexed=*/false);
    }
    w.Raw(chat ? "},\"logprobs\":" : ",\"logprobs\":");
    ChoiceLogprobs(w, g, o, {0, o.token_ids.size()});
    w.Raw(",\"finish_reason\":");
    w.String(FinishReason(o));
    w.Char('}');
  }
  w.Raw("],\"usage\":");
  Usage(w, g);
  w.Char('}');
  return out;
}

// The native route has one output (it refuses n).
std::string NativeBody(const PendingRequest& p, const Generation& g) {
  const GenerationOutput& o = g.outputs[0];
  std::string out;
  JsonWriter w(&out);
  const Tokens all{0, o.token_ids.size()};
  w.Raw("{\"id\":");
  w.String(p.id);
  w.Raw(",\"model\":");
  w.String(ResponseModel(p));
  w.Raw(",\"text\":");
  w.String(o.text);
  w.Raw(",\"token_ids\":");
  TokenIds(w, o, all);
  if (g.request.sampling.logprobs) {
    w.Raw(",\"logprobs\":");
    NativeLogprobs(w, g, o, all);
  }
  w.Raw(",\"finish_reason\":");
  w.String(FinishReason(o));
  w.Raw(",\"usage\":");
  Usage(w, g);
  w.Raw(",\"timing\":");
  Timing(w, o.last);
  w.Char('}');
  return out;
}

// --- stream ---

// One chat.completion.chunk / text_completion chunk with output `index`'s
// choice: `choice_body` is its `"delta":{...}` (chat) or `"text":...` member.
std::string OpenAiChunk(const PendingRequest& p, const Generation& g, size_t index, std::string_view choice_body,
                        Tokens t, std::string_view finish) {
  const bool chat = g.api == GenerationApi::kChat;
  std::string out;
  JsonWriter w(&out);
  OpenAiHead(w, p, g, chat ? "chat.completion.chunk" : "text_completion");
  w.Raw("{\"index\":");
  w.Int(static_cast<int64_t>(index));
  w.Char(',');
  w.Raw(choice_body);
  w.Raw(",\"logprobs\":");
  ChoiceLogprobs(w, g, g.outputs[index], t);
  w.Raw(",\"finish_reason\":");
  finish.empty() ? w.Null() : w.String(finish);
  w.Raw("}]");
  if (g.request.include_usage) w.Raw(",\"usage\":null");
  w.Char('}');
  return out;
}

std::string TextChoice(const Generation& g, std::string_view text) {
  std::string out;
  JsonWriter w(&out);
  w.Raw(g.api == GenerationApi::kChat ? "\"delta\":{\"content\":" : "\"text\":");
  w.String(text);
  if (g.api == GenerationApi::kChat) w.Char('}');
  return out;
}

std::string UsageChunk(const PendingRequest& p, const Generation& g) {
  std::string out;
  JsonWriter w(&out);
  OpenAiHead(w, p, g, g.api == GenerationApi::kChat ? "chat.completion.chunk" : "text_completion");
  w.Raw("],\"usage\":");
  Usage(w, g);
  w.Char('}');
  return out;
}

std::string NativeEvent(const Generation& g, const GenerationOutput& o, std::string_view text, Tokens t) {
  std::string out;
  JsonWriter w(&out);
  w.Raw("{\"text\":");
  w.String(text);
  w.Raw(",\"token_ids\":");
  TokenIds(w, o, t);
  if (g.request.sampling.logprobs) {
    w.Raw(",\"logprobs\":");
    NativeLogprobs(w, g, o, t);
  }
  if (o.finished) {
    w.Raw(",\"finish_reason\":");
    w.String(FinishReason(o));
    w.Raw(",\"usage\":");
    Usage(w, g);
    w.Raw(",\"timing\":");
    Timing(w, o.last);
  }
  w.Char('}');
  return out;
}

}  // namespace

http::Response GenerationResponse(const PendingRequest& p) {
  const Generation& g = *p.generation;
  http::Response res;
  switch (g.api) {
    case GenerationApi::kChat:
      res.body = OpenAiBody(p, g, /*chat=*/true);
      break;
    case GenerationApi::kCompletions:
      res.body = OpenAiBody(p, g, /*chat=*/false);
      break;
    case GenerationApi::kNative:
      res.body = NativeBody(p, g);
      break;
  }
  res.headers.emplace_back("X-Shoal-Request-Id", p.id);
  // The first output's timing (with n > 1 they ran side by side).
  const wire::GenerationChunk& last = g.outputs[0].last;
  res.headers.emplace_back("X-Shoal-Queue-Ms", Millis(last.queue_ms));
  res.headers.emplace_back("X-Shoal-TTFT-Ms", Millis(last.ttft_ms));
  res.headers.emplace_back("X-Shoal-ITL-Ms", Millis(last.itl_ms));
  res.headers.emplace_back("X-Shoal-Total-Ms", Millis(MicrosSince(p.received) / 1000.0));
  // Above 1 when a worker died mid-generation and another ran it again.
  res.headers.emplace_back("X-Shoal-Attempts", std::to_string(g.attempts));
  AddModelVersionHeader(p, &res);
  return res;
}

http::Response StreamHead(const PendingRequest& p, std::string events) {
  http::Response head = http::SseHead(std::move(events));
  head.headers.emplace_back("X-Shoal-Request-Id", p.id);
  AddModelVersionHeader(p, &head);
  return head;
}

std::string StreamEvents(const PendingRequest& p, const Generation& g, GenerationOutput& o, size_t index,
                         bool done) {
  std::string out;
  const std::string_view fresh = std::string_view(o.text).substr(o.sent_text);
  const Tokens unsent{o.sent_tokens, o.token_ids.size()};
  auto sent_all = [&] {
    o.sent_text = o.text.size();
    o.sent_tokens = o.token_ids.size();
  };
  if (g.api == GenerationApi::kNative) {
    if (!fresh.empty() || o.finished) {
      http::AppendSseData(NativeEvent(g, o, fresh, unsent), &out);
      sent_all();
    }
  } else {
    if (!o.opened && g.api == GenerationApi::kChat) {
      http::AppendSseData(
          OpenAiChunk(p, g, index, "\"delta\":{\"role\":\"assistant\",\"content\":\"\"}", {0, 0}, {}), &out);
    }
    o.opened = true;
    if (!fresh.empty()) {
      http::AppendSseData(OpenAiChunk(p, g, index, TextChoice(g, fresh), unsent, {}), &out);
      sent_all();
    }
    if (o.finished && g.api == GenerationApi::kChat && !o.last.tool_calls.empty()) {
      // The calls in one delta, each whole (OpenAI streams the arguments in
      // fragments; one fragment is a fragment too).
      std::string delta;
      JsonWriter d(&delta);
      d.Raw("\"delta\":{\"tool_calls\":");
      ToolCalls(d, o.last.tool_calls, /*indexed=*/true);
      d.Char('}');
      http::AppendSseData(OpenAiChunk(p, g, index, delta, {o.sent_tokens, o.sent_tokens}, {}), &out);
    }
    if (o.finished) {
      // Tokens still unsent (text-less ones at the end) carry their
      // logprobs in the closing chunk.
      const Tokens rest{o.sent_tokens, o.token_ids.size()};
      const std::string choice = g.api == GenerationApi::kChat ? "\"delta\":{}" : TextChoice(g, "");
      http::AppendSseData(OpenAiChunk(p, g, index, choice, rest, FinishReason(o)), &out);
      sent_all();
    }
    if (done && g.request.include_usage) http::AppendSseData(UsageChunk(p, g), &out);
  }
  if (done) http::AppendSseData("[DONE]", &out);
  return out;
}

}  // namespace shoal::gateway
