// covenant/contract/perf_stats.hpp - per-stage timing statistics of a contract, thread-safe and bounded.
//
// Each contract call records, per stage that ran, the time that stage took in that call (stages
// that run once per attempt — engine, parse, validate, post — are summed over the call's attempts).
// `total` is the whole call including forward(); `overhead` is total minus the named stages
// (the contract's own bookkeeping). Engine, parse and validate are also kept per attempt
// (per_attempt(): the latency of one model call). Percentiles come from a fixed log-scale histogram (1/16-octave
// buckets, within 3 %), so memory stays constant however many calls are recorded.
#pragma once

#include <boost/json/value.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/types/config.hpp"

namespace covenant {

enum class perf_stage : std::uint8_t {
  input_validation,
  pre,
  pre_remedy,
  act,
  render,
  engine,
  tool,
  parse,
  validate,
  post,
  post_remedy,
  forward,
  total,
  overhead,
};
inline constexpr std::size_t perf_stage_count = 14;

COVENANT_API std::string_view to_string(perf_stage s) noexcept;

/// Statistics of one stage: times as measured durations (nanoseconds, rounded).
struct stage_stats {
  std::string_view name;
  std::uint64_t count = 0;
  std::chrono::nanoseconds total{0};
  std::chrono::nanoseconds mean{0};
  std::chrono::nanoseconds stddev{0};
  std::chrono::nanoseconds min{0};
  std::chrono::nanoseconds max{0};
  std::chrono::nanoseconds p50{0};
  std::chrono::nanoseconds p95{0};
  std::chrono::nanoseconds p99{0};
  double share = 0;  ///< total / total of stage `total` (0..1)
};

/// The stage times of one call (nanoseconds; negative = the stage did not run), and the time of
/// each attempt's engine, parse and validate stages.
struct call_timings {
  std::array<std::int64_t, perf_stage_count> ns;
  /// One stage of one attempt (engine, parse or validate).
  struct attempt_time {
    perf_stage stage = perf_stage::engine;
    std::int64_t ns = 0;
  };
  std::array<attempt_time, 16> per_attempt{};  ///< the first `attempt_count` entries
  std::uint32_t attempt_count = 0;
  std::vector<attempt_time> more_attempts;     ///< entries beyond the first 16

  call_timings() { ns.fill(-1); }
  void add(perf_stage s, std::chrono::nanoseconds d) noexcept {
    auto& v = ns[static_cast<std::size_t>(s)];
    v = (v < 0 ? 0 : v) + d.count();
  }
  /// Adds `d` to stage `s` (engine, parse, validate) of the call and records it for one attempt.
  void add_attempt(perf_stage s, std::chrono::nanoseconds d) {
    add(s, d);
    if (attempt_count < per_attempt.size()) per_attempt[attempt_count++] = attempt_time{s, d.count()};
    else more_attempts.push_back(attempt_time{s, d.count()});
  }
};

class COVENANT_API perf_stats {
 public:
  perf_stats();
  perf_stats(const perf_stats&) = delete;
  perf_stats& operator=(const perf_stats&) = delete;

  /// Records one call; computes `overhead` from `total` and the named stages.
  void record(const call_timings& timings);
  /// Forgets everything recorded.
  void reset();
  /// Counts a streamed reply stopped early (contract_options::early_stop).
  void count_early_stop() const noexcept { early_stops_.fetch_add(1, std::memory_order_relaxed); }
  /// Streamed replies stopped early because a finished value broke a rule.
  [[nodiscard]] std::uint64_t early_stops() const noexcept { return early_stops_.load(std::memory_order_relaxed); }

  /// One entry per stage, in perf_stage order (stages never run have count 0).
  [[nodiscard]] std::vector<stage_stats> snapshot() const;
  [[nodiscard]] stage_stats of(perf_stage s) const;
  /// Per attempt (one model call each): engine, parse and validate, counted once per attempt
  /// (of(s) counts them once per call, summed over its attempts). Other stages: count 0.
  [[nodiscard]] stage_stats per_attempt(perf_stage s) const;
  /// Aligned text table: stage, count, total, mean, std, min, max, p50, p95, p99, share.
  [[nodiscard]] std::string table() const;
  void print(std::ostream& os) const;
  void print() const;  ///< to std::cout
  /// {"stages": {"engine": {"count":..., "total_s":..., ...}, ...}}
  [[nodiscard]] boost::json::value to_json() const;

 private:
  static constexpr std::size_t buckets = 64 * 16;
  struct accumulator {
    std::uint64_t count = 0;
    double sum = 0;      // seconds
    double mean = 0;     // Welford
    double m2 = 0;
    double min = 0;
    double max = 0;
    std::array<std::uint32_t, buckets> histogram{};
    void add(std::int64_t ns);
    [[nodiscard]] double percentile(double p) const;
    /// The figures of this accumulator (`grand`: the sum of stage total, for the share).
    [[nodiscard]] stage_stats stats(std::string_view name, double grand) const;
  };
  mutable std::mutex mutex_;
  std::array<accumulator, perf_stage_count> stages_;
  std::array<accumulator, 3> attempt_stages_;  // engine, parse, validate
  mutable std::atomic<std::uint64_t> early_stops_{0};
};

}  // namespace covenant
