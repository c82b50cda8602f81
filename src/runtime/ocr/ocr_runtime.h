// OcrRuntime: the `ocr` runtime — pipeline models that read text in images
// (ocr_model.h), whose stages run as bare graphs on an engine runtime that
// `stages` finds (the worker's ONNX Runtime sidecar). In the worker's
// process; the stages' runtime process does the heavy work.
#pragma once

#include "runtime/ocr/ocr_model.h"
#include "runtime/runtime.h"

namespace shoal::ocr {

class OcrRuntime final : public Runtime {
 public:
  explicit OcrRuntime(StageRuntimes stages) : stages_(std::move(stages)) {}

  std::string_view name() const override { return "ocr"; }
  int api_version() const override { return 17; }
  std::vector<Task> tasks() const override { return {Task::kExtract}; }
  Result<std::unique_ptr<Model>> Load(const ModelConfig& config, const LoadContext& ctx) override {
    return OcrModel::Load(config, ctx, stages_);
  }

 private:
  const StageRuntimes stages_;
};

}  // namespace shoal::ocr
