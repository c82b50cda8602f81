// PushThroughGateway: a model directory put into the model store through a
// gateway's admin API (gateway/artifacts_api.h), for a machine that reaches
// the gateway and not NATS — what ModelStore::Push does over JetStream:
//
//   1. hash the directory (store/manifest.h); GET .../artifacts says the
//      largest body the gateway takes, which caps the pieces
//   2. for each file the store lacks (GET .../files/{sha256} is 404):
//        PUT .../files/{sha256} with its bytes, or, for a file over
//        `part_bytes`, PUT .../parts/{sha256} for each piece the store
//        lacks, then POST .../files/{sha256} {"parts": [...]} to join them
//   3. POST .../manifests with the manifest → its digest
//
// Every piece is named by its SHA-256, so a push that failed half-way sends
// only what is still missing when it is run again.
#pragma once

#include <cstdint>
#include <string>

#include "admin/gateway_client.h"
#include "common/status.h"
#include "store/model_store.h"

namespace shoal::admin {

// The largest piece sent in one body, whatever the gateway would take.
inline constexpr uint64_t kDefaultPartBytes = 8 << 20;

Result<store::PushResult> PushThroughGateway(GatewayClient& gateway, const std::string& dir,
                                             const store::Progress& progress = nullptr,
                                             uint64_t part_bytes = kDefaultPartBytes);

}  // namespace shoal::admin
