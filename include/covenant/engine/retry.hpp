// covenant/engine/retry.hpp - the remedy schedule: how many times a contract asks again, and when.
//
// Exact semantics:
//  * `tries` is the number of remedy attempts after the first generation: a remedy phase makes
//    at most 1 + tries model calls. tries = 0 means no re-ask.
//  * Before remedy attempt k (k = 1..tries) the contract waits
//        base(k)  = min(max_delay, delay * backoff^(k-1))
//        delay(k) = clamp(base(k) * (1 + u), 0, max_delay),  u drawn uniformly from [-jitter, +jitter]
//    There is no wait before the first generation, and no call and no wait after the last try.
//    What a contract does when tries run out is contract_options::graceful, not part of the schedule.
#pragma once

#include <chrono>

#include "covenant/types/config.hpp"

namespace covenant {

struct COVENANT_API retry_options {
  int tries = 5;
  std::chrono::duration<double> delay{0.5};
  double backoff = 2.0;
  std::chrono::duration<double> max_delay{15.0};
  double jitter = 0.1;

  /// min(max_delay, delay * backoff^(k-1)) for remedy attempt k >= 1 (no jitter).
  [[nodiscard]] std::chrono::nanoseconds base_delay(int k) const;
  /// The wait before remedy attempt k given a uniform draw u01 in [0, 1).
  [[nodiscard]] std::chrono::nanoseconds delay_before(int k, double u01) const;
  /// Throws std::invalid_argument when a value is out of range (negative tries, delays, jitter
  /// outside [0, 1], backoff below 1...).
  void check() const;
};

namespace detail {
/// A uniform draw from [0, 1) (a per-thread generator): the jitter of retry waits when no random
/// source is given.
COVENANT_API double default_random();
}  // namespace detail

}  // namespace covenant
