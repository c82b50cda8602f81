// Catalog administration shared by `shoal up` and `shoal models`: connect,
// open the catalog bucket, register profiles (each with its pool's stream).
#pragma once

#include <string>
#include <vector>

#include "common/model_spec.h"
#include "queue/control_plane.h"
#include "queue/topology.h"

namespace shoal::cli {

class CatalogAdmin {
 public:
  static Result<CatalogAdmin> Connect(const std::string& nats_url);

  Status Register(const ModelSpec& spec);
  Status Remove(const std::string& id);
  Result<std::vector<ModelSpec>> List();

 private:
  CatalogAdmin() = default;
  queue::ControlPlane control_;
};

}  // namespace shoal::cli
