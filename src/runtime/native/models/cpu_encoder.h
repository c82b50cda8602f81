// The CPU network for an encoder config's architecture: ModernBert for
// model_type modernbert, else Bert (BERT, RoBERTa, XLM-R and their kin).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "runtime/native/kernels/cpu/kernels.h"
#include "runtime/native/models/encoder_network.h"

namespace shoal::native {

Result<std::unique_ptr<EncoderNetwork>> LoadCpuEncoder(const std::string& dir, const EncoderConfig& config,
                                                       cpu::Precision precision,
                                                       const std::function<void(double)>& progress = {});

}  // namespace shoal::native
