#include "runtime/native/lora/lora_adapter.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>

#include "runtime/native/loaders/hf_config.h"
#include "runtime/native/loaders/safetensors.h"

namespace shoal::native {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "base_model.model.";

// Module paths are equal up to a leading prefix of whole components.
bool SameModule(std::string_view a, std::string_view b) {
  if (a.size() < b.size()) std::swap(a, b);
  return a == b || (a.ends_with(b) && a[a.size() - b.size() - 1] == '.');
}

// PEFT's rule for a target name: the whole path, or its last components.
bool NameMatches(std::string_view module, std::string_view name) {
  return module == name || (module.ends_with(name) && module.size() > name.size() &&
                            module[module.size() - name.size() - 1] == '.');
}

bool StripSuffix(std::string_view s, std::string_view suffix, std::string_view* rest) {
  if (!s.ends_with(suffix)) return false;
  *rest = s.substr(0, s.size() - suffix.size());
  return true;
}

// Index of the target whose module is `module`, or -1.
int FindTarget(const std::vector<LoraTargets::Linear>& targets, std::string_view module) {
  for (size_t i = 0; i < targets.size(); ++i) {
    if (SameModule(targets[i].module, module)) return static_cast<int>(i);
  }
  return -1;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The adapter_config.json fields Shoal runs, checked.
struct AdapterConfig {
  uint32_t rank = 0;
  float scaling = 1.0f;
  std::vector<std::string> target_names;  // or:
  std::string target_regex;               // a string target_modules
  bool all_linear = false;
  bool saves_modules = false;
};

Result<AdapterConfig> ReadConfig(const std::string& path) {
  SHOAL_ASSIGN_OR_RETURN(const nlohmann::json j, ReadJsonFile(path));
  if (!j.is_object()) return InvalidInput(path + ": expected a JSON object");
  auto bad = [&](const std::string& what) { return InvalidInput(path + ": " + what); };
  const std::string type = j.value("peft_type", "");
  if (type != "LORA") return bad("peft_type " + (type.empty() ? "missing" : "'" + type + "'") + "; Shoal runs LORA");
  if (j.value("use_dora", false)) return bad("use_dora: DoRA adapters are not supported");
  if (j.contains("bias") && j["bias"] != "none") return bad("bias: LoRA biases are not supported (bias must be \"none\")");
  if (j.value("fan_in_fan_out", false)) return bad("fan_in_fan_out: Conv1D (GPT-2 style) layers are not supported");
  for (const char* pattern : {"rank_pattern", "alpha_pattern"}) {
    if (j.contains(pattern) && !j[pattern].is_null() && !j[pattern].empty()) {
      return bad(std::string(pattern) + ": per-module ranks and alphas are not supported");
    }
  }
  AdapterConfig c;
  if (!j.contains("r") || !j["r"].is_number_unsigned() || j["r"].get<uint64_t>() == 0 ||
      j["r"].get<uint64_t>() > 256) {
    return bad("r: expected a rank from 1 to 256");
  }
  c.rank = j["r"].get<uint32_t>();
  const double alpha = j.contains("lora_alpha") && j["lora_alpha"].is_number() ? j["lora_alpha"].get<double>() : c.rank;
  c.scaling = static_cast<float>(j.value("use_rslora", false) ? alpha / std::sqrt(static_cast<double>(c.rank))
                                                               : alpha / c.rank);
  const auto& t = j.contains("target_modules") ? j["target_modules"] : nlohmann::json();
  if (t.is_string()) {
    const std::string s = t.get<std::string>();
    if (s == "all-linear") {
      c.all_linear = true;
    } else {
      c.target_regex = s;
    }
  } else if (t.is_array() && !t.empty()) {
    for (const auto& name : t) {
      if (!name.is_string()) return bad("target_modules: expected names");
      c.target_names.push_back(name.get<std::string>());
    }
  } else {
    return bad("target_modules: expected a list of module names, a regular expression or \"all-linear\"");
  }
  const auto& save = j.contains("modules_to_save") ? j["modules_to_save"] : nlohmann::json();
  c.saves_modules = save.is_array() && !save.empty();
  return c;
}

// Every target name (or the expression) must name some dense layer.
Status CheckTargets(const AdapterConfig& c, const LoraTargets& targets, const std::string& path) {
  if (c.all_linear) return Status::Ok();
  if (!c.target_regex.empty()) {
    std::regex re;
    try {
      re = std::regex(c.target_regex);
    } catch (const std::regex_error& e) {
      return InvalidInput(path + ": target_modules: not a regular expression: " + e.what());
    }
    for (const auto& t : targets.linears) {
      if (std::regex_match(t.module, re)) return Status::Ok();
    }
    return InvalidInput(path + ": target_modules '" + c.target_regex + "' matches none of the model's dense layers");
  }
  for (const std::string& name : c.target_names) {
    bool found = false;
    for (const auto& t : targets.linears) found = found || NameMatches(t.module, name);
    if (!found) {
      return InvalidInput(path + ": target_modules: '" + name + "' names none of the model's dense layers (e.g. " +
                          (targets.linears.empty() ? std::string("none") : targets.linears.front().module) + ")");
    }
  }
  return Status::Ok();
}

}  // namespace

bool LoraAdapter::replaces_any() const {
  for (const auto& r : replacements_) {
    if (r) return true;
  }
  return false;
}

Result<std::unique_ptr<LoraAdapter>> LoraAdapter::Load(const std::string& dir, const LoraTargets& targets) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return InvalidInput(dir + ": not a directory");
  const std::string config_path = (root / "adapter_config.json").string();
  if (!fs::exists(config_path, ec)) return InvalidInput(dir + ": no adapter_config.json (not a PEFT adapter)");
  SHOAL_ASSIGN_OR_RETURN(const AdapterConfig config, ReadConfig(config_path));
  SHOAL_RETURN_IF_ERROR(CheckTargets(config, targets, config_path));
  const std::string weights_path = (root / "adapter_model.safetensors").string();
  if (!fs::exists(weights_path, ec)) {
    return InvalidInput(dir + ": no adapter_model.safetensors" +
                        (fs::exists(root / "adapter_model.bin", ec)
                             ? std::string(" (adapter_model.bin is a pickle: save with safe_serialization=True)")
                             : std::string()));
  }
  SHOAL_ASSIGN_OR_RETURN(const auto weights, SafeTensors::OpenFile(weights_path));

