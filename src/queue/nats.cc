#include "queue/nats.h"

#include <cstdio>

#include "common/log.h"

namespace shoal::queue {

namespace {

constexpr int64_t kPingIntervalMs = 2000;
constexpr int kMaxPingsOut = 2;
constexpr int64_t kLockSpinCount = 0;

void OnDisconnected(natsConnection* nc, void* closure) {
  if (natsConnection_IsClosed(nc)) return;  // our own Close, not a failure
  spdlog::warn("nats: disconnected ({})", static_cast<const char*>(closure));
}
void OnReconnected(natsConnection*, void* closure) {
  spdlog::info("nats: reconnected ({})", static_cast<const char*>(closure));
}
void OnError(natsConnection*, natsSubscription*, natsStatus err, void* closure) {
  spdlog::warn("nats: async error ({}): {}", static_cast<const char*>(closure),
               natsStatus_GetText(err));
}

// "nats://a:4222, nats://b:4222" -> its URLs, trimmed, empty ones dropped.
std::vector<std::string> SplitServerList(const std::string& list) {
  std::vector<std::string> urls;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const size_t b = list.find_first_not_of(" \t", start);
    if (b != std::string::npos && b < end) {
      const size_t e = list.find_last_not_of(" \t", end - 1);
      urls.push_back(list.substr(b, e - b + 1));
    }
    start = end + 1;
  }
  return urls;
}

struct OptionsDeleter {
  void operator()(natsOptions* o) const { natsOptions_Destroy(o); }
};

// TLS and credentials onto cnats options. Each failure names what failed
// (cnats' own text says why), so a bad file stops the process at start.
Status ApplySecurity(natsOptions* opts, const std::string& url, const NatsSecurity& sec) {
  const bool tls_url = url.find("tls://") != std::string::npos;
  if (sec.tls() || tls_url) {
    // Secure is required, not merely allowed: a server without TLS is an
    // error (NATS_SECURE_CONNECTION_WANTED), not a plaintext connection.
    SHOAL_RETURN_IF_ERROR(FromNats(natsOptions_SetSecure(opts, true), "NATS TLS"));
  }
  if (!sec.ca_file.empty()) {
    SHOAL_RETURN_IF_ERROR(FromNats(natsOptions_LoadCATrustedCertificates(opts, sec.ca_file.c_str()),
                                   "loading NATS CA file " + sec.ca_file));
  }
  if (sec.cert_file.empty() != sec.key_file.empty()) {
    return InvalidInput("a NATS client certificate needs both a certificate and a key file");
  }
  if (!sec.cert_file.empty()) {
    SHOAL_RETURN_IF_ERROR(FromNats(
        natsOptions_LoadCertificatesChain(opts, sec.cert_file.c_str(), sec.key_file.c_str()),
        "loading NATS client certificate " + sec.cert_file + " / key " + sec.key_file));
  }
  if (!sec.password.empty() && sec.user.empty()) return InvalidInput("a NATS password needs a user");
  if (!sec.user.empty() && !sec.creds_file.empty()) {
    return InvalidInput("NATS user/password and a .creds file are exclusive: give one");
  }
  if (!sec.user.empty()) {
    SHOAL_RETURN_IF_ERROR(FromNats(
        natsOptions_SetUserInfo(opts, sec.user.c_str(), sec.password.c_str()), "NATS user"));
  }
  if (!sec.creds_file.empty()) {
    // cnats reads the file when it connects; read it here too, so a missing
    // one is named rather than reported as a failed connection.
    if (FILE* f = std::fopen(sec.creds_file.c_str(), "r")) {
      std::fclose(f);
    } else {
      return InvalidInput("cannot read NATS credentials file " + sec.creds_file);
    }
    SHOAL_RETURN_IF_ERROR(FromNats(
        natsOptions_SetUserCredentialsFromFiles(opts, sec.creds_file.c_str(), nullptr),
        "NATS credentials file " + sec.creds_file));
  }
  return Status::Ok();
}

}  // namespace

