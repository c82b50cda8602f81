#include "runtime/upstream/upstream_runtime.h"

#include <algorithm>
#include <cstdlib>
#include <future>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "runtime/upstream/openai_wire.h"
#include "runtime/upstream/upstream_http.h"
#include "runtime/upstream/upstream_options.h"
#include "runtime/upstream/upstream_streams.h"

namespace shoal {
namespace {

using upstream::Endpoint;
using upstream::UpstreamHttp;

// What an upstream model holds here: connections and buffers, not weights.
constexpr size_t kUpstreamModelBytes = 1 << 20;

class UpstreamModel final : public Model {
 public:
  UpstreamModel(ModelConfig config, Endpoint endpoint)
      : config_(std::move(config)),
        http_(endpoint),
        streams_(config_.task == Task::kGenerate
                     ? std::make_unique<upstream::UpstreamStreams>(std::move(endpoint), config_.max_batch_requests)
                     : nullptr) {}

  const ModelConfig& config() const override { return config_; }
  size_t memory_bytes() const override { return kUpstreamModelBytes; }
  StreamingGenerator* streaming_generator() override { return streams_.get(); }

  Status Encode(std::span<const EncodeInput> in, std::span<EncodeOutput> out) override {
    if (config_.task != Task::kEncode) return Model::Encode(in, out);
    std::vector<const EncodeInput*> inputs;
    std::vector<EncodeOutput*> outputs;
    for (size_t i = 0; i < in.size(); ++i) {
      out[i] = EncodeOutput();
      if (!in[i].lora.empty()) {
        out[i].status = Status(Code::kModelNotFound, "lora '" + std::string(in[i].lora) +
                                                         "': an upstream model has no adapters in Shoal");
      } else if (in[i].truncate) {
        out[i].status = InvalidInput("truncate: an upstream model cannot be asked to truncate (the upstream "
                                     "decides what an over-long input does)");
      } else {
        inputs.push_back(&in[i]);
        outputs.push_back(&out[i]);
      }
    }
    if (inputs.empty()) return Status::Ok();
    // Calls of at most inputs_per_call texts (TEI refuses larger ones;
    // llama-server runs that many at once), all sent at once.
    const size_t per_call = http_.endpoint().options.inputs_per_call;
    const size_t step = per_call == 0 ? inputs.size() : per_call;
    auto call = [this, &inputs, &outputs, step](size_t at) {
      const size_t n = std::min(step, inputs.size() - at);
      return EmbedEach(std::span(inputs).subspan(at, n), std::span(outputs).subspan(at, n));
    };
    std::vector<std::future<Status>> others;
    for (size_t at = step; at < inputs.size(); at += step) others.push_back(std::async(std::launch::async, call, at));
    Status first = call(0);
    for (auto& f : others) {
      Status s = f.get();
      if (first.ok()) first = std::move(s);
    }
    return first;
  }

 private:
  // One call for `in`; where the upstream refuses it for one input or
  // more, one call each, so that each input gets its own answer.
  Status EmbedEach(std::span<const EncodeInput* const> in, std::span<EncodeOutput* const> out) {
    Status whole = Embed(in, out);
    if (whole.code() != Code::kInvalidInput) return whole;
    if (in.size() == 1) {
      out[0]->status = std::move(whole);
      return Status::Ok();
    }
    for (size_t k = 0; k < in.size(); ++k) {
      Status s = Embed(in.subspan(k, 1), out.subspan(k, 1));
      if (s.code() == Code::kInvalidInput) {
        out[k]->status = std::move(s);
      } else if (!s.ok()) {
        return s;
      }
    }
    return Status::Ok();
  }

  // One POST /embeddings for `in`. INVALID_INPUT: the upstream refused the
  // inputs; any other error is the whole call's.
  Status Embed(std::span<const EncodeInput* const> in, std::span<EncodeOutput* const> out) {
    auto reply = http_.Call("/embeddings", upstream::EmbeddingsBody(http_.endpoint().options.model, in));
    if (!reply.ok()) return reply.status();
    if (reply->status < 200 || reply->status >= 300) {
      return upstream::ErrorFromReply(http_.endpoint(), reply->status, reply->body);
    }
    return upstream::ReadEmbeddings(reply->body, in, out);
  }

