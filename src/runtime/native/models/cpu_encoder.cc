#include "runtime/native/models/cpu_encoder.h"

#include "runtime/native/models/bert.h"
#include "runtime/native/models/deberta_v2.h"
#include "runtime/native/models/modernbert.h"
#include "runtime/native/models/nomic_bert.h"

namespace shoal::native {

Result<std::unique_ptr<EncoderNetwork>> LoadCpuEncoder(const std::string& dir, const EncoderConfig& config,
                                                       cpu::Precision precision,
                                                       const std::function<void(double)>& progress) {
  if (config.is_modernbert()) {
    auto network = ModernBert::Load(dir, config, precision, progress);
    if (!network.ok()) return network.status();
    return std::unique_ptr<EncoderNetwork>(std::move(network).value());
  }
  if (config.is_nomic_bert()) {
    auto network = NomicBert::Load(dir, config, precision, progress);
    if (!network.ok()) return network.status();
    return std::unique_ptr<EncoderNetwork>(std::move(network).value());
  }
  if (config.is_deberta_v2()) {
    auto network = DebertaV2::Load(dir, config, precision, progress);
    if (!network.ok()) return network.status();
    return std::unique_ptr<EncoderNetwork>(std::move(network).value());
  }
  auto network = Bert::Load(dir, config, precision, progress);
  if (!network.ok()) return network.status();
  return std::unique_ptr<EncoderNetwork>(std::move(network).value());
}

}  // namespace shoal::native
