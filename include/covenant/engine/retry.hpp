// covenant/engine/retry.hpp - a retry schedule: how many times to try again, and when. One
// vocabulary for both kinds of retry: a contract's remedy (contract_options::retry: asking the
// model again after a rejected reply) and the HTTP engine's transport retries
// (http_engine_options::retry: sending the request again after a 429, a 5xx, a refused connection
// or a timeout), each with its own defaults.
//
// Exact semantics:
//  * `tries` is the number of retries after the first attempt: at most 1 + tries attempts (a
//    remedy phase makes at most 1 + tries model calls; an engine call at most 1 + tries HTTP
//    requests). tries = 0 means no retry.
//  * Before retry k (k = 1..tries) the wait is
//        base(k)  = min(max_delay, delay * backoff^(k-1))
//        delay(k) = clamp(base(k) * (1 + u), 0, max_delay),  u drawn uniformly from [-jitter, +jitter]
//    There is no wait before the first attempt, and no attempt and no wait after the last try.
//    (The transport waits as long as a server's Retry-After says instead, when it sends one,
//    capped at max_delay.)
//  * What a contract does when its tries run out is contract_options::graceful, not part of the
//    schedule.
#pragma once

#include <chrono>

#include "covenant/types/config.hpp"

namespace covenant {

struct COVENANT_API retry_options {
  /// Retries after the first attempt.
  int tries = 5;
  /// The wait before the first retry (as every duration covenant is given: milliseconds, so
  /// `500ms`, `2s` and `1min` all convert; 0.5 s is `500ms`).
  std::chrono::milliseconds delay{500};
  /// Each further wait is `backoff` times the one before (at least 1).
  double backoff = 2.0;
  /// Cap of every wait.
  std::chrono::milliseconds max_delay{15'000};
  /// Relative spread of each wait, in [0, 1].
  double jitter = 0.1;

  /// min(max_delay, delay * backoff^(k-1)) for retry k >= 1 (no jitter).
  [[nodiscard]] std::chrono::nanoseconds base_delay(int k) const;
  /// The wait before retry k given a uniform draw u01 in [0, 1).
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