  std::unique_ptr<LoraAdapter> a(new LoraAdapter());
  a->rank_ = config.rank;
  a->scaling_ = config.scaling;
  a->updates_.resize(targets.linears.size());
  a->replacements_.resize(targets.replaceable.size());
  // The A and B of each adapted module, by target index.
  std::vector<std::string> a_names(targets.linears.size()), b_names(targets.linears.size());
  std::vector<std::string> w_names(targets.replaceable.size()), bias_names(targets.replaceable.size());
  for (std::string_view name : weights->names()) {
    auto bad = [&](const std::string& why) { return InvalidInput(weights_path + ": tensor " + std::string(name) + ": " + why); };
    const std::string_view rest = name.starts_with(kPrefix) ? name.substr(kPrefix.size()) : name;
    std::string_view module;
    const bool is_a = StripSuffix(rest, ".lora_A.weight", &module);
    const bool is_b = !is_a && StripSuffix(rest, ".lora_B.weight", &module);
    if (is_a || is_b) {
      const int t = FindTarget(targets.linears, module);
      if (t < 0 && std::any_of(targets.unused.begin(), targets.unused.end(),
                               [&](const std::string& u) { return SameModule(u, module); })) {
        continue;  // a layer this model has but never runs
      }
      if (t < 0) return bad("adapts a module this model cannot (only its attention and MLP dense layers)");
      (is_a ? a_names : b_names)[t] = std::string(name);
      continue;
    }
    if (rest.find("lora_magnitude_vector") != std::string_view::npos) return bad("DoRA is not supported");
    if (rest.find(".lora_") != std::string_view::npos) return bad("only lora_A / lora_B weights are supported");
    const bool is_weight = StripSuffix(rest, ".weight", &module);
    const bool is_bias = !is_weight && StripSuffix(rest, ".bias", &module);
    const int r = (is_weight || is_bias) && config.saves_modules ? FindTarget(targets.replaceable, module) : -1;
    if (r < 0) return bad("not a LoRA weight nor a module of modules_to_save this model can replace");
    (is_weight ? w_names : bias_names)[r] = std::string(name);
  }

