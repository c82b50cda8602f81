#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include "http/server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <optional>
#include <vector>

#include "common/gate.h"
#include "common/log.h"
#include "http/errors.h"

namespace shoal::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
namespace ssl = asio::ssl;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using asio::awaitable;
using asio::use_awaitable;

constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
// How long a refusal (too many connections) may take to write.
constexpr auto kRefusalTimeout = std::chrono::seconds(1);

// Sessions are written once for both transports; these reach the TCP layer
// (timeouts, the socket) of either.
beast::tcp_stream& Tcp(beast::tcp_stream& s) { return s; }
beast::tcp_stream& Tcp(TlsStream& s) { return beast::get_lowest_layer(s); }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The path of a request target, percent-decoded, without the query.
std::string DecodePath(std::string_view target) {
  target = target.substr(0, target.find('?'));
  std::string out;
  out.reserve(target.size());
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == '%' && i + 2 < target.size()) {
      const int hi = HexDigit(target[i + 1]), lo = HexDigit(target[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(target[i]);
  }
  return out;
}

// Where a connection waits for its response: the Responder posts the
// response (or, streaming, each part) here and cancels the timer the
// coroutine is waiting on. Used on the connection's loop only.
struct ResponseSlot {
  explicit ResponseSlot(asio::any_io_executor ex) : timer(ex), recheck(ex) {
    timer.expires_at(asio::steady_timer::time_point::max());
  }
  asio::steady_timer timer;
  asio::steady_timer recheck;  // TLS hang-up watch (WatchForHangup)
  std::deque<Response> queue;  // posted, not yet written
  bool ended = false;              // the last one (more == false) was posted
};

// The status line and headers of a response. Written by hand rather than
// through Beast's serializer: that was a tenth of a gateway's CPU. A
// streamed response has no length: HTTP/1.1 chunks it, HTTP/1.0 closes.
std::string ResponseHead(const Response& r, unsigned version, bool keep_alive,
                         bool streamed = false) {
  const auto reason = bhttp::obsolete_reason(static_cast<bhttp::status>(r.status));
  std::string head;
  head.reserve(256);
  head += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  head += std::to_string(r.status);
  head += ' ';
  head.append(reason.data(), reason.size());
  head += "\r\nServer: shoal\r\nContent-Type: ";
  head += r.content_type;
  if (!streamed) {
    head += "\r\nContent-Length: ";
    head += std::to_string(r.body.size());
  } else if (version != 10) {
    head += "\r\nTransfer-Encoding: chunked";
  }
  for (const auto& [k, v] : r.headers) {
    head += "\r\n";
    head += k;
    head += ": ";
    head += v;
  }
  // HTTP/1.1 keeps alive by default, HTTP/1.0 closes by default.
  if (!keep_alive && version != 10) head += "\r\nConnection: close";
  if (keep_alive && version == 10) head += "\r\nConnection: keep-alive";
  head += "\r\n\r\n";
  return head;
}

template <class Stream>
awaitable<boost::system::error_code> WriteResponse(Stream& stream, const Response& r,
                                                   unsigned version, bool keep_alive) {
  const std::string head = ResponseHead(r, version, keep_alive);
  const std::array<asio::const_buffer, 2> buffers = {asio::buffer(head), asio::buffer(r.body)};
  boost::system::error_code ec;
  co_await asio::async_write(stream, buffers, asio::redirect_error(use_awaitable, ec));
  co_return ec;
}

// What connections need, shared with them: a connection can outlive the
// server object (it lives on its loop until the loop stops).
struct SessionContext {
  ServerOptions options;
  Server::Handler handler;
  std::unique_ptr<ssl::context> tls;  // HTTPS; null: plain HTTP
  mutable std::atomic<size_t> open{0};  // connections, over every loop
  // Requests taken and not yet answered on the wire: what a drain waits on.
  mutable Gate requests;
};

// A connection's place under max_connections, given back when its session
// ends however it ends.
class ConnectionSlot {
 public:
  explicit ConnectionSlot(std::shared_ptr<const SessionContext> ctx) : ctx_(std::move(ctx)) {}
  ConnectionSlot(ConnectionSlot&& o) noexcept : ctx_(std::move(o.ctx_)) {}
  ConnectionSlot(const ConnectionSlot&) = delete;
  ConnectionSlot& operator=(const ConnectionSlot&) = delete;
  ~ConnectionSlot() {
    if (ctx_) ctx_->open.fetch_sub(1, std::memory_order_relaxed);
  }

  // A slot, or nothing when max_connections are open already.
  static std::optional<ConnectionSlot> TryTake(const std::shared_ptr<const SessionContext>& ctx) {
    const size_t cap = ctx->options.max_connections;
    size_t n = ctx->open.load(std::memory_order_relaxed);
    do {
      if (cap != 0 && n >= cap) return std::nullopt;
    } while (!ctx->open.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
    return ConnectionSlot(ctx);
  }

 private:
  std::shared_ptr<const SessionContext> ctx_;
};

template <class Stream>
awaitable<void> WriteError(Stream& stream, const Status& status) {
  co_await WriteResponse(stream, ErrorResponse(status, ""), 11, false);
}

void RunHangup(const std::shared_ptr<std::function<void()>>& on_hangup) {
  if (!*on_hangup) return;
  auto hangup = std::move(*on_hangup);
  *on_hangup = nullptr;
  hangup();
}

// While a request waits for its response (or streams it), watches its
// connection: readable with nothing to read means the client hung up, and
// `on_hangup` lets the handler stop the work (a pipelined next request also
// makes it readable; then the watch just ends). Session cancels the watch
// before it writes a plain response, and after the last part of a streamed
// one: reading and writing a socket at once is fine.
//
// Over TLS a closing client usually sends a close_notify record before its
// FIN, so "readable" comes with bytes that cannot be told from a pipelined
// request without decrypting them. The socket is asked instead whether the
// peer has shut down its side (POLLRDHUP), data queued or not; the FIN may
// be a moment behind the close_notify, so it is asked again every 20 ms
// while the response is pending (a pipelined request over TLS, rare, costs
// that polling).
bool PeerShutDown(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

void RecheckForHangup(int fd, const std::shared_ptr<ResponseSlot>& slot,
                      const std::shared_ptr<std::function<void()>>& on_hangup) {
  slot->recheck.expires_after(std::chrono::milliseconds(20));
  slot->recheck.async_wait([fd, slot, on_hangup](boost::system::error_code ec) {
    if (ec || slot->ended || !*on_hangup) return;
    if (PeerShutDown(fd)) {
      RunHangup(on_hangup);
    } else {
      RecheckForHangup(fd, slot, on_hangup);
    }
  });
}

void WatchForHangup(tcp::socket& socket, bool tls, const std::shared_ptr<ResponseSlot>& slot,
                    const std::shared_ptr<std::function<void()>>& on_hangup) {
  const int fd = socket.native_handle();
  socket.async_wait(tcp::socket::wait_read, [fd, tls, slot, on_hangup](boost::system::error_code ec) {
    if (ec || slot->ended || !*on_hangup) return;
    char c;
    const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    const bool gone = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
    if (gone || (tls && PeerShutDown(fd))) {
      RunHangup(on_hangup);
    } else if (tls && n > 0) {
      RecheckForHangup(fd, slot, on_hangup);
    }
  });
}

// A part of a streamed body, framed: a chunk (HTTP/1.1) or as is (1.0).
void AppendPart(std::string_view part, bool chunked, std::string* out) {
  if (part.empty()) return;  // an empty chunk would end the body
  if (!chunked) {
    out->append(part);
    return;
  }
  char size[20];
  const int n = std::snprintf(size, sizeof(size), "%zx\r\n", part.size());
  out->append(size, static_cast<size_t>(n));
  out->append(part);
  out->append("\r\n");
}

// Writes a streamed response: the head, then the parts as they are posted,
// several at once when they came while a write was in flight, until the last.
// Returns whether the connection can carry another request. A failed write
// means the client is gone: its hang-up handler runs.
template <class Stream>
awaitable<bool> StreamResponse(Stream& stream, ResponseSlot& slot,
                               const Response& head, unsigned version, bool keep_alive,
                               const std::shared_ptr<std::function<void()>>& on_hangup,
                               std::chrono::milliseconds write_timeout) {
  const bool chunked = version != 10;
  keep_alive = keep_alive && chunked;  // HTTP/1.0: the close ends the body
  std::string out = ResponseHead(head, version, keep_alive, /*streamed=*/true);
  AppendPart(head.body, chunked, &out);
  bool last = false;
  boost::system::error_code ec;
  for (;;) {
    while (!slot.queue.empty() && !last) {
      const Response& part = slot.queue.front();
      AppendPart(part.body, chunked, &out);
      last = !part.more;
      slot.queue.pop_front();
    }
    if (last && chunked) out += "0\r\n\r\n";
    if (!out.empty()) {
      Tcp(stream).expires_after(write_timeout);
      co_await asio::async_write(stream, asio::buffer(out), asio::redirect_error(use_awaitable, ec));
      Tcp(stream).expires_never();
      out.clear();
      if (ec) {
        RunHangup(on_hangup);
        co_return false;
      }
    }
    if (last) co_return keep_alive;
    // Parts posted while the write was in flight are queued already (their
    // cancel found no wait to wake).
    if (slot.queue.empty()) co_await slot.timer.async_wait(asio::redirect_error(use_awaitable, ec));
    if (slot.queue.empty()) co_return false;  // shutting down
  }
}

bool IsLoopback(const tcp::socket& socket) {
  boost::system::error_code ec;
  asio::ip::address a = socket.remote_endpoint(ec).address();
  if (ec) return false;
  if (a.is_v6() && a.to_v6().is_v4_mapped()) a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  return a.is_loopback();
}

// A connection's requests, one after another, until it closes or fails.
template <class Stream>
awaitable<void> Serve(Stream& stream, size_t lane, const SessionContext& context) {
  const SessionContext* ctx = &context;
  constexpr bool kTls = std::is_same_v<Stream, TlsStream>;
  const ServerOptions& options = ctx->options;
  beast::flat_buffer buffer;
  boost::system::error_code ec;
  for (;;) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.body_limit(options.max_body_bytes);
    // Idle until the next request's first byte (unless it is buffered
    // already, pipelined); then its head within header_timeout; then the
    // body within the idle timeout again.
    if (buffer.size() == 0) {
      Tcp(stream).expires_after(options.idle_timeout);
      const size_t n =
          co_await stream.async_read_some(buffer.prepare(4096), asio::redirect_error(use_awaitable, ec));
      buffer.commit(n);
    }
    if (!ec) {
      Tcp(stream).expires_after(options.header_timeout);
      co_await bhttp::async_read_header(stream, buffer, parser, asio::redirect_error(use_awaitable, ec));
      if (ec == beast::error::timeout) {
        spdlog::debug("http: a request's head took over {} ms; closed", options.header_timeout.count());
      }
    }
    if (!ec && !parser.is_done()) {
      Tcp(stream).expires_after(options.idle_timeout);
      co_await bhttp::async_read(stream, buffer, parser, asio::redirect_error(use_awaitable, ec));
    }
    if (ec == bhttp::error::body_limit) {
      co_await WriteError(stream, Status(Code::kPayloadTooLarge,
                                         "body over the limit of " + std::to_string(options.max_body_bytes) +
                                             " bytes"));
      break;
    }
    if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
        ec == ssl::error::stream_truncated) {
      break;
    }
    if (ec) {
      co_await WriteError(stream, InvalidInput("malformed HTTP request: " + ec.message()));
      break;
    }
    Tcp(stream).expires_never();  // the request's own deadline bounds the wait
    // Held until the response is written (or the connection fails).
    std::optional<Gate::Holder> taken = ctx->requests.TryEnter();
    if (!taken) {  // draining: no new work on kept-alive connections
      co_await WriteError(stream, Status(Code::kNoCapacity, "the server is shutting down; try another"));
      break;
    }

    auto& req = parser.get();
    const bool keep_alive = req.keep_alive();
    const unsigned version = req.version();
    Request r;
    r.method = std::string(req.method_string());
    const std::string_view target(req.target().data(), req.target().size());
    r.path = DecodePath(target);
    if (const size_t q = target.find('?'); q != std::string_view::npos) r.query = std::string(target.substr(q + 1));
    r.content_type = std::string(req[bhttp::field::content_type]);
    r.accept = std::string(req[bhttp::field::accept]);
    r.timeout_ms = std::string(req["X-Shoal-Timeout-Ms"]);
    r.priority = std::string(req["X-Shoal-Priority"]);
    r.traceparent = std::string(req["traceparent"]);
    r.authorization = std::string(req[bhttp::field::authorization]);
    r.from_loopback = IsLoopback(Tcp(stream).socket());
    r.body = std::move(req.body());

    auto slot = std::make_shared<ResponseSlot>(stream.get_executor());
    auto on_hangup = std::make_shared<std::function<void()>>();
    r.on_hangup = on_hangup;
    ctx->handler(lane, std::move(r), [slot](Response response) {
      asio::post(slot->timer.get_executor(), [slot, response = std::move(response)]() mutable {
        if (slot->ended) return;
        slot->ended = !response.more;
        slot->queue.push_back(std::move(response));
        slot->timer.cancel();
      });
    });
    WatchForHangup(Tcp(stream).socket(), kTls, slot, on_hangup);
    if (slot->queue.empty()) {
      co_await slot->timer.async_wait(asio::redirect_error(use_awaitable, ec));
    }
    if (slot->queue.empty()) {  // shutting down
      slot->recheck.cancel();
      break;
    }
    const Response first = std::move(slot->queue.front());
    slot->queue.pop_front();

    bool again = false;
    if (first.more) {
      again = co_await StreamResponse(stream, *slot, first, version, keep_alive, on_hangup, options.idle_timeout);
      Tcp(stream).socket().cancel(ec);  // the watch, if it is still on
      slot->recheck.cancel();
    } else {
      Tcp(stream).socket().cancel(ec);  // the watch, if it is still on
      slot->recheck.cancel();
      Tcp(stream).expires_after(options.idle_timeout);
      ec = co_await WriteResponse(stream, first, version, keep_alive);
      again = !ec && keep_alive;
    }
    if (!again) break;
  }
}

awaitable<void> PlainSession(tcp::socket socket, size_t lane, std::shared_ptr<const SessionContext> ctx,
                             ConnectionSlot) {
  beast::tcp_stream stream(std::move(socket));
  co_await Serve(stream, lane, *ctx);
  boost::system::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

// The handshake, the same request loop, then close_notify. A client that
// does not speak TLS (plain HTTP to this port) fails the handshake and is
// dropped without an answer: it cannot read one.
awaitable<void> TlsSession(tcp::socket socket, size_t lane, std::shared_ptr<const SessionContext> ctx,
                           ConnectionSlot) {
  TlsStream stream(std::move(socket), *ctx->tls);
  boost::system::error_code ec;
  Tcp(stream).expires_after(kHandshakeTimeout);
  co_await stream.async_handshake(ssl::stream_base::server, asio::redirect_error(use_awaitable, ec));
  if (!ec) {
    co_await Serve(stream, lane, *ctx);
    // Bounded: a client that never answers the close_notify must not hold
    // the connection.
    Tcp(stream).expires_after(std::chrono::seconds(2));
    co_await stream.async_shutdown(asio::redirect_error(use_awaitable, ec));
  }
  Tcp(stream).socket().shutdown(tcp::socket::shutdown_both, ec);
}

// TLS 1.2 or later, with the certificate chain and key of `options`; each
// failure names the file it came from.
Result<std::unique_ptr<ssl::context>> TlsContext(const ServerOptions& options) {
  if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
    return InvalidInput("HTTPS needs both a certificate (--tls-cert) and a key (--tls-key)");
  }
  for (const std::string& file : {options.tls_cert_file, options.tls_key_file}) {
    std::error_code fec;
    if (!std::filesystem::is_regular_file(file, fec)) return InvalidInput("TLS file not found: " + file);
  }
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(options.tls_cert_file, ec);
  if (ec) return InvalidInput("cannot load TLS certificate " + options.tls_cert_file + ": " + ec.message());
  ctx->use_private_key_file(options.tls_key_file, ssl::context::pem, ec);
  if (ec) return InvalidInput("cannot load TLS key " + options.tls_key_file + ": " + ec.message());
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return InvalidInput("TLS key " + options.tls_key_file + " does not match certificate " +
                        options.tls_cert_file);
  }
  return ctx;
}

