// The non-template part of covenant::run_batch: limits, stop and deadline, counters, progress.
#include "covenant/contract/batch.hpp"

#include "covenant/engine/prices.hpp"

#include <fmt/format.h>
#include <semaphore.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <stdexcept>
#include <system_error>

namespace covenant {

namespace {

std::string human_count(std::uint64_t n) {
  if (n < 10'000) return std::to_string(n);
  if (n < 10'000'000) return fmt::format("{}k", n / 1000);
  return fmt::format("{}M", n / 1'000'000);
}

std::string human_duration(std::chrono::nanoseconds d) {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

}  // namespace

double batch_progress::rate() const noexcept {
  const double secs = std::chrono::duration<double>(elapsed).count();
  return secs > 0 ? static_cast<double>(done) / secs : 0.0;
}

std::optional<std::chrono::nanoseconds> batch_progress::eta() const noexcept {
  const double r = rate();
  if (!total || r <= 0 || done >= *total) return std::nullopt;
  const double left = static_cast<double>(*total - done) / r;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(left * 1e9));
}

std::string batch_progress::line() const {
  std::string out = total ? fmt::format("{}/{} done", done, *total) : fmt::format("{} done", done);
  if (failed > 0) out += fmt::format(" ({} failed)", failed);
  out += fmt::format(", {} in flight, {:.1f}/s", in_flight, rate());
  if (auto e = eta()) out += ", ETA " + human_duration(*e);
  if (retries > 0) out += fmt::format(", {} retries", retries);
  out += ", tokens " + human_count(tokens_in) + " in";
  if (cached_tokens_in > 0 && tokens_in > 0)
    out += fmt::format(" ({:.0f}% cached)", 100.0 * static_cast<double>(cached_tokens_in) / static_cast<double>(tokens_in));
  out += " / " + human_count(tokens_out) + " out";
  if (priced > 0) {
    out += ", " + format_usd(cost_usd);
    if (unpriced > 0) out += fmt::format(", {} unpriced", unpriced);
  }
  if (cache_hits > 0) out += fmt::format(", {} from the cache", cache_hits);
  if (budget_reached) out += ", budget reached";
  else if (stopped) out += ", stopped";
  return out;
}

bool batch_progress::over_budget(std::uint64_t max_tokens, double max_cost_usd) const noexcept {
  if (done == 0) return false;
  const auto calls = static_cast<double>(done);
  const auto coming = static_cast<double>(in_flight);
  if (max_tokens != 0) {
    const auto spent = static_cast<double>(tokens_in + tokens_out);
    if (spent + coming * spent / calls >= static_cast<double>(max_tokens)) return true;
  }
  if (max_cost_usd > 0) {
    if (unpriced > 0) return true;
    if (cost_usd + coming * cost_usd / calls >= max_cost_usd) return true;
  }
  return false;
}

void batch_progress::count(const outcome_base& o) noexcept {
  ++done;
  if (o.success) ++succeeded;
  else ++failed;
  if (o.attempts.size() > 1) retries += o.attempts.size() - 1;
  tokens_in += o.usage.input_tokens;
  tokens_out += o.usage.output_tokens;
  cached_tokens_in += o.usage.cached_input_tokens;
  for (const attempt& a : o.attempts) cache_hits += a.from_cache ? 1 : 0;
  if (o.cost_usd) {
    cost_usd += *o.cost_usd;
    ++priced;
  } else {
    ++unpriced;
  }
}

namespace detail {

// A POSIX semaphore: a post with no thread asleep is one atomic add, and a waiter woken by a post
// holds no lock it must hand back.
struct batch_state::waker {
  sem_t sem{};
  waker() {
    if (sem_init(&sem, 0, 0) != 0) throw std::system_error(errno, std::generic_category(), "sem_init");
  }
  ~waker() { sem_destroy(&sem); }
  waker(const waker&) = delete;
  waker& operator=(const waker&) = delete;
};

batch_state::batch_state(const batch_options& options, std::optional<std::size_t> total)
    : waker_(std::make_unique<waker>()), options_(options), call_(options.call) {
  if (options_.concurrency == 0) options_.concurrency = 1;
  if (!std::isfinite(options_.max_cost_usd) || options_.max_cost_usd < 0)
    throw std::invalid_argument("covenant::run_batch: max_cost_usd must be a finite number of dollars, 0 or more (0: no cap)");
  progress_.total = total;
  start_ = std::chrono::steady_clock::now();
  next_report_ = start_ + options_.progress_every;
  deadline_ = options_.deadline;
  if (options_.timeout.count() > 0) {
    const auto t = start_ + options_.timeout;
    if (!deadline_ || t < *deadline_) deadline_ = t;
  }
  // Every call: the batch's limiter, the batch's deadline (the earlier of it and the call's own),
  // and the batch's stop token (which also follows the call options' own stop token).
  if (options_.limiter) call_.limiter = options_.limiter;
  else if (options_.requests_per_minute > 0 || options_.tokens_per_minute > 0)
    call_.limiter = std::make_shared<rate_limiter>(rate_limiter_options{
        .requests_per_minute = options_.requests_per_minute, .tokens_per_minute = options_.tokens_per_minute});
  if (deadline_ && (!call_.deadline || *deadline_ < *call_.deadline)) call_.deadline = deadline_;
  std::stop_token user = options_.call.stop.stop_possible() ? options_.call.stop : options_.stop;
  call_.stop = cancel_.get_token();
  auto on_stop = [this] {
    stop_seen_.store(true);
    notify();
  };
  if (user.stop_possible()) on_stop_.emplace(user, on_stop);
  if (options_.stop.stop_possible() && options_.call.stop.stop_possible())
    extra_stop_.emplace(options_.stop, on_stop);
}

batch_state::~batch_state() = default;

bool batch_state::may_start(std::size_t next_to_deliver) const noexcept {
  if (source_done_ || stopping_) return false;
  if (progress_.in_flight >= options_.concurrency) return false;
  // Input order: at most `concurrency` results may wait for an earlier one.
  if (options_.order == batch_order::input && progress_.started - next_to_deliver >= options_.concurrency)
    return false;
  return true;
}

void batch_state::started() noexcept {
  ++progress_.started;
  ++progress_.in_flight;
}

void batch_state::not_started() noexcept {
  --progress_.started;
  --progress_.in_flight;
}

void batch_state::cancel_all() noexcept {
  if (stopping_ && cancel_.stop_requested()) return;
  stopping_ = true;
  progress_.stopped = true;
  cancel_.request_stop();
}

void batch_state::delivered(const outcome_base& o) noexcept {
  --progress_.in_flight;
  progress_.count(o);
  if (!stopping_ && !source_done_ && progress_.over_budget(options_.max_tokens, options_.max_cost_usd)) {
    stopping_ = true;  // no further call starts; those in flight finish by themselves
    progress_.stopped = true;
    progress_.budget_reached = true;
  }
}

std::chrono::steady_clock::time_point batch_state::tick() {
  const auto now = std::chrono::steady_clock::now();
  if (!stopping_ && stop_seen_.load()) {
    stopping_ = true;
    progress_.stopped = true;
    cancel_.request_stop();  // the calls in flight end cancelled
  }
  if (!stopping_ && deadline_ && now >= *deadline_) {
    stopping_ = true;  // the calls in flight end at their deadline by themselves
    progress_.stopped = true;
  }
  if (options_.on_progress && now >= next_report_) {
    progress_.elapsed = now - start_;
    options_.on_progress(progress_);
    next_report_ = now + options_.progress_every;
  }
  auto until = next_report_;
  if (!options_.on_progress) until = now + std::chrono::seconds(1);
  if (deadline_ && !stopping_ && *deadline_ < until) until = *deadline_;
  return until;
}

batch_progress batch_state::end() {
  progress_.elapsed = std::chrono::steady_clock::now() - start_;
  if (options_.on_progress) options_.on_progress(progress_);
  return progress_;
}

void batch_state::notify() { sem_post(&waker_->sem); }

bool batch_state::sleep_until(std::chrono::steady_clock::time_point until) {
  // std::chrono::steady_clock is CLOCK_MONOTONIC.
  const auto since = std::chrono::duration_cast<std::chrono::nanoseconds>(until.time_since_epoch());
  const std::int64_t ns = std::max<std::int64_t>(since.count(), 0);
  const timespec at{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  for (;;) {
    if (sem_clockwait(&waker_->sem, CLOCK_MONOTONIC, &at) == 0) return true;
    if (errno != EINTR) return false;  // ETIMEDOUT
  }
}

}  // namespace detail

}  // namespace covenant
