#include "admin/model_directory.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "admin/gguf_header.h"
#include "catalog/names.h"
#include "runtime/registry/registry.h"

namespace shoal::admin {
namespace {

namespace fs = std::filesystem;

Result<nlohmann::json> ReadConfig(const fs::path& config_path) {
  std::ifstream in(config_path);
  if (!in) return InvalidInput("cannot read " + config_path.string());
  std::stringstream text;
  text << in.rdbuf();
  auto config = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) return InvalidInput(config_path.string() + ": not a JSON object");
  return config;
}

// The task config.json's architectures imply: a token classifier, or a
// sequence classifier that names several labels (id2label, num_labels) or
// is multi-label, extracts; another sequence classifier is a reranker
// (score); a causal LM generates, unless sentence-transformers saved it
// (modules.json: a decoder embedder such as Qwen3-Embedding), and so does a
// vision-language model (…ForConditionalGeneration); an image
// classifier extracts; the rest (image towers too) encode.
Task TaskFromConfig(const nlohmann::json& config, const fs::path& dir) {
  if (auto a = config.find("architectures"); a != config.end() && a->is_array()) {
    for (const auto& name : *a) {
      if (!name.is_string()) continue;
      const std::string arch = name.get<std::string>();
      if (arch.ends_with("ForTokenClassification") || arch.ends_with("ForImageClassification")) {
        return Task::kExtract;
      }
      if (arch.ends_with("ForSequenceClassification")) {
        size_t labels = 1;
        if (auto m = config.find("id2label"); m != config.end() && m->is_object()) labels = m->size();
        if (auto n = config.find("num_labels"); n != config.end() && n->is_number_unsigned()) {
          labels = n->get<size_t>();
        }
        const bool multi_label = config.value("problem_type", "") == "multi_label_classification";
        return labels == 1 && !multi_label ? Task::kScore : Task::kExtract;
      }
      if (arch.ends_with("ForConditionalGeneration")) return Task::kGenerate;  // a vision-language model (LLaVA)
      if (arch.ends_with("ForCausalLM")) {
        std::error_code ec;
        return fs::exists(dir / "modules.json", ec) ? Task::kEncode : Task::kGenerate;
      }
    }
  }
  return Task::kEncode;
}

// A two-tower image–text model scores a text against images too: CLIP's
// logits through a softmax over the candidates, SigLIP's through a sigmoid.
ImageTextScore ImageTextScoreFromConfig(const nlohmann::json& config) {
  const auto a = config.find("architectures");
  if (a == config.end() || !a->is_array() || a->empty()) return ImageTextScore::kNone;
  if ((*a)[0] == "CLIPModel") return ImageTextScore::kSoftmax;
  if ((*a)[0] == "SiglipModel") return ImageTextScore::kSigmoid;
  return ImageTextScore::kNone;
}

// The JSON of `path`; null when there is no such file.
Result<nlohmann::json> ReadOptionalJson(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json();
  std::stringstream text;
  text << in.rdbuf();
  auto j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidInput(path.string() + ": not JSON");
  return j;
}

// An embedder's prompts, from sentence-transformers'
// config_sentence_transformers.json ({"prompts": {"query": "query: "}});
// none when the file is absent.
Status ReadPrompts(const fs::path& dir, ModelSpec* spec) {
  const fs::path path = dir / "config_sentence_transformers.json";
  SHOAL_ASSIGN_OR_RETURN(const nlohmann::json config, ReadOptionalJson(path));
  if (config.is_null()) return Status::Ok();
  if (!config.is_object()) return InvalidInput(path.string() + ": not a JSON object");
  auto prompts = config.find("prompts");
  if (prompts == config.end() || prompts->is_null()) return Status::Ok();
  if (!prompts->is_object()) return InvalidInput(path.string() + ": prompts: expected an object of strings");
  for (auto it = prompts->begin(); it != prompts->end(); ++it) {
    if (!it.value().is_string()) return InvalidInput(path.string() + ": prompts." + it.key() + ": expected a string");
    if (!it.value().get<std::string>().empty()) spec->prompts.emplace_back(it.key(), it.value().get<std::string>());
  }
  return Status::Ok();
}

// An encoder's outputs from sentence-transformers' modules.json: SPLADE's
// SpladePooling gives sparse vectors, PyLate's Dense (ColBERT) one per
// token; bge-m3's head files add sparse and multi-vector outputs to its
// dense one; otherwise dense (left unset). The runtime reads the rest.
Status ReadOutputs(const fs::path& dir, ModelSpec* spec) {
  std::error_code ec;
  const bool m3_sparse = fs::is_regular_file(dir / "sparse_linear.pt", ec);
  const bool m3_colbert = fs::is_regular_file(dir / "colbert_linear.pt", ec);
  if (m3_sparse || m3_colbert) {
    spec->outputs = static_cast<OutputKinds>(OutputKind::kDense) |
                    (m3_sparse ? static_cast<OutputKinds>(OutputKind::kSparse) : 0) |
                    (m3_colbert ? static_cast<OutputKinds>(OutputKind::kMultivector) : 0);
    return Status::Ok();
  }
  const fs::path path = dir / "modules.json";
  SHOAL_ASSIGN_OR_RETURN(const nlohmann::json modules, ReadOptionalJson(path));
  if (modules.is_null()) return Status::Ok();
  if (!modules.is_array()) return InvalidInput(path.string() + ": expected a list of modules");
  for (const auto& m : modules) {
    const std::string type = m.is_object() ? m.value("type", "") : "";
    if (type.ends_with(".SpladePooling")) spec->outputs = static_cast<OutputKinds>(OutputKind::kSparse);
    if (type.starts_with("pylate.") && type.ends_with(".Dense")) {
      spec->outputs = static_cast<OutputKinds>(OutputKind::kMultivector);
    }
  }
  return Status::Ok();
}

// The GGUF files at the top of `dir`, sorted.
std::vector<fs::path> GgufFiles(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec) && e.path().extension() == ".gguf") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The runtime a directory's weights call for: safetensors (a Hugging Face
// checkpoint) → native, or pytorch (transformers) for a model type native
// does not run; else an ONNX graph → onnx; else a TorchScript module →
// pytorch; else a .gguf file → llamacpp; else as a checkpoint (whose load
// then says what is missing).
// The file names are the ones the sidecars look for by default.
std::string RuntimeFor(const fs::path& dir, const nlohmann::json& config) {
  std::error_code ec;
  auto has = [&](const char* name) { return fs::is_regular_file(dir / name, ec); };
  const auto type = config.find("model_type");
  const std::string checkpoint(
      RuntimeForModelType(type != config.end() && type->is_string() ? type->get<std::string>() : ""));
  if (has("model.safetensors")) return checkpoint;
  if (has("model.onnx") || has("onnx/model.onnx")) return "onnx";
  if (has("model.pt") || has("model.torchscript") || has("traced_model.pt")) return "pytorch";
  if (!GgufFiles(dir).empty()) return "llamacpp";
  return checkpoint;
}

