#include "cli/catalog_admin.h"

#include "queue/catalog.h"
#include "runtime/runtime.h"
#include "wire/subjects.h"

namespace shoal::cli {

Result<CatalogAdmin> CatalogAdmin::Connect(const std::string& nats_url) {
  CatalogAdmin a;
  auto control = queue::ControlPlane::Connect(nats_url, "shoal-admin");
  if (!control.ok()) return control.status();
  a.control_ = std::move(control).value();
  return a;
}

Status CatalogAdmin::Register(const ModelSpec& spec) {
  // A model no worker binary can load is rejected here, not at first request.
  Runtime* runtime = FindRuntime(spec.runtime);
  if (!runtime) return InvalidInput("runtime '" + spec.runtime + "' is not known to this build");
  if (auto m = runtime->Load(spec, LoadContext{}); !m.ok()) return m.status();
  SHOAL_RETURN_IF_ERROR(queue::EnsureWorkStream(control_.js.get(), spec.pool, {}));
  return queue::PutModel(control_.models.get(), spec);
}

Status CatalogAdmin::Remove(const std::string& id) {
  kvEntry* e = nullptr;
  if (kvStore_Get(&e, control_.models.get(), id.c_str()) != NATS_OK) {
    return Status(Code::kModelNotFound, "model '" + id + "' is not in the catalog");
  }
  kvEntry_Destroy(e);
  return queue::DeleteModel(control_.models.get(), id);
}

Result<std::vector<ModelSpec>> CatalogAdmin::List() {
  kvKeysList keys;
  std::vector<ModelSpec> out;
  natsStatus s = kvStore_Keys(&keys, control_.models.get(), nullptr);
  if (s == NATS_NOT_FOUND) return out;  // an empty bucket
  if (s != NATS_OK) return queue::FromNats(s, "catalog keys");
  for (int i = 0; i < keys.Count; ++i) {
    kvEntry* e = nullptr;
    if (kvStore_Get(&e, control_.models.get(), keys.Keys[i]) != NATS_OK) continue;
    auto spec = ModelSpec::Parse(std::string_view(kvEntry_ValueString(e), kvEntry_ValueLen(e)));
    kvEntry_Destroy(e);
    if (spec.ok()) out.push_back(std::move(spec).value());
  }
  kvKeysList_Destroy(&keys);
  return out;
}

}  // namespace shoal::cli
