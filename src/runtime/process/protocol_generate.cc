// The runtime protocol's generation messages (protocol.h): generate and
// cancel requests, chunk and finish replies.
#include <cmath>

#include "runtime/process/protocol.h"
#include "runtime/process/protocol_envelopes.h"
#include "wire/msgpack_fields.h"
#include "wire/msgpack_reader.h"
#include "wire/msgpack_writer.h"

namespace shoal::runtime_process {
namespace {

using wire::ForEachItem;
using wire::MsgpackFields;
using wire::MsgpackReader;
using wire::MsgpackWriter;

void WriteStrings(MsgpackWriter& w, const std::vector<std::string>& v) {
  w.ArrayHeader(static_cast<uint32_t>(v.size()));
  for (const std::string& s : v) w.Str(s);
}

void WriteInts(MsgpackWriter& w, const std::vector<int32_t>& v) {
  w.ArrayHeader(static_cast<uint32_t>(v.size()));
  for (int32_t x : v) w.Int(x);
}

void WriteUpdateText(MsgpackWriter& w, const GenerationUpdate& u) {
  w.Str("text");
  w.Str(u.text);
  w.Str("token_ids");
  WriteInts(w, u.token_ids);
  w.Str("logprobs");
  w.Float32Array(u.logprobs.data(), u.logprobs.size());
}

}  // namespace

std::string_view FormatName(OutputFormat::Kind kind) {
  switch (kind) {
    case OutputFormat::Kind::kText:
      return "text";
    case OutputFormat::Kind::kJsonObject:
      return "json_object";
    case OutputFormat::Kind::kJsonSchema:
      return "json_schema";
  }
  return "text";
}

std::string GenerateJobRequest(uint64_t id, std::string_view model, const GenerationJob& j) {
  std::string out;
  MsgpackWriter w = RequestEnvelope(&out, "generate", id, 2);
  w.Str("model");
  w.Str(model);
  w.Str("job");
  const bool formatted = j.format.kind != OutputFormat::Kind::kText;
  const LogitAdjustments& a = j.adjustments;
  w.MapHeader(13 + formatted + a.any());
  if (j.chat) {
    w.Str("messages");
    w.ArrayHeader(static_cast<uint32_t>(j.messages.size()));
    for (const ChatTurn& t : j.messages) {
      w.MapHeader(2);
      w.Str("role");
      w.Str(t.role);
      w.Str("content");
      w.Str(t.content);
    }
    w.Str("add_generation_prompt");
    w.Bool(j.add_generation_prompt);
    w.Str("chat_template_kwargs");
    w.Str(j.chat_template_kwargs_json);
  } else {
    w.Str("prompt");
    w.Str(j.prompt);
    w.Str("add_special_tokens");
    w.Bool(j.add_special_tokens);
    w.Str("chat_template_kwargs");  // keeps the map's size fixed
    w.Str("");
  }
  w.Str("max_tokens");
  w.Uint(j.max_tokens);
  w.Str("temperature");
  w.Float64(j.sampling.temperature);
  w.Str("top_p");
  w.Float64(j.sampling.top_p);
  w.Str("top_k");
  w.Int(j.sampling.top_k);
  w.Str("seed");
  w.Uint(j.seed);
  w.Str("stop");
  WriteStrings(w, j.stop);
  w.Str("stop_token_ids");
  WriteInts(w, j.stop_token_ids);
  w.Str("ignore_eos");
  w.Bool(j.ignore_eos);
  w.Str("logprobs");
  w.Bool(j.logprobs);
  w.Str("lora");
  w.Str(j.lora);
  if (formatted) {
    const bool schema = j.format.kind == OutputFormat::Kind::kJsonSchema;
    w.Str("response_format");
    w.MapHeader(schema ? 3 : 1);
    w.Str("type");
    w.Str(FormatName(j.format.kind));
    if (schema) {
      w.Str("name");
      w.Str(j.format.schema_name);
      w.Str("schema");
      w.Str(j.format.schema_json);
    }
  }
  if (a.any()) {
    w.Str("adjustments");
    w.MapHeader(6);
    w.Str("presence_penalty");
    w.Float64(a.presence_penalty);
    w.Str("frequency_penalty");
    w.Float64(a.frequency_penalty);
    w.Str("repetition_penalty");
    w.Float64(a.repetition_penalty);
    std::vector<int32_t> ids;
    std::vector<float> biases;
    for (auto [id, bias] : a.logit_bias) {
      ids.push_back(id);
      biases.push_back(bias);
    }
    w.Str("logit_bias_ids");
    WriteInts(w, ids);
    w.Str("logit_bias_values");
    w.Float32Array(biases.data(), biases.size());
    w.Str("min_tokens");
    w.Uint(a.min_tokens);
  }
  return out;
}

namespace {
Status ReadAdjustments(MsgpackReader& r, LogitAdjustments* a) {
  MsgpackFields f(r, "job.adjustments");
  std::vector<int32_t> ids;
  std::vector<float> biases;
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view k) -> Status {
    if (k == "presence_penalty") return f.Float(&a->presence_penalty);
    if (k == "frequency_penalty") return f.Float(&a->frequency_penalty);
    if (k == "repetition_penalty") return f.Float(&a->repetition_penalty);
    if (k == "logit_bias_ids") return f.Ints(&ids);
    if (k == "logit_bias_values") return f.Floats(&biases);
    if (k == "min_tokens") return f.Int(&a->min_tokens);
    return f.Skip();
  }));
  if (ids.size() != biases.size()) return InvalidInput("job.adjustments: logit_bias_ids and logit_bias_values differ in length");
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!(biases[i] >= -100 && biases[i] <= 100)) return InvalidInput("job.adjustments.logit_bias_values: in [-100, 100]");
    a->logit_bias.emplace_back(ids[i], biases[i]);
  }
  // The ranges requests are held to (wire/generate_json.cc).
  if (!(a->presence_penalty >= -2 && a->presence_penalty <= 2) ||
      !(a->frequency_penalty >= -2 && a->frequency_penalty <= 2)) {
    return InvalidInput("job.adjustments: presence_penalty and frequency_penalty are in [-2, 2]");
  }
  if (!(a->repetition_penalty > 0 && a->repetition_penalty <= 2)) {
    return InvalidInput("job.adjustments.repetition_penalty: in (0, 2]");
  }
  return Status::Ok();
}
}  // namespace

