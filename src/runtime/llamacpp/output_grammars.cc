#include "runtime/llamacpp/output_grammars.h"

#include "runtime/structured/json_schema_grammar.h"
#include "runtime/llamacpp/llamacpp_backend.h"

namespace shoal::llamacpp {

namespace {

SamplerPtr Chain(std::shared_ptr<const Utf8Table> utf8, const llama_sampler* grammar) {
  llama_sampler_chain_params params = llama_sampler_chain_default_params();
  params.no_perf = true;
  SamplerPtr chain(llama_sampler_chain_init(params));
  llama_sampler_chain_add(chain.get(), MakeUtf8Guard(std::move(utf8)).release());
  llama_sampler_chain_add(chain.get(), llama_sampler_clone(grammar));
  return chain;
}

}  // namespace

Result<SamplerPtr> OutputGrammars::Get(const OutputFormat& format) {
  if (format.kind == OutputFormat::Kind::kText) return SamplerPtr();
  const bool schema = format.kind == OutputFormat::Kind::kJsonSchema;
  std::string key = schema ? "schema:" + format.schema_json : "object";
  std::shared_ptr<const Utf8Table> utf8;
  {
    std::lock_guard lock(mu_);
    if (!utf8_) utf8_ = std::make_shared<const Utf8Table>(vocab_);
    utf8 = utf8_;
    if (auto it = compiled_.find(key); it != compiled_.end()) return Chain(utf8, it->second.get());
  }
  std::string grammar;
  if (schema) {
    SHOAL_ASSIGN_OR_RETURN(grammar, structured::JsonSchemaGrammar(format.schema_json));
  } else {
    grammar = structured::JsonObjectGrammar();
  }
  LogCapture capture;
  SamplerPtr compiled(llama_sampler_init_grammar(vocab_, grammar.c_str(), "root"));
  if (!compiled) {
    return InvalidInput("response_format: llama.cpp refused the grammar Shoal wrote for this schema (" +
                        capture.Reason() + ")");
  }
  SamplerPtr copy = Chain(utf8, compiled.get());
  std::lock_guard lock(mu_);
  if (compiled_.emplace(key, std::move(compiled)).second) {
    order_.push_back(std::move(key));
    if (order_.size() > kCapacity) {
      compiled_.erase(order_.front());
      order_.pop_front();
    }
  }
  return copy;
}

}  // namespace shoal::llamacpp