  bool any = false;
  for (size_t t = 0; t < targets.linears.size(); ++t) {
    const LoraTargets::Linear& target = targets.linears[t];
    if (a_names[t].empty() != b_names[t].empty()) {
      return InvalidInput(weights_path + ": " + target.module + " has lora_" + (a_names[t].empty() ? "B" : "A") +
                          " without its pair");
    }
    if (a_names[t].empty()) continue;
    const TensorView* av = weights->Find(a_names[t]);
    const TensorView* bv = weights->Find(b_names[t]);
    const auto r = static_cast<int64_t>(config.rank);
    if (av->shape.size() != 2 || bv->shape.size() != 2 || av->shape[0] != bv->shape[1]) {
      return InvalidInput(weights_path + ": " + target.module + ": lora_A " + ShapeText(av->shape) + " and lora_B " +
                          ShapeText(bv->shape) + " are not [r, in] and [out, r]");
    }
    if (av->shape[0] != r) {
      return InvalidInput(weights_path + ": " + target.module + " has rank " + std::to_string(av->shape[0]) +
                          "; adapter_config.json says r " + std::to_string(r));
    }
    std::vector<float> a_storage, b_storage;
    const auto in = static_cast<int64_t>(target.in), out = static_cast<int64_t>(target.out);
    auto af = weights->F32(a_names[t], {r, in}, &a_storage);
    if (!af.ok()) return InvalidInput(target.module + ": lora_A does not fit the model's layer (" + std::to_string(in) +
                                      " inputs): " + af.status().message());
    auto bf = weights->F32(b_names[t], {out, r}, &b_storage);
    if (!bf.ok()) return InvalidInput(target.module + ": lora_B does not fit the model's layer (" + std::to_string(out) +
                                      " outputs): " + bf.status().message());
    auto u = std::make_unique<LoraUpdate>();
    u->rank = config.rank;
    u->in = target.in;
    u->out = target.out;
    u->at.resize(static_cast<size_t>(in * r));
    for (int64_t k = 0; k < r; ++k) {
      for (int64_t i = 0; i < in; ++i) u->at[i * r + k] = (*af)[k * in + i];
    }
    u->bt.resize(static_cast<size_t>(out * r));
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t k = 0; k < r; ++k) u->bt[k * out + o] = config.scaling * (*bf)[o * r + k];
    }
    a->bytes_ += (u->at.size() + u->bt.size()) * sizeof(float);
    a->updates_[t] = std::move(u);
    any = true;
  }
  for (size_t r = 0; r < targets.replaceable.size(); ++r) {
    if (w_names[r].empty() && bias_names[r].empty()) continue;
    const LoraTargets::Linear& target = targets.replaceable[r];
    if (w_names[r].empty() || bias_names[r].empty()) {
      return InvalidInput(weights_path + ": modules_to_save " + target.module + " needs both weight and bias");
    }
    std::vector<float> ws, bs;
    const auto in = static_cast<int64_t>(target.in), out = static_cast<int64_t>(target.out);
    auto wf = weights->F32(w_names[r], {out, in}, &ws);
    if (!wf.ok()) return InvalidInput("modules_to_save " + target.module + ": " + wf.status().message());
    auto bf = weights->F32(bias_names[r], {out}, &bs);
    if (!bf.ok()) return InvalidInput("modules_to_save " + target.module + ": " + bf.status().message());
    SHOAL_ASSIGN_OR_RETURN(a->replacements_[r], cpu::Linear::Create(*wf, cpu::WeightLayout::kOutIn, target.in,
                                                                    target.out, *bf, cpu::Precision::kF32));
    a->bytes_ += a->replacements_[r]->memory_bytes();
    any = true;
  }
  if (!any) return InvalidInput(weights_path + ": no LoRA weights");
  return a;
}

bool AnyLora(std::span<const LoraSegment> segments, size_t target) {
  for (const LoraSegment& s : segments) {
    if (s.adapter && s.adapter->update(target)) return true;
  }
  return false;
}

void AddLoraRows(std::vector<LoraSegment>* runs, size_t rows, const LoraAdapter* adapter) {
  if (runs->empty() || runs->back().adapter != adapter) {
    runs->push_back({runs->empty() ? 0 : runs->back().first + runs->back().rows, 0, adapter});
  }
  runs->back().rows += rows;
}

void ApplyLora(std::span<const LoraSegment> segments, size_t target, const float* x, size_t in, float* y,
               size_t ldy, size_t offset, int threads) {
  thread_local std::vector<cpu::LowRankBlock> blocks;
  blocks.clear();
  for (const LoraSegment& s : segments) {
    const LoraUpdate* u = s.adapter ? s.adapter->update(target) : nullptr;
    if (u == nullptr || s.rows == 0) continue;
    blocks.push_back({.x = x + s.first * in, .y = y + s.first * ldy + offset, .rows = s.rows, .in = in,
                      .out = u->out, .ldy = ldy, .at = u->at.data(), .bt = u->bt.data(), .rank = u->rank});
  }
  if (blocks.empty()) return;
  // Ranks were checked at load (≤ 256), so this cannot fail.
  (void)cpu::LowRankUpdate(blocks, threads);
}

}  // namespace shoal::native
