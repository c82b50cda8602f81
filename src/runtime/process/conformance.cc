#include "runtime/process/conformance.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "runtime/process/conformance_generate.h"
#include "runtime/process/conformance_peer.h"
#include "runtime/process/protocol.h"
#include "runtime/process/token_feed.h"
#include "wire/msgpack_writer.h"

namespace shoal::runtime_process {
namespace {

using namespace conformance;

// A fresh connection that has said hello.
Result<std::unique_ptr<Peer>> Greeted(const ConformanceTarget& target, std::chrono::milliseconds timeout,
                                      RuntimeHello* hello) {
  auto peer = Peer::Open(target);
  if (!peer.ok()) return peer.status();
  SHOAL_RETURN_IF_ERROR((*peer)->Send(HelloRequest(1)));
  auto a = (*peer)->Await(1, timeout);
  if (!a.ok()) return a.status();
  SHOAL_RETURN_IF_ERROR(ExpectOk(**a));
  SHOAL_RETURN_IF_ERROR(ReadHello((*a)->reply.ok, hello));
  return peer;
}

std::vector<std::string> SampleTexts() {
  return {"the river runs past the old mill", "a second and different sentence",
          "the river runs past the old mill"};
}

// One item's result, whichever the task.
struct ItemResult {
  Status status;
  std::vector<float> values;  // the vector or the logits
  uint32_t tokens = 0;
  bool truncated = false;
};

// Batches of texts as the runtime takes them — the texts themselves or,
// from a runtime that takes tokens, the ids the model's tokenizer makes of
// them, as the worker sends them (token_feed.h) — and their replies read
// back. One batch at a time is read; requests may be written ahead.
class Batches {
 public:
  Batches(Task task, const TokenFeed* feed) : task_(task), feed_(feed) {}

  std::string Request(uint64_t id, std::string_view model, const std::vector<std::string>& texts, bool truncate) {
    return Request(id, model, texts, std::vector<bool>(texts.size(), truncate));
  }
  // `truncate` per text.
  std::string Request(uint64_t id, std::string_view model, const std::vector<std::string>& texts,
                      const std::vector<bool>& truncate) {
    texts_ = texts;
    const size_t n = texts_.size();
    if (task_ == Task::kScore) {
      score_in_.clear();
      for (size_t i = 0; i < n; ++i) {
        score_in_.push_back({.text = "which river", .text_pair = texts_[i], .truncate = truncate[i], .lora = {}});
      }
      score_out_.assign(n, {});
      if (!feed_) return ScoreRequest(id, model, score_in_);
      batch_ = feed_->Score(score_in_, score_out_);
    } else {
      encode_in_.clear();
      for (size_t i = 0; i < n; ++i) {
        encode_in_.push_back({.text = texts_[i], .truncate = truncate[i], .normalize = true, .lora = {}});
      }
      encode_out_.assign(n, {});
      if (!feed_) return EncodeRequest(id, model, encode_in_);
      batch_ = feed_->Encode(encode_in_, encode_out_);
    }
    return TokenBatchRequest(id, task_, model, batch_.inputs);
  }

  // The results of the last Request's batch.
  Result<std::vector<ItemResult>> Read(std::string_view ok) {
    std::vector<ItemResult> items;
    if (task_ == Task::kScore) {
      SHOAL_RETURN_IF_ERROR(feed_ ? TokenFeed::ReadScore(ok, batch_, score_out_)
                                  : ReadScoreOutputs(ok, score_out_));
      for (auto& o : score_out_) items.push_back({o.status, std::move(o.logits), o.tokens, o.truncated});
    } else {
      SHOAL_RETURN_IF_ERROR(feed_ ? TokenFeed::ReadEncode(ok, batch_, encode_out_)
                                  : ReadEncodeOutputs(ok, encode_out_));
      for (auto& o : encode_out_) items.push_back({o.status, std::move(o.dense), o.tokens, o.truncated});
    }
    return items;
  }

  // For a runtime that takes tokens: the last batch's items and one with
  // no ids at all, which it must refuse alone.
  std::string WithEmptyItem(uint64_t id, std::string_view model) const {
    std::vector<TokenInput> in = batch_.inputs;
    in.push_back({});
    return TokenBatchRequest(id, task_, model, in);
  }

