#include "covenant/engine/retry.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace covenant {

namespace {
std::chrono::nanoseconds to_ns(double seconds) {
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(seconds * 1e9)));
}
}  // namespace

std::chrono::nanoseconds retry_options::base_delay(int k) const {
  if (k < 1) return std::chrono::nanoseconds(0);
  const double cap = max_delay.count();
  // delay * backoff^(k-1), computed without overflow: stop growing once past the cap.
  double d = delay.count();
  for (int i = 1; i < k && d < cap; ++i) d *= backoff;
  return to_ns(std::min(cap, d));
}

std::chrono::nanoseconds retry_options::delay_before(int k, double u01) const {
  if (k < 1) return std::chrono::nanoseconds(0);
  const double base = std::chrono::duration<double>(base_delay(k)).count();
  const double u = jitter * (2.0 * u01 - 1.0);
  const double d = std::clamp(base * (1.0 + u), 0.0, max_delay.count());
  return to_ns(d);
}

void retry_options::check() const {
  auto bad = [](const std::string& what) { throw std::invalid_argument("covenant::retry_options: " + what); };
  if (tries < 0) bad("tries must be >= 0 (got " + std::to_string(tries) + ")");
  if (!(delay.count() >= 0)) bad("delay must be >= 0");
  if (!(max_delay.count() >= 0)) bad("max_delay must be >= 0");
  if (!(backoff >= 1.0)) bad("backoff must be >= 1");
  if (!(jitter >= 0.0 && jitter <= 1.0)) bad("jitter must be in [0, 1]");
}

namespace detail {

double default_random() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(gen);
}

}  // namespace detail

}  // namespace covenant