// A connection past max_connections: a 503 it can read (in plain HTTP; a
// TLS client sees the connection close), then the close.
awaitable<void> Refuse(tcp::socket socket, std::shared_ptr<const SessionContext> ctx) {
  beast::tcp_stream stream(std::move(socket));
  if (!ctx->tls) {
    const Response r = ErrorResponse(Status(Code::kOverloaded, "too many connections: " +
                                                                 std::to_string(ctx->options.max_connections) +
                                                                 " are open; try again"),
                                   "");
    stream.expires_after(kRefusalTimeout);
    co_await WriteResponse(stream, r, 11, false);
  }
  boost::system::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
}

// Shares ownership of the acceptor: it may resume after the server is gone.
awaitable<void> Accept(std::shared_ptr<tcp::acceptor> acceptor, size_t lane,
                       std::shared_ptr<const SessionContext> ctx) {
  asio::steady_timer backoff(acceptor->get_executor());
  for (;;) {
    boost::system::error_code ec;
    tcp::socket socket = co_await acceptor->async_accept(asio::redirect_error(use_awaitable, ec));
    if (!acceptor->is_open()) co_return;
    if (ec) {
      // Out of file descriptors (EMFILE, ENFILE) or memory: the connection
      // stays in the backlog and accepting again at once would spin.
      spdlog::warn("http: accept failed: {}; retrying in 50 ms", ec.message());
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(asio::redirect_error(use_awaitable, ec));
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    std::optional<ConnectionSlot> slot = ConnectionSlot::TryTake(ctx);
    if (!slot) {
      asio::co_spawn(acceptor->get_executor(), Refuse(std::move(socket), ctx), asio::detached);
    } else if (ctx->tls) {
      asio::co_spawn(acceptor->get_executor(), TlsSession(std::move(socket), lane, ctx, std::move(*slot)),
                     asio::detached);
    } else {
      asio::co_spawn(acceptor->get_executor(), PlainSession(std::move(socket), lane, ctx, std::move(*slot)),
                     asio::detached);
    }
  }
}

// Raises the soft limit on open files to the hard one: the default soft
// limit (often 1024) would bind long before max_connections.
void RaiseOpenFileLimit(size_t want) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == lim.rlim_max) return;
  lim.rlim_cur = lim.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  if (want > 0 && lim.rlim_max < want + 256) {
    spdlog::warn("http: the open-file limit ({}) is below max_connections ({}) and what else the process opens",
                 lim.rlim_max, want);
  }
}

