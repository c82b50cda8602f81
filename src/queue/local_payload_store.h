// LocalPayloadStore: payloads as files of one directory (payload_store.h).
#pragma once

#include "queue/payload_store.h"

namespace shoal::queue {

class LocalPayloadStore final : public PayloadStore {
 public:
  // Creates `dir` if missing.
  static Result<std::unique_ptr<PayloadStore>> Open(const std::string& dir);

  Status Put(const std::string& key, std::string_view bytes) override;
  Status Get(const std::string& key, std::string* bytes) override;
  Status Delete(const std::string& key) override;
  Status DeleteOlderThan(std::chrono::seconds age, size_t* deleted) override;
  std::string Describe() const override { return "directory " + dir_; }

 private:
  explicit LocalPayloadStore(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

}  // namespace shoal::queue
