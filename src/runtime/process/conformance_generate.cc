// The conformance suite's generation checks (conformance.h), for a model
// whose runtime announces generate.
#include "runtime/process/conformance_generate.h"

#include <algorithm>
#include <set>

namespace shoal::runtime_process::conformance {
namespace {

// A generation's replies: its chunks, then its end; other ids' final
// replies on the way are kept in `others`.
struct Generated {
  std::vector<int32_t> tokens;
  std::string text;
  GenerationUpdate end;
  std::set<uint64_t> others;
};

// An error reply fails the wait, or with `error_ends` is the generation's
// end (end.status).
Result<Generated> AwaitGeneration(Peer& p, uint64_t id, std::chrono::milliseconds timeout,
                                  const std::function<Status()>& after_first_chunk = {}, bool error_ends = false) {
  Generated g;
  bool first = true;
  while (true) {
    std::string frame;
    SHOAL_RETURN_IF_ERROR(p.Next(timeout, &frame));
    Reply r;
    if (Status s = ReadReply(frame, &r); !s.ok()) return Internal("not a reply: " + s.message());
    if (r.id != id) {
      if (r.kind == Reply::Kind::kChunk) return Internal("a chunk for id " + std::to_string(r.id));
      g.others.insert(r.id);
      continue;
    }
    if (r.kind == Reply::Kind::kError && !error_ends) return r.error;
    if (r.kind == Reply::Kind::kError) {
      g.end.final = true;
      g.end.status = r.error;
      return g;
    }
    if (r.kind == Reply::Kind::kOk) {
      g.end.final = true;
      SHOAL_RETURN_IF_ERROR(ReadFinish(r.ok, &g.end));
      return g;
    }
    if (r.kind != Reply::Kind::kChunk) continue;
    GenerationUpdate u;
    SHOAL_RETURN_IF_ERROR(ReadChunk(r.chunk, &u));
    g.tokens.insert(g.tokens.end(), u.token_ids.begin(), u.token_ids.end());
    g.text += u.text;
    if (first && after_first_chunk) SHOAL_RETURN_IF_ERROR(after_first_chunk());
    first = false;
  }
}

}  // namespace

// The generation checks of a model whose runtime announces generate.
void CheckGeneration(Peer& p, const std::string& handle, const RuntimeHello& hello, std::chrono::milliseconds timeout,
                     uint64_t& id, const std::function<void(CheckResult)>& add) {
  GenerationJob job;
  job.prompt = "the river runs past";
  job.max_tokens = 8;
  job.ignore_eos = true;
  job.sampling.temperature = 0;
  auto run = [&]() -> Result<Generated> {
    const uint64_t g = ++id;
    SHOAL_RETURN_IF_ERROR(p.Send(GenerateJobRequest(g, handle, job)));
    return AwaitGeneration(p, g, timeout);
  };
  auto first = run();
  Status c = first.status();
  if (c.ok() && first->end.finish_reason != "length") c = Internal("finish_reason " + first->end.finish_reason);
  // Without ids (a runtime that counts no tokens) the text must still come.
  const size_t streamed = hello.counts_tokens ? first->tokens.size() : first->text.empty() ? 0 : 8;
  if (c.ok() && (streamed != 8 || first->end.completion_tokens != 8)) {
    c = Internal(std::to_string(first->tokens.size()) + " tokens streamed, " +
                 std::to_string(first->end.completion_tokens) + " counted, for max_tokens 8");
  }
  if (c.ok() && first->end.prompt_tokens == 0) c = Internal("prompt_tokens is 0");
  add(c.ok() ? Pass("generate", std::string(hello.counts_tokens ? "8 tokens streamed" : "8 tokens counted") + ", \"" +
                                    first->text + "\", finish length")
             : Fail("generate", c.ToString()));
  if (!c.ok()) return;
  auto again = run();
  c = again.status();
  if (c.ok() && (again->tokens != first->tokens || again->text != first->text)) {
    c = Internal("greedy decoding gave other tokens the second time");
  }
  add(c.ok() ? Pass("greedy generation repeats", "the same 8 tokens") : Fail("greedy generation repeats", c.ToString()));

  // A logit bias, when the hello lists it: +100 on the last token it
  // wrote makes that token the greedy pick every time.
  const bool biases = std::find(hello.adjustments.begin(), hello.adjustments.end(), "logit_bias") != hello.adjustments.end();
  if (biases && hello.counts_tokens && !first->tokens.empty()) {
    GenerationJob biased = job;
    const int32_t token = first->tokens.back();
    biased.adjustments.logit_bias = {{token, 100.0f}};
    const uint64_t b = ++id;
    c = p.Send(GenerateJobRequest(b, handle, biased));
    auto got = c.ok() ? AwaitGeneration(p, b, timeout) : Result<Generated>(c);
    c = got.status();
    if (c.ok() && std::count(got->tokens.begin(), got->tokens.end(), token) != 8) {
      c = Internal("with token " + std::to_string(token) + " at +100, it wrote " + std::to_string(got->tokens.size()) +
                   " tokens, " + std::to_string(std::count(got->tokens.begin(), got->tokens.end(), token)) +
                   " of them that one");
    }
    add(c.ok() ? Pass("logit_bias", "token " + std::to_string(token) + " at +100: 8 times")
               : Fail("logit_bias", c.ToString()));
  }

  // Cancel: a generation to the end of the context, cancelled after its
  // first chunk. A generation that ended before the cancel reached it (a
  // small model's server may fail it a few tokens in, and a loaded machine
  // may take that long to pass the cancel on) proves nothing either way: it
  // is tried again, up to three times. The cancel's own reply is awaited
  // whenever it was sent, so no later check reads it.
  job.max_tokens = 0;
  auto cancel_one = [&]() -> Result<Generated> {
    const uint64_t g = ++id, cancel = ++id;
    bool sent = false;
    SHOAL_RETURN_IF_ERROR(p.Send(GenerateJobRequest(g, handle, job)));
    auto got = AwaitGeneration(
        p, g, timeout,
        [&] {
          sent = true;
          return p.Send(CancelRequest(cancel, g));
        },
        /*error_ends=*/true);
    if (sent && !(got.ok() && got->others.count(cancel))) {
      auto a = p.Await(cancel, timeout);  // the cancel's own ok may come after
      SHOAL_RETURN_IF_ERROR(a.ok() ? ExpectOk(**a) : a.status());
    }
    return got;
  };
  Result<Generated> cancelled = Internal("not tried");
  for (int attempt = 0; attempt < 3; ++attempt) {
    cancelled = cancel_one();
    if (!cancelled.ok() || cancelled->end.finish_reason == "cancelled") break;
  }
  c = cancelled.status();
  if (c.ok() && cancelled->end.finish_reason != "cancelled") {
    c = Internal("three times it ended before its cancel took effect, the last " +
                 (cancelled->end.status.ok() ? "with finish_reason " + cancelled->end.finish_reason
                                             : "failing: " + cancelled->end.status.ToString()));
  }
  add(c.ok() ? Pass("cancel", "ended \"cancelled\" after " + std::to_string(cancelled->tokens.size()) + " tokens")
             : Fail("cancel", c.ToString()));

  // JSON output: whatever the model prefers, a schema of two strings leaves
  // it two documents to write, then the end.
  if (std::find(hello.formats.begin(), hello.formats.end(), "json_schema") == hello.formats.end()) return;
  GenerationJob json_job;
  json_job.prompt = "the river runs past";
  json_job.max_tokens = 64;
  json_job.sampling.temperature = 0;
  json_job.format = {.kind = OutputFormat::Kind::kJsonSchema, .schema_name = "answer",
                     .schema_json = R"({"enum": ["yes", "no"]})"};
  const uint64_t j = ++id;
  c = p.Send(GenerateJobRequest(j, handle, json_job));
  auto held = c.ok() ? AwaitGeneration(p, j, timeout) : Result<Generated>(c);
  c = held.status();
  if (c.ok() && held->end.finish_reason != "stop") c = Internal("finish_reason " + held->end.finish_reason);
  if (c.ok() && held->text != "\"yes\"" && held->text != "\"no\"") c = Internal("wrote '" + held->text + "'");
  add(c.ok() ? Pass("json output", "held to {\"enum\": [\"yes\", \"no\"]}: " + held->text)
             : Fail("json output", c.ToString()));
}

}  // namespace shoal::runtime_process::conformance