std::shared_ptr<const SessionContext> MakeContext(const ServerOptions& options, Server::Handler handler,
                                                  std::unique_ptr<ssl::context> tls) {
  auto ctx = std::make_shared<SessionContext>();
  ctx->options = options;
  ctx->handler = std::move(handler);
  ctx->tls = std::move(tls);
  return ctx;
}

class BeastServer final : public Server {
 public:
  BeastServer(const ServerOptions& options, std::vector<EventLoop*> loops, Handler handler,
              std::unique_ptr<ssl::context> tls)
      : options_(options),
        loops_(std::move(loops)),
        context_(MakeContext(options, std::move(handler), std::move(tls))) {}

  ~BeastServer() override { StopAccepting(); }

  Status Listen() {
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(options_.host, ec);
    if (ec) return InvalidInput("bad listen address '" + options_.host + "'");
    int port = options_.port;
    for (EventLoop* loop : loops_) {
      auto acceptor = std::make_shared<tcp::acceptor>(loop->context());
      tcp::endpoint ep(address, static_cast<unsigned short>(port));
      acceptor->open(ep.protocol(), ec);
      if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
      if (!ec) {
        int one = 1;
        ::setsockopt(acceptor->native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
        acceptor->bind(ep, ec);
      }
      if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
      if (ec) {
        return Status(Code::kInternal, "cannot listen on " + options_.host + ":" +
                                           std::to_string(port) + ": " + ec.message());
      }
      port = acceptor->local_endpoint().port();  // port 0 resolved once, shared by all
      acceptors_.push_back(std::move(acceptor));
    }
    port_ = port;
    for (size_t i = 0; i < loops_.size(); ++i) {
      asio::co_spawn(loops_[i]->context(), Accept(acceptors_[i], i, context_), asio::detached);
    }
    return Status::Ok();
  }

  int port() const override { return port_; }
  size_t connections() const override { return context_->open.load(std::memory_order_relaxed); }

  bool Drain(SteadyClock::time_point deadline) override {
    context_->requests.Close();
    return context_->requests.WaitEmpty(deadline);
  }

  void StopAccepting() override {
    for (size_t i = 0; i < acceptors_.size(); ++i) {
      loops_[i]->RunAndWait([a = acceptors_[i].get()] {
        boost::system::error_code ec;
        a->close(ec);
      });
    }
    acceptors_.clear();
  }

 private:
  ServerOptions options_;
  std::vector<EventLoop*> loops_;
  std::shared_ptr<const SessionContext> context_;
  int port_ = 0;
  std::vector<std::shared_ptr<tcp::acceptor>> acceptors_;  // one per loop
};

}  // namespace

Result<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                                      std::vector<EventLoop*> loops,
                                                      Handler handler) {
  std::unique_ptr<ssl::context> tls;
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    SHOAL_ASSIGN_OR_RETURN(tls, TlsContext(options));
  }
  RaiseOpenFileLimit(options.max_connections);
  auto server = std::make_unique<BeastServer>(options, std::move(loops), std::move(handler), std::move(tls));
  SHOAL_RETURN_IF_ERROR(server->Listen());
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace shoal::http