 private:
  const Task task_;
  const TokenFeed* const feed_;
  std::vector<std::string> texts_;  // what the inputs' views point into
  std::vector<EncodeInput> encode_in_;
  std::vector<EncodeOutput> encode_out_;
  std::vector<ScoreInput> score_in_;
  std::vector<ScoreOutput> score_out_;
  TokenFeed::Batch batch_;
};

// The batch checks: `items` results, one vector size, finite, and equal for
// equal inputs (texts 0 and 2).
Status CheckBatch(Batches& batches, const Answer& a, size_t items, std::string* detail) {
  SHOAL_RETURN_IF_ERROR(ExpectOk(a));
  auto got = batches.Read(a.reply.ok);
  if (!got.ok()) return got.status();
  if (got->size() != items) return Internal("the reply has " + std::to_string(got->size()) + " items");
  for (const ItemResult& r : *got) {
    SHOAL_RETURN_IF_ERROR(r.status);
    if (r.tokens == 0) return Internal("an item reports 0 tokens");
    if (r.values.empty() || r.values.size() != (*got)[0].values.size()) {
      return Internal("the items' vectors differ in length");
    }
    for (float x : r.values) {
      if (!std::isfinite(x)) return Internal("a value is not finite");
    }
  }
  // Equal inputs, equal results — to float32 rounding: an engine may sum
  // in another order at another place in the batch (llama.cpp does).
  const auto& first = (*got)[0].values;
  const auto& third = (*got)[2].values;
  double diff = 0, scale = 1;
  for (size_t i = 0; i < first.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(first[i] - third[i])));
    scale = std::max(scale, static_cast<double>(std::abs(first[i])));
  }
  if (diff > 1e-5 * scale) {
    return Internal("the same input gave two different results in one batch (max difference " +
                    std::to_string(diff) + ")");
  }
  *detail = std::to_string(items) + " items of " + std::to_string(first.size()) + " values" +
            (diff > 0 ? ", equal inputs within " + std::to_string(diff) : "");
  return Status::Ok();
}

}  // namespace

