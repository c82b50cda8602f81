#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include "loadtest/load_generator.h"

#include <strings.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <random>

#include "loadtest/usage.h"

namespace shoal::loadtest {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Whether `line` is the header `name` (any case); its value in `*value`.
bool IsHeader(std::string_view line, std::string_view name, std::string_view* value) {
  if (line.size() <= name.size() || line[name.size()] != ':' ||
      strncasecmp(line.data(), name.data(), name.size()) != 0) {
    return false;
  }
  *value = Trim(line.substr(name.size() + 1));
  return true;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// What ReadResponse learned of one answer.
struct Reply {
  int status = 0;           // 0: the connection broke (or what came was not HTTP)
  bool nothing = false;     // it broke before any byte of the answer
  bool cold_start = false;  // X-Shoal-Cold-Start: 1
  bool close = false;       // the server closes the connection after it
  bool matches = true;      // the body was `expect` (when one was given)
  Usage usage;
};

// What ReadResponse should look at in the body.
struct ReadWants {
  const std::string* expect = nullptr;  // compare the body with it when not empty
  bool usage = false;                   // scan a 200's body for token counts
  std::string* keep = nullptr;          // copy the body here
};

// Reads one response: sized by Content-Length, chunked, or to the end of the
// connection. `buf` keeps what was read past it (pipelining never happens
// here, but the bytes are not thrown away).
asio::awaitable<Reply> ReadResponse(tcp::socket& s, std::string& buf, ReadWants wants) {
  Reply r;
  boost::system::error_code ec;
  const bool was_empty = buf.empty();
  const size_t head = co_await asio::async_read_until(
      s, asio::dynamic_buffer(buf), "\r\n\r\n", asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    r.nothing = was_empty && buf.empty();
    co_return r;
  }
  const size_t space = buf.find(' ');
  const int status = space < head ? std::atoi(buf.c_str() + space + 1) : 0;
  if (status <= 0) co_return r;
  std::optional<size_t> length;
  bool chunked = false;
  for (size_t at = buf.find("\r\n") + 2; at < head;) {
    const size_t eol = buf.find("\r\n", at);
    if (eol == std::string::npos || eol >= head) break;
    const std::string_view line(buf.data() + at, eol - at);
    std::string_view value;
    if (IsHeader(line, "content-length", &value)) {
      length = std::strtoull(std::string(value).c_str(), nullptr, 10);
    } else if (IsHeader(line, "transfer-encoding", &value)) {
      chunked = value.find("chunked") != std::string_view::npos;
    } else if (IsHeader(line, "connection", &value)) {
      r.close = EqualsNoCase(value, "close");
    } else if (IsHeader(line, "x-shoal-cold-start", &value)) {
      r.cold_start = value == "1";
    }
    at = eol + 2;
  }
  if (status == 204 || status == 304 || status < 200) length = 0;

  std::string chunks;  // a chunked body, reassembled
  std::string_view body;
  size_t consumed = 0;
  if (chunked) {
    buf.erase(0, head);
    for (;;) {
      size_t eol = co_await asio::async_read_until(s, asio::dynamic_buffer(buf), "\r\n",
                                                   asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return Reply{};
      const size_t size = std::strtoull(buf.c_str(), nullptr, 16);
      buf.erase(0, eol);
      if (size == 0) {
        for (bool end = false; !end;) {  // trailers, up to an empty line
          eol = co_await asio::async_read_until(s, asio::dynamic_buffer(buf), "\r\n",
                                                asio::redirect_error(asio::use_awaitable, ec));
          if (ec) co_return Reply{};
          end = eol == 2;
          buf.erase(0, eol);
        }
        break;
      }
      if (buf.size() < size + 2) {
        co_await asio::async_read(s, asio::dynamic_buffer(buf),
                                  asio::transfer_exactly(size + 2 - buf.size()),
                                  asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return Reply{};
      }
      chunks.append(buf, 0, size);
      buf.erase(0, size + 2);
    }
    body = chunks;
  } else if (length) {
    if (buf.size() < head + *length) {
      co_await asio::async_read(s, asio::dynamic_buffer(buf),
                                asio::transfer_exactly(head + *length - buf.size()),
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return Reply{};
    }
    body = std::string_view(buf).substr(head, *length);
    consumed = head + *length;
  } else {
    // No length: the body runs to the end of the connection (HTTP/1.0 style).
    co_await asio::async_read(s, asio::dynamic_buffer(buf), asio::transfer_all(),
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec && ec != asio::error::eof) co_return Reply{};
    body = std::string_view(buf).substr(head);
    consumed = buf.size();
    r.close = true;
  }
  if (wants.expect && !wants.expect->empty()) r.matches = body == *wants.expect;
  if (wants.usage && status == 200) r.usage = ParseUsage(body);
  if (wants.keep) wants.keep->assign(body);
  buf.erase(0, consumed);
  r.status = status;
  co_return r;
}

std::string HostHeader(const std::string& host, int port) {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

std::string Render(const std::string& host_header, const std::string& path, const std::string& type,
                   const std::string& body,
                   const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string r =
      "POST " + path + " HTTP/1.1\r\nHost: " + host_header + "\r\nContent-Type: " + type + "\r\n";
  for (const auto& [name, value] : headers) r += name + ": " + value + "\r\n";
  return r + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

struct Shared {
  const LoadSpec* spec;
  asio::io_context* ctx;
  std::vector<tcp::endpoint> endpoints;
  std::vector<std::string> requests;  // rendered HTTP requests
  std::vector<double> cumulative;     // their cumulative weights
  std::vector<uint64_t> estimates;    // their estimated input tokens
  Clock::time_point start, measure_from, stop;
  uint64_t ok = 0, errors = 0, wrong = 0, ok_in_window = 0;
  uint64_t input_tokens = 0, output_tokens = 0, tokens_estimated = 0, unanswered = 0;
  std::vector<double> latencies;
  std::vector<uint32_t> entries;
  std::vector<uint8_t> cold_starts;
  std::map<int, uint64_t> status_counts;
  std::vector<double> error_latencies;
  std::vector<int> error_statuses;
  // Measured requests reached (due, or sent in a closed loop) and those
  // concluded (ok or error): the difference is in flight.
  uint64_t measured_due = 0, concluded = 0;
  int live = 0;  // connection coroutines still running
  // Poisson arrivals: the next unclaimed one, the gap generator, the pool.
  Clock::time_point next_arrival;
  std::mt19937_64 arrival_rng;
  int pool = 0;  // connections started
  int idle = 0;  // of those, not waiting for an answer

  Clock::time_point Claim() {
    const Clock::time_point due = next_arrival;
    next_arrival += Seconds(std::exponential_distribution<double>(spec->rate)(arrival_rng));
    return due;
  }

  // A measured request's end: ok, or an error with `status` (0: no answer).
  void Conclude(int status, bool good, double ms, uint32_t pick, bool cold_start) {
    ++concluded;
    ++status_counts[status];
    if (good) {
      ++ok;
      latencies.push_back(ms);
      entries.push_back(pick);
      cold_starts.push_back(cold_start ? 1 : 0);
      return;
    }
    ++errors;
    if (status == 200) ++wrong;
    if (status != 200 && status != 0) {
      error_latencies.push_back(ms);
      error_statuses.push_back(status);
    }
  }
};

asio::awaitable<void> Connection(Shared& sh, int index);

void StartConnection(Shared& sh) {
  ++sh.live;
  ++sh.idle;
  asio::co_spawn(*sh.ctx, Connection(sh, sh.pool++), asio::detached);
}

asio::awaitable<bool> Connect(Shared& sh, tcp::socket& s) {
  boost::system::error_code ec;
  co_await asio::async_connect(s, sh.endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return false;
  s.set_option(tcp::no_delay(true), ec);
  co_return true;
}

asio::awaitable<void> ConnectionLoop(Shared& sh, int index) {
  auto ex = co_await asio::this_coro::executor;
  const LoadSpec& spec = *sh.spec;
  tcp::socket s(ex);
  asio::steady_timer timer(ex);
  boost::system::error_code ec;
  std::string buf;
  std::mt19937_64 rng(spec.seed * 7919 + static_cast<uint64_t>(index));
  std::uniform_real_distribution<double> draw(0, sh.cumulative.back());
  const bool poisson = spec.rate > 0 && spec.arrivals == Arrivals::kPoisson;
  const bool fixed = spec.rate > 0 && !poisson;
  const int conns = spec.connections;
  bool open = false;
  uint64_t served = 0;  // answers on the current connection

  if (!spec.reconnect) {
    // One connection for the whole run: when it cannot be made (or breaks),
    // this share of the load ends.
    if (!co_await Connect(sh, s)) {
      ++sh.errors;
      ++sh.status_counts[0];
      co_return;
    }
    open = true;
  }
  for (uint64_t k = 0;; ++k) {
    // Ready before the next arrival is claimed, so its latency does not
    // include the connection's set-up (a failure is retried below).
    if (poisson && !open) open = co_await Connect(sh, s);
    Clock::time_point due = Clock::now();
    if (fixed) {
      // Request k of this connection is due at (k*conns + index) / rate.
      due = sh.start + Seconds((static_cast<double>(k) * conns + index) / spec.rate);
    } else if (poisson) {
      due = sh.Claim();
    }
    if (due >= sh.stop) break;
    const bool measured = due >= sh.measure_from;
    if (measured) ++sh.measured_due;
    if (due > Clock::now()) {
      timer.expires_at(due);
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (!open) {
      open = co_await Connect(sh, s);
      if (!open) {
        if (measured) sh.Conclude(0, false, 0, 0, false);
        if (!fixed && !poisson) {  // a closed loop would hammer a refused port
          timer.expires_after(std::chrono::milliseconds(100));
          co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        continue;
      }
      served = 0;
    }
    if (poisson && --sh.idle == 0 && sh.pool < conns) StartConnection(sh);
    const size_t pick =
        std::min(static_cast<size_t>(
                     std::upper_bound(sh.cumulative.begin(), sh.cumulative.end(), draw(rng)) -
                     sh.cumulative.begin()),
                 sh.requests.size() - 1);
    const std::string& request = sh.requests[pick];
    Reply reply;
    for (int attempt = 0;; ++attempt) {
      co_await asio::async_write(s, asio::buffer(request),
                                 asio::redirect_error(asio::use_awaitable, ec));
      if (ec) {
        reply = Reply{};
        reply.nothing = true;
      } else {
        reply = co_await ReadResponse(s, buf, {&spec.expect_body, spec.count_tokens, nullptr});
      }
      // A kept-alive connection the server closed before this request came:
      // once more on a new one, as any HTTP client does.
      if (reply.status == 0 && reply.nothing && spec.reconnect && attempt == 0 && served > 0) {
        s.close(ec);
        buf.clear();
        served = 0;
        if (co_await Connect(sh, s)) continue;
      }
      break;
    }
    if (poisson) ++sh.idle;
    const auto done = Clock::now();
    ++served;
    if (reply.status == 0 || reply.close) {
      s.close(ec);
      buf.clear();
      open = false;
    }
    const bool good = reply.status == 200 && reply.matches;
    if (good && done >= sh.measure_from && done <= sh.stop) {
      ++sh.ok_in_window;
      if (spec.count_tokens) {
        if (reply.usage.found) {
          sh.input_tokens += reply.usage.input;
          sh.output_tokens += reply.usage.output;
        } else {
          sh.input_tokens += sh.estimates[pick];
          ++sh.tokens_estimated;
        }
      }
    }
    if (measured) {
      const double ms = std::chrono::duration<double, std::milli>(done - due).count();
      sh.Conclude(reply.status, good, ms, static_cast<uint32_t>(pick), reply.cold_start);
    }
    if (reply.status == 0 && !spec.reconnect) break;
  }
}

asio::awaitable<void> Connection(Shared& sh, int index) {
  co_await ConnectionLoop(sh, index);
  --sh.idle;
  --sh.live;
}

// Calls spec.progress every second until the run's last request is due.
asio::awaitable<void> Ticker(Shared& sh) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  boost::system::error_code ec;
  for (auto at = sh.start + std::chrono::seconds(1); at <= sh.stop; at += std::chrono::seconds(1)) {
    timer.expires_at(at);
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    LoadProgress p;
    p.elapsed_s = std::chrono::duration<double>(Clock::now() - sh.start).count();
    p.measuring = Clock::now() >= sh.measure_from;
    p.ok = sh.ok;
    p.errors = sh.errors;
    p.status_counts = &sh.status_counts;
    sh.spec->progress(p);
  }
}

// Measured requests due in the window that no connection has reached yet.
uint64_t NotReached(Shared& sh) {
  const LoadSpec& spec = *sh.spec;
  if (spec.rate <= 0) return 0;
  if (spec.arrivals == Arrivals::kPoisson) {
    uint64_t n = 0;
    for (auto due = sh.Claim(); due < sh.stop; due = sh.Claim())
      n += due >= sh.measure_from ? 1 : 0;
    return n;
  }
  // Fixed spacing: arrival i is due at i / rate.
  const double from = std::chrono::duration<double>(sh.measure_from - sh.start).count() * spec.rate;
  const double to = std::chrono::duration<double>(sh.stop - sh.start).count() * spec.rate;
  const auto total = static_cast<uint64_t>(std::max(0.0, std::ceil(to) - std::ceil(from)));
  return total > sh.measured_due ? total - sh.measured_due : 0;
}

// Ends the run `drain` after the window: what is still unanswered then
// counts as errors without an answer.
asio::awaitable<void> Drainer(Shared& sh) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  boost::system::error_code ec;
  const auto deadline = sh.stop + sh.spec->drain;
  while (sh.live > 0) {
    const auto now = Clock::now();
    if (now >= deadline) {
      const uint64_t missing = sh.measured_due - sh.concluded + NotReached(sh);
      sh.unanswered = missing;
      sh.errors += missing;
      if (missing) sh.status_counts[0] += missing;
      sh.ctx->stop();
      co_return;
    }
    timer.expires_after(std::min<Clock::duration>(std::chrono::milliseconds(50), deadline - now));
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

std::vector<tcp::endpoint> Resolve(asio::io_context& ctx, const std::string& host, int port,
                                   boost::system::error_code* ec) {
  tcp::resolver resolver(ctx);
  std::vector<tcp::endpoint> out;
  for (const auto& e : resolver.resolve(host, std::to_string(port), *ec))
    out.push_back(e.endpoint());
  return out;
}

asio::awaitable<void> SendOnceCoro(std::vector<tcp::endpoint> endpoints, std::string request,
                                   std::optional<Result<Answer>>* out) {
  tcp::socket s(co_await asio::this_coro::executor);
  boost::system::error_code ec;
  co_await asio::async_connect(s, endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    out->emplace(Internal("cannot connect: " + ec.message()));
    co_return;
  }
  co_await asio::async_write(s, asio::buffer(request),
                             asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    out->emplace(Internal("cannot send: " + ec.message()));
    co_return;
  }
  std::string buf;
  Answer answer;
  const Reply reply = co_await ReadResponse(s, buf, {nullptr, false, &answer.body});
  if (reply.status == 0) {
    out->emplace(Internal("the connection closed without an HTTP answer"));
    co_return;
  }
  answer.status = reply.status;
  out->emplace(std::move(answer));
}

}  // namespace

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * v.size()));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

double LoadResult::Percentile(double p) const { return loadtest::Percentile(latencies_ms, p); }

double LoadResult::ErrorPercentile(double p, int status) const {
  if (status == 0) return loadtest::Percentile(error_latencies_ms, p);
  std::vector<double> v;
  for (size_t i = 0; i < error_latencies_ms.size(); ++i) {
    if (error_statuses[i] == status) v.push_back(error_latencies_ms[i]);
  }
  return loadtest::Percentile(std::move(v), p);
}

LoadResult RunLoad(const LoadSpec& spec) {
  Shared sh;
  sh.spec = &spec;
  const std::string host = HostHeader(spec.host, spec.port);
  double total = 0;
  if (spec.mix.empty()) {
    sh.requests.push_back(Render(host, spec.path, spec.content_type, spec.body, spec.headers));
    sh.cumulative.push_back(total = 1);
    sh.estimates.push_back(0);
  }
  for (const MixEntry& e : spec.mix) {
    sh.requests.push_back(Render(host, e.path, e.content_type, e.body, spec.headers));
    sh.cumulative.push_back(total += e.weight);
    sh.estimates.push_back(e.estimated_tokens);
  }
  asio::io_context ctx(1);
  sh.ctx = &ctx;
  boost::system::error_code ec;
  sh.endpoints = Resolve(ctx, spec.host, spec.port, &ec);  // empty on failure: every connect fails
  sh.start = Clock::now();
  sh.measure_from = sh.start + spec.warmup;
  sh.stop = sh.measure_from + spec.duration;
  sh.next_arrival = sh.start;
  sh.arrival_rng.seed(spec.seed * 104729 + 17);
  const bool poisson = spec.rate > 0 && spec.arrivals == Arrivals::kPoisson;
  // Poisson: a few to start with; the pool grows while every one is busy.
  const int initial = poisson ? std::min(spec.connections, 4) : spec.connections;
  for (int c = 0; c < initial; ++c) StartConnection(sh);
  if (spec.progress) asio::co_spawn(ctx, Ticker(sh), asio::detached);
  if (spec.drain.count() > 0) asio::co_spawn(ctx, Drainer(sh), asio::detached);
  ctx.run();
  LoadResult r;
  r.ok = sh.ok;
  r.errors = sh.errors;
  r.requests_per_s =
      static_cast<double>(sh.ok) / std::chrono::duration<double>(spec.duration).count();
  r.latencies_ms = std::move(sh.latencies);
  r.entries = std::move(sh.entries);
  r.cold_starts = std::move(sh.cold_starts);
  r.wrong = sh.wrong;
  r.ok_in_window = sh.ok_in_window;
  r.input_tokens = sh.input_tokens;
  r.output_tokens = sh.output_tokens;
  r.tokens_estimated = sh.tokens_estimated;
  r.unanswered = sh.unanswered;
  r.status_counts = std::move(sh.status_counts);
  r.error_latencies_ms = std::move(sh.error_latencies);
  r.error_statuses = std::move(sh.error_statuses);
  return r;
}

Result<Answer> SendOnce(const std::string& host, int port, const MixEntry& request,
                        const std::vector<std::pair<std::string, std::string>>& headers,
                        std::chrono::milliseconds timeout) {
  asio::io_context ctx(1);
  boost::system::error_code ec;
  std::vector<tcp::endpoint> endpoints = Resolve(ctx, host, port, &ec);
  if (ec || endpoints.empty()) {
    return InvalidInput("cannot resolve '" + host + "': " + (ec ? ec.message() : "no address"));
  }
  std::optional<Result<Answer>> out;
  asio::co_spawn(ctx,
                 SendOnceCoro(std::move(endpoints),
                              Render(HostHeader(host, port), request.path, request.content_type,
                                     request.body, headers),
                              &out),
                 asio::detached);
  ctx.run_for(timeout);
  if (!out) {
    return Internal("no answer within " + std::to_string(timeout.count()) + " ms");
  }
  return std::move(*out);
}

}  // namespace shoal::loadtest