  const ModelConfig config_;
  UpstreamHttp http_;
  std::unique_ptr<upstream::UpstreamStreams> streams_;  // generators only
};

// GET /models: where the server answers with its list, it must list this
// model, and it must accept the key. A server that cannot be reached or
// fails now may come back: the model loads, its requests wait in the queue
// (registration's test request is what refuses an unreachable server).
Status Probe(UpstreamHttp& http, const std::string& id) {
  const upstream::UpstreamOptions& o = http.endpoint().options;
  auto reply = http.Call("/models", "");
  if (!reply.ok() || reply->status >= 500) {
    spdlog::warn("upstream: {}: {} does not answer now ({}); loading it anyway", id, o.base_url,
                 reply.ok() ? "status " + std::to_string(reply->status) : reply.status().message());
    return Status::Ok();
  }
  if (reply->status == 404) return Status::Ok();  // a server without the listing (TEI's older versions)
  if (reply->status < 200 || reply->status >= 300) {
    return InvalidInput("model '" + id + "': " + upstream::ErrorFromReply(http.endpoint(), reply->status, reply->body).message());
  }
  const auto listing = nlohmann::json::parse(reply->body, nullptr, false);
  const auto data = listing.is_object() ? listing.find("data") : listing.end();
  if (data == listing.end() || !data->is_array()) {
    return InvalidInput("model '" + id + "': upstream " + o.base_url + "/models did not answer an OpenAI model list");
  }
  std::string names;
  for (const auto& m : *data) {
    const auto mid = m.is_object() ? m.find("id") : m.end();
    if (mid == m.end() || !mid->is_string()) continue;
    if (*mid == o.model) return Status::Ok();
    names += (names.empty() ? "" : ", ") + mid->get<std::string>();
  }
  return InvalidInput("model '" + id + "': upstream " + o.base_url + " does not serve '" + o.model +
                      "' (it lists: " + (names.empty() ? "nothing" : names) + "); set upstream.model");
}

// ServerCallLimit from the server's root (base_url without its /v1): 0
// where it answers neither route.
uint32_t AskCallLimit(const Endpoint& endpoint) {
  Endpoint root = endpoint;
  std::string& url = root.options.base_url;
  if (url.ends_with("/v1")) url.resize(url.size() - 3);
  UpstreamHttp http(std::move(root));
  auto body = [&](const char* path) {
    auto reply = http.Call(path, "");
    return reply.ok() && reply->status == 200 ? reply->body : std::string();
  };
  const std::string props = body("/props");
  return upstream::ServerCallLimit(props, props.empty() ? body("/info") : "");
}

}  // namespace

Result<std::unique_ptr<Model>> UpstreamRuntime::Load(const ModelConfig& config, const LoadContext&) {
  if (config.task != Task::kEncode && config.task != Task::kGenerate) {
    return InvalidInput("model '" + config.id + "': the upstream runtime serves encode and generate, not " +
                        std::string(TaskName(config.task)));
  }
  auto options = upstream::ParseUpstreamOptions(config.options, config.id);
  if (!options.ok()) return options.status();
  if (config.task == Task::kGenerate && options->inputs_per_call > 0) {
    return InvalidInput("upstream.inputs_per_call: for an embedder's /embeddings calls; a generator's requests "
                        "stream one each");
  }
  Endpoint endpoint{std::move(options).value(), ""};
  if (const std::string& var = endpoint.options.api_key_env; !var.empty()) {
    const char* key = std::getenv(var.c_str());
    if (!key || !*key) {
      return InvalidInput("model '" + config.id + "': upstream.api_key_env names " + var +
                          ", which is not set in the worker's environment");
    }
    endpoint.api_key = key;
  }
  UpstreamHttp probe(endpoint);
  SHOAL_RETURN_IF_ERROR(Probe(probe, config.id));
  spdlog::info("upstream: {} is {} at {}", config.id, endpoint.options.model, endpoint.options.base_url);
  if (config.task == Task::kEncode && endpoint.options.inputs_per_call == 0) {
    endpoint.options.inputs_per_call = AskCallLimit(endpoint);
    if (endpoint.options.inputs_per_call > 0) {
      spdlog::info("upstream: {}: at most {} texts a call, as the server says", config.id,
                   endpoint.options.inputs_per_call);
    }
  }
  return std::unique_ptr<Model>(std::make_unique<UpstreamModel>(config, std::move(endpoint)));
}

std::vector<std::string> UpstreamRuntime::logit_adjustments() const { return upstream::UpstreamAdjustments(); }

}  // namespace shoal