Status ReadGenerationJob(std::string_view raw, GenerationJob* j) {
  MsgpackReader r(raw);
  MsgpackFields f(r, "job");
  bool has_prompt = false;
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "prompt") {
      has_prompt = true;
      return f.String(&j->prompt);
    }
    if (key == "add_special_tokens") return f.Bool(&j->add_special_tokens);
    if (key == "messages") {
      j->chat = true;
      std::string_view messages;
      if (!r.ReadRaw(&messages)) return f.Error("truncated");
      uint32_t n = 0;
      MsgpackReader count(messages);
      if (!count.ReadArrayHeader(&n)) return f.Error("expected an array of messages");
      j->messages.resize(n);
      return ForEachItem(messages, "job.messages", [&](uint32_t i, MsgpackFields& m) {
        return m.ForEach([&](std::string_view k) -> Status {
          if (k == "role") return m.String(&j->messages[i].role);
          if (k == "content") return m.String(&j->messages[i].content);
          return m.Skip();
        });
      });
    }
    if (key == "add_generation_prompt") return f.Bool(&j->add_generation_prompt);
    if (key == "chat_template_kwargs") return f.String(&j->chat_template_kwargs_json);
    if (key == "max_tokens") return f.Int(&j->max_tokens);
    if (key == "temperature") return f.Float(&j->sampling.temperature);
    if (key == "top_p") return f.Float(&j->sampling.top_p);
    if (key == "top_k") return f.Int(&j->sampling.top_k);
    if (key == "seed") return f.Bits64(&j->seed);
    if (key == "stop") return f.Strings(&j->stop);
    if (key == "stop_token_ids") return f.Ints(&j->stop_token_ids);
    if (key == "ignore_eos") return f.Bool(&j->ignore_eos);
    if (key == "logprobs") return f.Bool(&j->logprobs);
    if (key == "lora") return f.String(&j->lora);
    if (key == "response_format") {
      MsgpackFields rf(r, "job.response_format");
      std::string type;
      SHOAL_RETURN_IF_ERROR(rf.ForEach([&](std::string_view k) -> Status {
        if (k == "type") return rf.String(&type);
        if (k == "name") return rf.String(&j->format.schema_name);
        if (k == "schema") return rf.String(&j->format.schema_json);
        return rf.Skip();
      }));
      for (auto kind : {OutputFormat::Kind::kText, OutputFormat::Kind::kJsonObject, OutputFormat::Kind::kJsonSchema}) {
        if (type == FormatName(kind)) {
          j->format.kind = kind;
          return Status::Ok();
        }
      }
      return InvalidInput("job.response_format.type: '" + type + "' is not a format");
    }
    if (key == "adjustments") return ReadAdjustments(r, &j->adjustments);
    return f.Skip();
  }));
  if (j->chat == has_prompt) return InvalidInput("job: exactly one of prompt and messages");
  if (!(j->sampling.temperature >= 0) || !std::isfinite(j->sampling.temperature)) {
    return InvalidInput("job.temperature: must be a finite number >= 0");
  }
  if (!(j->sampling.top_p > 0 && j->sampling.top_p <= 1)) return InvalidInput("job.top_p: must be in (0, 1]");
  if (j->sampling.top_k < 0) return InvalidInput("job.top_k: must be >= 0");
  return Status::Ok();
}