// The task of a GGUF: llama.cpp's encoder architectures embed; the others
// generate.
Result<Task> TaskFromGguf(const fs::path& file) {
  auto arch = GgufArchitecture(file.string());
  if (!arch.ok()) return arch.status();
  static constexpr std::string_view kEmbedders[] = {"bert",        "nomic-bert",  "nomic-bert-moe", "jina-bert-v2",
                                                    "jina-bert-v3", "modern-bert", "neo-bert",       "t5encoder",
                                                    "gemma-embedding"};
  for (std::string_view e : kEmbedders) {
    if (*arch == e) return Task::kEncode;
  }
  return Task::kGenerate;
}

}  // namespace

Result<ModelSpec> SpecFromDirectory(const std::string& dir_arg, std::string_view id) {
  std::error_code ec;
  const fs::path dir = fs::weakly_canonical(fs::absolute(dir_arg), ec);
  if (ec || !fs::is_directory(dir, ec)) return InvalidInput("path: " + dir_arg + " is not a directory");

  ModelSpec spec;
  if (const fs::path profile = dir / "shoal.yaml"; fs::exists(profile, ec)) {
    auto loaded = ModelSpec::LoadFile(profile.string());
    if (!loaded.ok()) return loaded.status();
    spec = std::move(loaded).value();
    if (spec.path.empty()) spec.path = dir.string();
    SHOAL_RETURN_IF_ERROR(CompleteFromFiles(&spec));
  } else {
    const fs::path config = dir / "config.json";
    const bool use_lite = fs::exists(dir / "model.json", ec) && fs::exists(dir / "vocab.json", ec);
    const std::vector<fs::path> gguf = GgufFiles(dir);
    if (!fs::exists(config, ec) && !use_lite && gguf.empty()) {
      return InvalidInput("path: " + dir.string() +
                          " has neither a shoal.yaml profile, a config.json (Hugging Face layout) nor a .gguf file");
    }
    nlohmann::json json = nlohmann::json::object();
    if (!use_lite && fs::exists(config, ec)) {
      SHOAL_ASSIGN_OR_RETURN(json, ReadConfig(config));
    }
    spec.id = dir.filename().string();
    spec.runtime = use_lite ? "native" : RuntimeFor(dir, json);
    spec.path = dir.string();
    if (spec.runtime == "llamacpp") {
      // One file, or the profile's llamacpp.file says which (the runtime refuses several).
      auto task = TaskFromGguf(gguf.front());
      if (!task.ok()) return task.status();
      spec.task = *task;
    } else if (!use_lite) {
      spec.task = TaskFromConfig(json, dir);
      SHOAL_RETURN_IF_ERROR(CompleteFromFiles(&spec));
    }
  }
  if (!id.empty()) spec.id = std::string(id);
  SHOAL_RETURN_IF_ERROR(ValidateModelId(spec.id));
  return spec;
}

Status CompleteFromFiles(ModelSpec* spec) {
  std::error_code ec;
  const fs::path dir = spec->path;
  if (spec->task != Task::kEncode || dir.empty() || !fs::is_regular_file(dir / "config.json", ec)) {
    return Status::Ok();
  }
  if (spec->outputs == 0) SHOAL_RETURN_IF_ERROR(ReadOutputs(dir, spec));
  if (spec->prompts.empty()) SHOAL_RETURN_IF_ERROR(ReadPrompts(dir, spec));
  if (spec->image_text_score == ImageTextScore::kNone) {
    SHOAL_ASSIGN_OR_RETURN(const nlohmann::json config, ReadConfig(dir / "config.json"));
    spec->image_text_score = ImageTextScoreFromConfig(config);
  }
  return Status::Ok();
}

Result<ModelSpec> SpecFromPath(const std::string& path, std::string_view id) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return SpecFromDirectory(path, id);
  if (!fs::is_regular_file(path, ec)) return InvalidInput("path: " + path + " does not exist");
  auto spec = ModelSpec::LoadFile(path);
  if (!spec.ok()) return spec.status();
  SHOAL_RETURN_IF_ERROR(CompleteFromFiles(&*spec));
  if (!id.empty()) {
    spec->id = std::string(id);
    SHOAL_RETURN_IF_ERROR(ValidateModelId(spec->id));
  }
  return spec;
}

}  // namespace shoal::admin