std::vector<CheckResult> RunConformance(const ConformanceTarget& target, const ConformanceOptions& options,
                                        const std::function<void(const CheckResult&)>& report) {
  std::vector<CheckResult> results;
  auto add = [&](CheckResult r) {
    report(r);
    results.push_back(std::move(r));
  };
  const auto timeout = options.timeout;

  // 1. The handshake.
  RuntimeHello hello;
  auto peer = Greeted(target, timeout, &hello);
  if (!peer.ok()) {
    add(Fail("hello", peer.status().ToString()));
    return results;  // nothing else can be checked
  }
  if (hello.protocol != kProtocolVersion) {
    add(Fail("hello", "chose protocol " + std::to_string(hello.protocol)));
    return results;
  }
  std::string tasks;
  for (Task t : hello.tasks) tasks += (tasks.empty() ? "" : ", ") + std::string(TaskName(t));
  add(Pass("hello", "protocol 1, runtime '" + hello.runtime + "' (" + hello.version + "), tasks: " + tasks +
                        (hello.takes_tokens ? ", takes tokens" : "") + (hello.counts_tokens ? "" : ", counts no tokens")));
  Peer& p = **peer;

  // 2. Refusals on fresh connections.
  {
    auto fresh = Peer::Open(target);
    std::string out;
    wire::MsgpackWriter w(&out);
    w.MapHeader(3);
    w.Str("op");
    w.Str("hello");
    w.Str("id");
    w.Uint(1);
    w.Str("versions");
    w.ArrayHeader(1);
    w.Uint(999);
    Status s = fresh.ok() ? (*fresh)->Send(out) : fresh.status();
    auto a = s.ok() ? (*fresh)->Await(1, timeout) : Result<std::unique_ptr<Answer>>(s);
    if (!a.ok()) add(Fail("refuses an unknown version", a.status().ToString()));
    else if (Status e = ExpectError(**a, Code::kOk); !e.ok()) add(Fail("refuses an unknown version", e.message()));
    else if (!(*fresh)->ClosesWithin(timeout)) add(Fail("refuses an unknown version", "answered but kept the connection open"));
    else add(Pass("refuses an unknown version", (*a)->reply.error.ToString() + ", then closed"));
  }
  {
    auto fresh = Peer::Open(target);
    Status s = fresh.ok() ? (*fresh)->Send(PlainRequest(7, "health")) : fresh.status();
    auto a = s.ok() ? (*fresh)->Await(7, timeout) : Result<std::unique_ptr<Answer>>(s);
    if (!a.ok()) add(Fail("hello comes first", a.status().ToString()));
    else if (Status e = ExpectError(**a, Code::kOk); !e.ok()) add(Fail("hello comes first", e.message()));
    else add(Pass("hello comes first", (*a)->reply.error.ToString()));
  }

  uint64_t id = 100;
  auto call = [&](const std::string& request, uint64_t rid, std::vector<double>* progress = nullptr) {
    Status s = p.Send(request);
    return s.ok() ? p.Await(rid, timeout, progress) : Result<std::unique_ptr<Answer>>(s);
  };

  // 3. Reports.
  {
    const uint64_t rid = ++id;
    auto a = call(PlainRequest(rid, "health"), rid);
    uint32_t models = 0;
    Status s = a.ok() ? ExpectOk(**a) : a.status();
    if (s.ok()) s = ReadHealth((*a)->reply.ok, &models);
    add(s.ok() ? Pass("health", std::to_string(models) + " models") : Fail("health", s.ToString()));
  }
  {
    const uint64_t rid = ++id;
    auto a = call(PlainRequest(rid, "memory"), rid);
    MemoryReport m;
    Status s = a.ok() ? ExpectOk(**a) : a.status();
    if (s.ok()) s = ReadMemory((*a)->reply.ok, &m);
    if (s.ok() && m.rss_bytes == 0) s = Internal("rss_bytes is 0");
    add(s.ok() ? Pass("memory", std::to_string(m.rss_bytes >> 20) + " MiB resident") : Fail("memory", s.ToString()));
  }

  // 4. Bad requests are refused and the connection lives on.
  {
    std::string out;
    wire::MsgpackWriter w(&out);
    w.MapHeader(3);
    w.Str("op");
    w.Str("frobnicate");
    w.Str("id");
    w.Uint(++id);
    w.Str("x-future-field");
    w.Uint(1);
    auto a = call(out, id);
    Status s = a.ok() ? ExpectError(**a, Code::kInvalidInput) : a.status();
    const uint64_t rid = ++id;
    auto h = s.ok() ? call(PlainRequest(rid, "health"), rid) : Result<std::unique_ptr<Answer>>(s);
    if (s.ok()) s = h.ok() ? ExpectOk(**h) : h.status();
    add(s.ok() ? Pass("refuses an unknown op and carries on", "INVALID_INPUT, then health answered")
               : Fail("refuses an unknown op and carries on", s.ToString()));
  }
  {
    const uint64_t rid = ++id;
    const std::vector<int32_t> ids = {1, 2};
    const std::vector<TokenInput> token_in = {{.ids = ids, .type_ids = {}, .normalize = true, .lora = {}}};
    const std::vector<EncodeInput> text_in = {{.text = "x", .truncate = false, .normalize = true, .lora = {}}};
    auto a = call(hello.takes_tokens ? TokenBatchRequest(rid, Task::kEncode, "no-such-model", token_in)
                                     : EncodeRequest(rid, "no-such-model", text_in),
                  rid);
    Status s = a.ok() ? ExpectError(**a, Code::kModelNotFound) : a.status();
    add(s.ok() ? Pass("a batch for no loaded model", "MODEL_NOT_FOUND") : Fail("a batch for no loaded model", s.ToString()));
  }

  // 5. A model: load, batches, unload.
  if (!options.model) {
    add({"load and batches", Status::Ok(), "no model given (--profile)", true});
  } else if (options.model->task == Task::kExtract) {
    add({"load and batches", Status::Ok(), "an extract model: this suite does not check extract batches yet", true});
  } else {
    ModelConfig config = *options.model;
    const Task task = config.task == Task::kScore ? Task::kScore : Task::kEncode;
    std::unique_ptr<TokenFeed> feed;
    if (hello.takes_tokens) {
      auto opened = TokenFeed::Open(config);
      if (!opened.ok()) add(Fail("the model's tokenizer (the runtime takes tokens)", opened.status().ToString()));
      else feed = std::move(opened).value();
    }
    Batches batches(task, feed.get());
    {
      ModelConfig bad = config;
      bad.options.Set("no_such_option_for_conformance", int64_t{1});
      const uint64_t rid = ++id;
      auto a = call(LoadRequest(rid, "bad", bad, 1), rid);
      Status s = a.ok() ? ExpectError(**a, Code::kOk) : a.status();
      add(s.ok() ? Pass("refuses a load with an unknown option", (*a)->reply.error.ToString())
                 : Fail("refuses a load with an unknown option", s.ToString()));
    }
    const std::string handle = "check-model";
    const uint64_t rid = ++id;
    std::vector<double> progress;
    auto a = call(LoadRequest(rid, handle, config, 1), rid, &progress);
    LoadResult loaded;
    Status s = a.ok() ? ExpectOk(**a) : a.status();
    if (s.ok()) s = ReadLoadResult((*a)->reply.ok, &loaded);
    if (s.ok() && hello.takes_tokens && !feed) s = InvalidInput("Shoal cannot tokenize for this model");
    if (s.ok() && feed) feed->CapTokens(loaded.max_tokens);
    for (size_t i = 0; s.ok() && i < progress.size(); ++i) {
      if (progress[i] < 0 || progress[i] > 1 || (i > 0 && progress[i] < progress[i - 1])) {
        s = Internal("progress is not a non-decreasing fraction");
      }
    }
    add(s.ok() ? Pass("load", config.id + ": " + std::to_string(loaded.memory_bytes) + " bytes, " +
                                  std::to_string(progress.size()) + " progress replies")
               : Fail("load", s.ToString()));
    if (s.ok() && config.task == Task::kGenerate) {
      if (std::find(hello.tasks.begin(), hello.tasks.end(), Task::kGenerate) == hello.tasks.end()) {
        add(Fail("generate", "the model generates, but the hello does not list generate"));
      } else {
        CheckGeneration(p, handle, hello, timeout, id, add);
      }
    } else if (s.ok()) {
      const auto texts = SampleTexts();
      {
        const uint64_t b = ++id;
        auto r = call(batches.Request(b, handle, texts, false), b);
        std::string detail;
        Status c = r.ok() ? CheckBatch(batches, **r, texts.size(), &detail) : r.status();
        add(c.ok() ? Pass(std::string(TaskName(task)) + " batch", detail) : Fail(std::string(TaskName(task)) + " batch", c.ToString()));
      }
      if (feed) {
        // Limits and truncation are Shoal's (it tokenizes); an item with no
        // ids fails alone.
        const uint64_t b = ++id;
        (void)batches.Request(b, handle, {texts[0]}, false);
        auto r = call(batches.WithEmptyItem(b, handle), b);
        Status c = r.ok() ? ExpectOk(**r) : r.status();
        std::vector<EncodeOutput> eo(2);
        std::vector<ScoreOutput> so(2);
        if (c.ok()) c = task == Task::kScore ? ReadScoreOutputs((*r)->reply.ok, so) : ReadEncodeOutputs((*r)->reply.ok, eo);
        const Status first = task == Task::kScore ? so[0].status : eo[0].status;
        const Status second = task == Task::kScore ? so[1].status : eo[1].status;
        if (c.ok() && !first.ok()) c = Internal("the good item failed: " + first.ToString());
        if (c.ok() && second.code() != Code::kInvalidInput) {
          c = Internal("the item with no ids got " + second.ToString());
        }
        add(c.ok() ? Pass("per-item status", "the item with no ids: " + second.ToString())
                   : Fail("per-item status", c.ToString()));
      } else {
        // A batch of two: the first item succeeds, the second (`what`)
        // fails alone with INVALID_INPUT, its status in `second`.
        auto second_fails_alone = [&](const std::vector<std::string>& two, const std::vector<bool>& truncate,
                                      const std::string& what, Status* second) -> Status {
          const uint64_t b = ++id;
          auto r = call(batches.Request(b, handle, two, truncate), b);
          if (!r.ok()) return r.status();
          SHOAL_RETURN_IF_ERROR(ExpectOk(**r));
          SHOAL_ASSIGN_OR_RETURN(std::vector<ItemResult> got, batches.Read((*r)->reply.ok));
          if (!got[0].status.ok()) return Internal("the good item failed: " + got[0].status.ToString());
          *second = got[1].status;
          if (second->code() != Code::kInvalidInput) return Internal(what + " got " + second->ToString());
          return Status::Ok();
        };
        Status second;
        if (!hello.counts_tokens) {
          // Limits are the server's; an item asking to be truncated fails alone.
          Status c = second_fails_alone({texts[0], texts[1]}, {false, true}, "the item asking truncate", &second);
          add(c.ok() ? Pass("per-item status", "counts no tokens; the item asking truncate: " + second.ToString())
                     : Fail("per-item status", c.ToString()));
        } else {
          // An input over the model's limit fails alone, or is cut when asked.
          std::string longest;
          for (uint32_t i = 0; i < config.max_input_tokens + 8; ++i) longest += "word ";
          Status c = second_fails_alone({texts[0], longest}, {false, false}, "the long item", &second);
          const uint64_t t = ++id;
          auto cut = c.ok() ? call(batches.Request(t, handle, {longest}, true), t) : Result<std::unique_ptr<Answer>>(c);
          if (c.ok()) c = cut.ok() ? ExpectOk(**cut) : cut.status();
          auto cut_got = c.ok() ? batches.Read((*cut)->reply.ok) : Result<std::vector<ItemResult>>(c);
          if (c.ok()) c = cut_got.status();
          if (c.ok() && !(*cut_got)[0].truncated) c = Internal("truncate: true did not report the input as truncated");
          add(c.ok() ? Pass("per-item status and truncation", "the long item: " + second.ToString())
                     : Fail("per-item status and truncation", c.ToString()));
        }
      }
      {
        // Two batches in flight on one connection; replies may come in any order.
        const uint64_t b1 = ++id, b2 = ++id;
        Status c = p.Send(batches.Request(b1, handle, texts, false));
        if (c.ok()) c = p.Send(batches.Request(b2, handle, {texts[1]}, false));
        std::set<uint64_t> seen;
        for (int i = 0; c.ok() && i < 2; ++i) {
          std::string frame;
          c = p.Next(timeout, &frame);
          Reply r;
          if (c.ok()) c = ReadReply(frame, &r);
          if (c.ok() && r.kind == Reply::Kind::kProgress) --i;
          else if (c.ok()) seen.insert(r.id);
        }
        if (c.ok() && seen != std::set<uint64_t>{b1, b2}) c = Internal("the replies' ids do not match the requests'");
        add(c.ok() ? Pass("pipelined batches", "two in flight, both answered") : Fail("pipelined batches", c.ToString()));
      }
      if (std::find(hello.tasks.begin(), hello.tasks.end(), Task::kTokenize) != hello.tasks.end()) {
        const uint64_t b = ++id;
        std::vector<TokenizeInput> in = {{.text = texts[0]}};
        auto r = call(TokenizeRequest(b, handle, in), b);
        std::vector<TokenizeOutput> out(1);
        Status c = r.ok() ? ExpectOk(**r) : r.status();
        if (c.ok()) c = ReadTokenizeOutputs((*r)->reply.ok, out);
        if (c.ok()) c = out[0].status;
        if (c.ok() && out[0].tokens.empty()) c = Internal("no tokens");
        add(c.ok() ? Pass("tokenize", std::to_string(out[0].tokens.size()) + " tokens") : Fail("tokenize", c.ToString()));
      }
      {
        const uint64_t u = ++id, b = u + 1;
        id = b;
        auto r = call(UnloadRequest(u, handle), u);
        Status c = r.ok() ? ExpectOk(**r) : r.status();
        auto after = c.ok() ? call(batches.Request(b, handle, {texts[0]}, false), b)
                            : Result<std::unique_ptr<Answer>>(c);
        if (c.ok()) c = after.ok() ? ExpectError(**after, Code::kModelNotFound) : after.status();
        add(c.ok() ? Pass("unload", "then MODEL_NOT_FOUND") : Fail("unload", c.ToString()));
      }
    }
  }

  // 6. Stop: answered, then the connection closes (and a started process exits).
  {
    const uint64_t rid = ++id;
    auto a = call(PlainRequest(rid, "stop"), rid);
    Status s = a.ok() ? ExpectOk(**a) : a.status();
    if (s.ok() && !p.ClosesWithin(timeout)) s = Internal("answered stop but kept the connection open");
    if (s.ok() && !p.ExitsWithin(timeout)) s = Internal("the process did not exit after stop");
    add(s.ok() ? Pass("stop", "answered, closed, exited") : Fail("stop", s.ToString()));
  }
  return results;
}

}  // namespace shoal::runtime_process