std::string CancelRequest(uint64_t id, uint64_t target) {
  std::string out;
  MsgpackWriter w = RequestEnvelope(&out, "cancel", id, 1);
  w.Str("target");
  w.Uint(target);
  return out;
}

std::string ChunkReply(uint64_t id, const GenerationUpdate& u) {
  std::string out;
  MsgpackWriter w = ReplyEnvelope(&out, id, "chunk");
  w.MapHeader(3);
  WriteUpdateText(w, u);
  return out;
}

std::string FinishReply(uint64_t id, const GenerationUpdate& u) {
  std::string out;
  MsgpackWriter w = ReplyEnvelope(&out, id, "ok");
  w.MapHeader(3);
  w.Str("finish_reason");
  w.Str(u.finish_reason);
  w.Str("prompt_tokens");
  w.Uint(u.prompt_tokens);
  w.Str("completion_tokens");
  w.Uint(u.completion_tokens);
  return out;
}

Status ReadChunk(std::string_view chunk, GenerationUpdate* u) {
  MsgpackReader r(chunk);
  MsgpackFields f(r, "chunk");
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "text") return f.String(&u->text);
    if (key == "token_ids") return f.Ints(&u->token_ids);
    if (key == "logprobs") return f.Floats(&u->logprobs);
    return f.Skip();
  }));
  if (!u->logprobs.empty() && u->logprobs.size() != u->token_ids.size()) {
    return InvalidInput("chunk: " + std::to_string(u->logprobs.size()) + " logprobs for " +
                        std::to_string(u->token_ids.size()) + " tokens");
  }
  return Status::Ok();
}

Status ReadFinish(std::string_view ok, GenerationUpdate* u) {
  MsgpackReader r(ok);
  MsgpackFields f(r, "ok");
  SHOAL_RETURN_IF_ERROR(f.ForEach([&](std::string_view key) -> Status {
    if (key == "finish_reason") return f.String(&u->finish_reason);
    if (key == "prompt_tokens") return f.Int(&u->prompt_tokens);
    if (key == "completion_tokens") return f.Int(&u->completion_tokens);
    return f.Skip();
  }));
  if (u->finish_reason != "stop" && u->finish_reason != "length" && u->finish_reason != "cancelled") {
    return InvalidInput("ok.finish_reason: '" + u->finish_reason + "' is none of stop, length, cancelled");
  }
  return Status::Ok();
}

}  // namespace shoal::runtime_process
