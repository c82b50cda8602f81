// The HTTP server against slow and numerous clients, over real sockets: a
// half-sent request holds its socket for the header timeout, not the idle
// one; an idle kept-alive connection is not cut by the header timeout; past
// max_connections a new connection is refused with a 503 it can read.
#include "http/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/event_loop.h"
#include "support/http_client.h"
#include "support/wait.h"

namespace shoal::testing {
namespace {

// A server on two loops answering every request 200 "ok".
struct OkServer {
  explicit OkServer(http::ServerOptions options) {
    for (auto& l : loops) l.Start();
    options.port = 0;
    auto s = http::Server::Start(options, {&loops[0], &loops[1]}, [](size_t, http::Request&&, http::Responder respond) {
      http::Response r;
      r.body = "ok";
      respond(std::move(r));
    });
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) server = std::move(s).value();
  }
  ~OkServer() {
    if (server) server->StopAccepting();
    for (auto& l : loops) l.Stop();
  }
  EventLoop loops[2];
  std::unique_ptr<http::Server> server;
};

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

void Send(int fd, const std::string& bytes) { ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size())); }

// What the server sent on `fd`, and whether it closed the connection
// (within `within`).
struct Received {
  std::string bytes;
  bool closed = false;
};

Received ReadUntilClosed(int fd, std::chrono::milliseconds within = std::chrono::seconds(10)) {
  Received r;
  const auto until = std::chrono::steady_clock::now() + within;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return r;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return r;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      r.closed = true;
      return r;
    }
    r.bytes.append(buf, static_cast<size_t>(n));
  }
}

// How many half-sent connections this process can hold: two descriptors
// each (ours and the server's), within the open-file limit.
size_t HalfSentConnections() {
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
  return std::min<size_t>(3000, (lim.rlim_cur - 256) / 2);
}

TEST(HttpLimits, HalfSentRequestsAreClosedAfterTheHeaderTimeoutWhileOthersAreServed) {
  http::ServerOptions o;
  o.header_timeout = std::chrono::milliseconds(500);
  OkServer s(o);
  ASSERT_TRUE(s.server);
  const size_t n = HalfSentConnections();
  ASSERT_GE(n, 1000u) << "the open-file limit is too low for this test";
  std::vector<int> fds;
  for (size_t i = 0; i < n; ++i) {
    const int fd = Connect(s.server->port());
    ASSERT_GE(fd, 0) << "connection " << i;
    Send(fd, "POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Le");  // and nothing more
    fds.push_back(fd);
  }
  // While they hang, a whole request is answered at once.
  auto ok = HttpClient(s.server->port(), 5000).Get("/anything");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);

  // Every half-sent one is closed by the server (its read ends), none
  // answered: a head that never completes gets no response.
  // One deadline for them all: a server that kept them would fail the test
  // in 30 s, not one socket after another.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  size_t closed = 0, answered = 0;
  for (int fd : fds) {
    const auto left = std::max(std::chrono::milliseconds(1), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                 until - std::chrono::steady_clock::now()));
    const Received got = ReadUntilClosed(fd, left);
    closed += got.closed;
    answered += !got.bytes.empty();
    ::close(fd);
  }
  EXPECT_EQ(closed, n);
  EXPECT_EQ(answered, 0u);
  EXPECT_TRUE(WaitFor([&] { return s.server->connections() == 0; })) << s.server->connections() << " still open";
}

TEST(HttpLimits, AnIdleKeptAliveConnectionOutlivesTheHeaderTimeout) {
  http::ServerOptions o;
  o.header_timeout = std::chrono::milliseconds(200);
  OkServer s(o);
  ASSERT_TRUE(s.server);
  HttpClient http(s.server->port(), 5000);
  ASSERT_TRUE(http.Get("/a").ok());
  // Idle, between requests, for several header timeouts: the quantity under
  // test, not a wait for an event.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  EXPECT_EQ(s.server->connections(), 1u) << "the idle connection was closed";
  auto again = http.Get("/b");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->status, 200);
}

TEST(HttpLimits, PastMaxConnectionsANewConnectionIsRefusedWithA503) {
  http::ServerOptions o;
  o.max_connections = 50;
  OkServer s(o);
  ASSERT_TRUE(s.server);
  std::vector<int> idle;
  for (int i = 0; i < 50; ++i) idle.push_back(Connect(s.server->port()));
  ASSERT_TRUE(WaitFor([&] { return s.server->connections() == 50; })) << s.server->connections();

  const int refused = Connect(s.server->port());
  ASSERT_GE(refused, 0);
  const Received got = ReadUntilClosed(refused);
  ::close(refused);
  EXPECT_TRUE(got.closed);
  const std::string& answer = got.bytes;
  EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer;
  EXPECT_NE(answer.find("\"code\":\"OVERLOADED\""), std::string::npos) << answer;
  EXPECT_NE(answer.find("too many connections: 50 are open"), std::string::npos) << answer;
  EXPECT_NE(answer.find("Retry-After: 1"), std::string::npos) << answer;
  EXPECT_EQ(s.server->connections(), 50u) << "the refused one took no place";

  // Places come back as connections close.
  for (int i = 0; i < 10; ++i) ::close(idle[i]);
  ASSERT_TRUE(WaitFor([&] { return s.server->connections() == 40; })) << s.server->connections();
  auto ok = HttpClient(s.server->port(), 5000).Get("/after");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->status, 200);
  for (size_t i = 10; i < idle.size(); ++i) ::close(idle[i]);
}

}  // namespace
}  // namespace shoal::testing
