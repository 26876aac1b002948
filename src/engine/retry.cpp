#include "covenant/engine/retry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>

#include "retry_check.hpp"

namespace covenant {

namespace {
/// Seconds as nanoseconds, rounded; within [0, what nanoseconds hold] (a cap of centuries cannot
/// overflow the wait).
std::chrono::nanoseconds to_ns(double seconds) {
  constexpr double most = 9.2e9;  // seconds: just under std::chrono::nanoseconds::max()
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(std::clamp(seconds, 0.0, most) * 1e9)));
}
double to_seconds(std::chrono::milliseconds d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

std::chrono::nanoseconds retry_options::base_delay(int k) const {
  if (k < 1) return std::chrono::nanoseconds(0);
  const double cap = to_seconds(max_delay);
  // delay * backoff^(k-1), computed without overflow: stop growing once past the cap.
  double d = to_seconds(delay);
  for (int i = 1; i < k && d < cap; ++i) d *= backoff;
  return to_ns(std::min(cap, d));
}

std::chrono::nanoseconds retry_options::delay_before(int k, double u01) const {
  if (k < 1) return std::chrono::nanoseconds(0);
  const double base = std::chrono::duration<double>(base_delay(k)).count();
  const double u = jitter * (2.0 * u01 - 1.0);
  const double d = std::clamp(base * (1.0 + u), 0.0, to_seconds(max_delay));
  return to_ns(d);
}

void retry_options::check() const {
  if (std::string problem = detail::retry_problem(*this, ""); !problem.empty())
    throw std::invalid_argument("covenant::retry_options: " + problem);
}

namespace detail {

std::string retry_problem(const retry_options& r, std::string_view prefix) {
  auto bad = [&](const std::string& what) { return std::string(prefix) + what; };
  if (r.tries < 0) return bad("tries must be >= 0 (got " + std::to_string(r.tries) + ")");
  if (!(r.delay.count() >= 0)) return bad("delay must be >= 0");
  if (!(r.max_delay.count() >= 0)) return bad("max_delay must be >= 0");
  if (!(r.backoff >= 1.0)) return bad("backoff must be >= 1");
  if (!(r.jitter >= 0.0 && r.jitter <= 1.0)) return bad("jitter must be in [0, 1]");
  return {};
}

double default_random() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(gen);
}

}  // namespace detail

}  // namespace covenant
