#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include "load_generator.h"

#include <algorithm>
#include <boost/asio.hpp>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string_view>

namespace shoal::bench {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Shared {
  const LoadSpec* spec;
  std::vector<std::string> requests;  // rendered HTTP requests
  std::vector<double> cumulative;     // their cumulative weights
  Clock::time_point start, measure_from, stop;
  uint64_t ok = 0, errors = 0, wrong = 0, ok_in_window = 0;
  std::vector<double> latencies;
  std::vector<uint32_t> entries;
  std::vector<uint8_t> cold_starts;
  std::map<int, uint64_t> status_counts;
  std::vector<double> error_latencies;
  std::vector<int> error_statuses;
};

// Reads one response; returns its status, or 0 on a broken connection.
// `cold_start`: whether it said X-Shoal-Cold-Start: 1. `expect`: when not
// empty, `*matches` says whether the body was exactly that.
asio::awaitable<int> ReadResponse(tcp::socket& s, std::string& buf, bool* cold_start,
                                  const std::string& expect, bool* matches) {
  boost::system::error_code ec;
  const size_t head = co_await asio::async_read_until(
      s, asio::dynamic_buffer(buf), "\r\n\r\n", asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return 0;
  const int status = std::atoi(buf.c_str() + buf.find(' ') + 1);
  size_t length = 0;
  for (size_t at = 0; at < head;) {
    const size_t eol = buf.find("\r\n", at);
    if (eol == std::string::npos || eol > head) break;
    if (eol - at > 15 && strncasecmp(buf.c_str() + at, "content-length:", 15) == 0) {
      length = std::strtoul(buf.c_str() + at + 15, nullptr, 10);
    }
    constexpr std::string_view kCold = "x-shoal-cold-start: 1";
    if (eol - at == kCold.size() && strncasecmp(buf.c_str() + at, kCold.data(), kCold.size()) == 0) {
      *cold_start = true;
    }
    at = eol + 2;
  }
  if (buf.size() < head + length) {
    co_await asio::async_read(s, asio::dynamic_buffer(buf), asio::transfer_exactly(head + length - buf.size()),
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return 0;
  }
  if (!expect.empty()) *matches = std::string_view(buf).substr(head, length) == expect;
  buf.erase(0, head + length);
  co_return status;
}

asio::awaitable<void> Connection(Shared& sh, int index) {
  auto ex = co_await asio::this_coro::executor;
  tcp::socket s(ex);
  boost::system::error_code ec;
  co_await s.async_connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(sh.spec->port)},
                           asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    ++sh.errors;
    ++sh.status_counts[0];
    co_return;
  }
  s.set_option(tcp::no_delay(true));
  asio::steady_timer timer(ex);
  std::string buf;
  std::mt19937_64 rng(sh.spec->seed * 7919 + static_cast<uint64_t>(index));
  std::uniform_real_distribution<double> draw(0, sh.cumulative.back());
  const double rate = sh.spec->rate;
  const int conns = sh.spec->connections;
  for (uint64_t k = 0;; ++k) {
    Clock::time_point due = Clock::now();
    if (rate > 0) {
      // Request k of this connection is due at (k*conns + index) / rate.
      const double at_s = (static_cast<double>(k) * conns + index) / rate;
      due = sh.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(at_s));
      if (due > Clock::now()) {
        timer.expires_at(due);
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
    }
    if (due >= sh.stop) break;
    const size_t pick = static_cast<size_t>(
        std::upper_bound(sh.cumulative.begin(), sh.cumulative.end(), draw(rng)) - sh.cumulative.begin());
    const std::string& request = sh.requests[std::min(pick, sh.requests.size() - 1)];
    co_await asio::async_write(s, asio::buffer(request), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      ++sh.errors;
      ++sh.status_counts[0];
      break;
    }
    bool cold_start = false, matches = true;
    const int status = co_await ReadResponse(s, buf, &cold_start, sh.spec->expect_body, &matches);
    const auto done = Clock::now();
    if (status == 200 && matches && done >= sh.measure_from && done <= sh.stop) ++sh.ok_in_window;
    if (due < sh.measure_from) continue;
    ++sh.status_counts[status];
    const double ms = std::chrono::duration<double, std::milli>(done - due).count();
    if (status == 200 && matches) {
      ++sh.ok;
      sh.latencies.push_back(ms);
      sh.entries.push_back(static_cast<uint32_t>(pick));
      sh.cold_starts.push_back(cold_start ? 1 : 0);
    } else {
      ++sh.errors;
      if (status == 200) ++sh.wrong;
      if (status == 0) break;
      if (status != 200) {
        sh.error_latencies.push_back(ms);
        sh.error_statuses.push_back(status);
      }
    }
  }
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

}  // namespace

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * v.size()));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

double LoadResult::Percentile(double p) const { return bench::Percentile(latencies_ms, p); }

double LoadResult::ErrorPercentile(double p, int status) const {
  if (status == 0) return bench::Percentile(error_latencies_ms, p);
  std::vector<double> v;
  for (size_t i = 0; i < error_latencies_ms.size(); ++i) {
    if (error_statuses[i] == status) v.push_back(error_latencies_ms[i]);
  }
  return bench::Percentile(std::move(v), p);
}

LoadResult RunLoad(const LoadSpec& spec) {
  Shared sh;
  sh.spec = &spec;
  auto render = [](const std::string& path, const std::string& type, const std::string& body) {
    return "POST " + path + " HTTP/1.1\r\nHost: bench\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  double total = 0;
  if (spec.mix.empty()) {
    sh.requests.push_back(render(spec.path, spec.content_type, spec.body));
    sh.cumulative.push_back(total = 1);
  }
  for (const MixEntry& e : spec.mix) {
    sh.requests.push_back(render(e.path, e.content_type, e.body));
    sh.cumulative.push_back(total += e.weight);
  }
  asio::io_context ctx(1);
  sh.start = Clock::now();
  sh.measure_from = sh.start + spec.warmup;
  sh.stop = sh.measure_from + spec.duration;
  for (int c = 0; c < spec.connections; ++c) asio::co_spawn(ctx, Connection(sh, c), asio::detached);
  if (spec.progress) asio::co_spawn(ctx, Ticker(sh), asio::detached);
  ctx.run();
  LoadResult r;
  r.ok = sh.ok;
  r.errors = sh.errors;
  r.requests_per_s = static_cast<double>(sh.ok) / std::chrono::duration<double>(spec.duration).count();
  r.latencies_ms = std::move(sh.latencies);
  r.entries = std::move(sh.entries);
  r.cold_starts = std::move(sh.cold_starts);
  r.wrong = sh.wrong;
  r.ok_in_window = sh.ok_in_window;
  r.status_counts = std::move(sh.status_counts);
  r.error_latencies_ms = std::move(sh.error_latencies);
  r.error_statuses = std::move(sh.error_statuses);
  return r;
}

}  // namespace shoal::bench