Status FromNats(natsStatus s, std::string_view what) {
  if (s == NATS_OK) return Status::Ok();
  std::string msg(what);
  msg += ": ";
  msg += natsStatus_GetText(s);
  const char* last = nats_GetLastError(nullptr);
  if (last && *last && std::string_view(last) != natsStatus_GetText(s)) {
    msg += " (";
    msg += last;
    msg += ")";
  }
  const bool connection = s == NATS_CONNECTION_CLOSED || s == NATS_NO_SERVER ||
                          s == NATS_CONNECTION_DISCONNECTED || s == NATS_TIMEOUT ||
                          s == NATS_NO_RESPONDERS;
  return Status(connection ? Code::kNoCapacity : Code::kInternal, msg);
}

natsStatus AddStream(jsStreamInfo** si, jsCtx* js, jsStreamConfig* cfg, jsErrCode* code, int attempts) {
  natsStatus s = NATS_TIMEOUT;
  for (int i = 0; i < attempts && s == NATS_TIMEOUT; ++i) {
    *code = static_cast<jsErrCode>(0);
    s = js_AddStream(si, js, cfg, nullptr, code);
  }
  return s;
}

Status FromJetStream(natsStatus s, jsErrCode code, std::string_view what) {
  Status st = FromNats(s, what);
  if (code != 0) return Status(st.code(), st.message() + " [js " + std::to_string(code) + "]");
  return st;
}

Result<ConnectionPtr> Connect(const ConnectOptions& options) {
  // cnats spins up to 2000 times on a contended lock before sleeping; on a
  // machine with few cores that spinning competes with the very thread it
  // waits for. Opened once, before the first connection.
  static const natsStatus opened = nats_Open(kLockSpinCount);
  if (opened != NATS_OK) return FromNats(opened, "opening the NATS library");
  natsOptions* raw = nullptr;
  if (auto s = natsOptions_Create(&raw); s != NATS_OK) return FromNats(s, "nats options");
  std::unique_ptr<natsOptions, OptionsDeleter> opts(raw);
  SHOAL_RETURN_IF_ERROR(ApplySecurity(opts.get(), options.url, options.security));
  // Callbacks may run until the connection is destroyed, which its owner
  // controls; one small string per connection is kept for the process.
  auto* name = new std::string(options.name);  // leaked on purpose: referenced by callbacks
  // A JetStream cluster is given as a comma-separated list of its servers'
  // URLs: cnats then connects to any one and fails over to the others (it
  // also learns the rest of the cluster from the server it reaches).
  const std::vector<std::string> urls = SplitServerList(options.url);
  if (urls.empty()) return InvalidInput("no NATS URL given");
  std::vector<const char*> servers;
  for (const auto& u : urls) servers.push_back(u.c_str());
  SHOAL_RETURN_IF_ERROR(FromNats(natsOptions_SetServers(opts.get(), servers.data(), static_cast<int>(servers.size())),
                                 "NATS URL " + options.url));
  natsOptions_SetName(opts.get(), options.name.c_str());
  natsOptions_SetSendAsap(opts.get(), true);
  natsOptions_SetTimeout(opts.get(), options.connect_timeout_ms);
  natsOptions_SetMaxReconnect(opts.get(), -1);
  natsOptions_SetReconnectWait(opts.get(), 250);
  // A server whose machine is cut off sends no reset: the connection would
  // look alive until cnats' default pings (every 2 min) went unanswered,
  // and everything on it would wait that long (make chaos,
  // worker_partition). Pinged every 2 s, it is declared stale after two
  // unanswered pings and the client moves to another server of the cluster.
  natsOptions_SetPingInterval(opts.get(), kPingIntervalMs);
  natsOptions_SetMaxPingsOut(opts.get(), kMaxPingsOut);
  natsOptions_SetRetryOnFailedConnect(opts.get(), options.retry_initial_connect, nullptr, nullptr);
  natsOptions_SetDisconnectedCB(opts.get(), OnDisconnected, name->data());
  natsOptions_SetReconnectedCB(opts.get(), OnReconnected, name->data());
  natsOptions_SetErrorHandler(opts.get(), OnError, name->data());
  if (const auto& ev = options.event_loop; ev.loop != nullptr) {
    natsOptions_SetEventLoop(opts.get(), ev.loop, ev.attach, ev.read, ev.write, ev.detach);
  }
  natsConnection* nc = nullptr;
  if (auto s = natsConnection_Connect(&nc, opts.get()); s != NATS_OK) {
    return FromNats(s, "connecting to " + options.url);
  }
  return ConnectionPtr(nc);
}

}  // namespace shoal::queue
