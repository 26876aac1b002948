// covenant/engine/rate_limiter.hpp - client-side limits on requests and tokens per minute, shared by
// every call that uses one limiter, backing off together when the server says "too many".
//
//     auto limits = std::make_shared<covenant::rate_limiter>(
//         covenant::rate_limiter_options{.requests_per_minute = 500, .tokens_per_minute = 200'000});
//     covenant::call_options o;  o.limiter = limits;     // or batch_options::limiter
//
// Two token buckets refill continuously: requests per minute and (estimated) tokens per minute.
// Each bucket holds at most `burst`'s worth of its rate (default 1 s: a steady pace rather than a
// minute's quota at once). A request waits, first come first served, until both buckets have
// room; its tokens are estimated before it is sent (request text bytes / 4 for the input, plus the
// mean output of the replies settled so far, or max_tokens when set) and corrected with the usage
// the engine reports after it. A request larger than a bucket goes when the bucket is full and
// leaves it in debt. When the server answers 429 or sends Retry-After, back_off() holds every
// request of the limiter until then (the HTTP engine calls it for requests that carry a limiter),
// so a batch slows down as one instead of each call hammering the server on its own schedule.
// Waiting is done with timers on a runtime: no thread sleeps.
//
// Time comes from `rate_limiter_options::clock` (default std::chrono::steady_clock::now): the buckets' refill,
// the back-off's end and the waits counted in stats() are all read from it. The wake-up of a
// waiting request is still a runtime timer, set for how long the clock says is left; besides,
// every acquire(), back_off(), cancel() of a waiting request and settle() that gives tokens back
// grants what the clock says can go now. So a test can give a covenant::testing::manual_clock
// (testing.hpp), advance it, and see the grants at its next call without waiting in real time:
//
//     covenant::testing::manual_clock clock;
//     covenant::rate_limiter limits{{.requests_per_minute = 60, .clock = std::ref(clock)}};
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "covenant/types/config.hpp"

namespace covenant {

class runtime;
struct chat_request;

struct rate_limiter_options {
  /// Requests per minute (0: unlimited).
  double requests_per_minute = 0;
  /// Estimated tokens (input + output) per minute (0: unlimited).
  double tokens_per_minute = 0;
  /// How much of each rate a bucket holds, as the time its rate takes to fill it (the largest
  /// burst: at 600 requests a minute, 1 s holds 10 requests); at least one request.
  std::chrono::milliseconds burst{1000};
  /// Where waits are timed and grants run (null: runtime::shared()).
  covenant::runtime* runtime = nullptr;
  /// The time the buckets and back-offs are measured in (empty: std::chrono::steady_clock::now).
  /// Called with the limiter's lock held: it must not call back into the limiter.
  std::function<std::chrono::steady_clock::time_point()> clock{};
};

/// A limiter's counters since it was made (rate_limiter::stats()).
struct rate_limiter_stats {
  std::uint64_t granted = 0;        ///< requests let through
  std::uint64_t delayed = 0;        ///< requests that had to wait
  std::uint64_t back_offs = 0;      ///< back_off() calls (429 / Retry-After)
  std::uint64_t tokens_estimated = 0;
  std::uint64_t tokens_reported = 0;
  std::chrono::nanoseconds waited{0};  ///< total time requests waited
};

class COVENANT_API rate_limiter {
 public:
  /// Throws std::invalid_argument for negative rates or a negative burst.
  explicit rate_limiter(rate_limiter_options o);
  rate_limiter();
  ~rate_limiter();
  rate_limiter(const rate_limiter&) = delete;
  rate_limiter& operator=(const rate_limiter&) = delete;

  /// Asks to send one request of `tokens` estimated tokens; `go` runs on a worker once both
  /// buckets have room (at once when they do now). Returns an id for cancel().
  std::uint64_t acquire(std::uint64_t tokens, std::function<void()> go);
  /// Withdraws a waiting request (its `go` never runs); the requests behind it may go at once.
  /// False when it already ran or was unknown.
  bool cancel(std::uint64_t id);
  /// The estimate acquire() should be given for `request`.
  [[nodiscard]] std::uint64_t estimate(const chat_request& request) const;
  /// A request estimated at `estimated` tokens used `actual` (its reported usage): the token
  /// bucket is corrected by the difference (a waiting request that now fits goes at once), and
  /// the output estimate learns from `output`.
  void settle(std::uint64_t estimated, std::uint64_t actual, std::uint64_t output);
  /// The server asked to slow down: nothing is granted before `wait` from now (later back-offs
  /// extend it, earlier ones do not shorten it).
  void back_off(std::chrono::nanoseconds wait);

  /// Counters since the limiter was made.
  [[nodiscard]] rate_limiter_stats stats() const;
  /// The options it was made with.
  [[nodiscard]] const rate_limiter_options& options() const noexcept;

 private:
  struct impl;
  std::shared_ptr<impl> impl_;
};

}  // namespace covenant
