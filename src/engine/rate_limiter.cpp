// Client-side request and token rate limits: two continuously refilling buckets, a FIFO of
// waiting requests, and a pause after the server's 429 / Retry-After; waits are runtime timers.
#include "covenant/engine/rate_limiter.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "covenant/engine/engine.hpp"
#include "covenant/engine/runtime.hpp"

namespace covenant {

using clock_type = std::chrono::steady_clock;

struct rate_limiter::impl : std::enable_shared_from_this<rate_limiter::impl> {
  struct waiter {
    std::uint64_t id;
    std::uint64_t tokens;
    std::function<void()> go;
    clock_type::time_point since;
    bool blocked = false;  ///< could not go at once
  };

  rate_limiter_options opts;
  covenant::runtime* rt;
  std::function<clock_type::time_point()> clock;  // opts.clock, or steady_clock::now
  double req_per_ns = 0;  // refill rates; 0 = unlimited
  double tok_per_ns = 0;
  double req_cap = 0;
  double tok_cap = 0;

  mutable std::mutex mutex;
  double req_level = 0;
  double tok_level = 0;
  clock_type::time_point refilled{};
  clock_type::time_point paused_until{};
  std::deque<waiter> queue;
  std::uint64_t next_id = 1;
  covenant::timer wake;
  clock_type::time_point wake_at = clock_type::time_point::max();
  std::uint64_t output_count = 0;
  double output_sum = 0;
  rate_limiter_stats counts;

  void refill(clock_type::time_point now) {
    const double dt = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - refilled).count());
    if (dt > 0) {
      if (req_per_ns > 0) req_level = std::min(req_cap, req_level + dt * req_per_ns);
      if (tok_per_ns > 0) tok_level = std::min(tok_cap, tok_level + dt * tok_per_ns);
      refilled = now;
    }
  }

  /// Grants what can go now (returns their callbacks) and arms the timer for the next one.
  std::vector<std::function<void()>> pump_locked(clock_type::time_point now) {
    std::vector<std::function<void()>> ready;
    refill(now);
    while (!queue.empty()) {
      waiter& w = queue.front();
      clock_type::time_point due = now;
      if (now < paused_until) due = paused_until;
      const double tok_need = std::min(static_cast<double>(w.tokens), tok_cap);
      if (due == now) {
        double wait_ns = 0;
        if (req_per_ns > 0 && req_level < 1.0) wait_ns = std::max(wait_ns, (1.0 - req_level) / req_per_ns);
        if (tok_per_ns > 0 && tok_level < tok_need) wait_ns = std::max(wait_ns, (tok_need - tok_level) / tok_per_ns);
        // Waits are whole nanoseconds, to the nearest: what the refill arithmetic rounds off
        // (a bucket a hair short at the nanosecond its refill was due) is not a wait, which on a
        // clock that has not moved would only set a timer for no time again and again.
        const auto wait = std::chrono::nanoseconds(std::llround(wait_ns));
        if (wait.count() > 0) due = now + wait;
      }
      if (due > now) {
        for (waiter& b : queue) b.blocked = true;
        arm_locked(due, now);
        break;
      }
      if (req_per_ns > 0) req_level -= 1.0;
      if (tok_per_ns > 0) tok_level -= static_cast<double>(w.tokens);
      ++counts.granted;
      counts.tokens_estimated += w.tokens;
      if (w.blocked) {
        ++counts.delayed;
        counts.waited += now - w.since;
      }
      ready.push_back(std::move(w.go));
      queue.pop_front();
    }
    return ready;
  }

  /// A runtime timer for when the clock reaches `due` (`now` on the clock).
  void arm_locked(clock_type::time_point due, clock_type::time_point now) {
    if (wake && due >= wake_at) return;  // an earlier wake-up is already set
    if (wake) wake.cancel();
    wake_at = due;
    std::weak_ptr<impl> self = weak_from_this();
    wake = rt->schedule(due - now, [self] {
      if (auto s = self.lock()) s->pump();
    });
  }

  void pump() {
    std::vector<std::function<void()>> ready;
    {
      std::lock_guard lock(mutex);
      wake = covenant::timer();
      wake_at = clock_type::time_point::max();
      ready = pump_locked(clock());
    }
    for (auto& go : ready) rt->post(std::move(go));
  }
};

rate_limiter::rate_limiter(rate_limiter_options o) : impl_(std::make_shared<impl>()) {
  if (!(o.requests_per_minute >= 0) || !(o.tokens_per_minute >= 0) || !std::isfinite(o.requests_per_minute) ||
      !std::isfinite(o.tokens_per_minute))
    throw std::invalid_argument("rate_limiter: requests_per_minute and tokens_per_minute must be finite and >= 0");
  if (o.burst.count() < 0) throw std::invalid_argument("rate_limiter: burst must be >= 0");
  impl& s = *impl_;
  s.opts = o;
  s.rt = o.runtime != nullptr ? o.runtime : &covenant::runtime::shared();
  s.clock = o.clock ? o.clock : std::function<clock_type::time_point()>(&clock_type::now);
  constexpr double ns_per_minute = 60e9;
  s.req_per_ns = o.requests_per_minute / ns_per_minute;
  s.tok_per_ns = o.tokens_per_minute / ns_per_minute;
  const double burst_seconds = std::chrono::duration<double>(o.burst).count();
  s.req_cap = std::max(1.0, o.requests_per_minute / 60.0 * burst_seconds);
  s.tok_cap = std::max(1.0, o.tokens_per_minute / 60.0 * burst_seconds);
  // Start full: the first burst goes at once.
  s.req_level = s.req_cap;
  s.tok_level = s.tok_cap;
  s.refilled = s.clock();
}

rate_limiter::rate_limiter() : rate_limiter(rate_limiter_options{}) {}

rate_limiter::~rate_limiter() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->wake) impl_->wake.cancel();
}

std::uint64_t rate_limiter::acquire(std::uint64_t tokens, std::function<void()> go) {
  std::vector<std::function<void()>> ready;
  std::uint64_t id = 0;
  {
    std::lock_guard lock(impl_->mutex);
    id = impl_->next_id++;
    const auto now = impl_->clock();
    impl_->queue.push_back({id, tokens, std::move(go), now, false});
    ready = impl_->pump_locked(now);
  }
  for (auto& f : ready) impl_->rt->post(std::move(f));
  return id;
}

bool rate_limiter::cancel(std::uint64_t id) {
  std::vector<std::function<void()>> ready;
  bool found = false;
  {
    std::lock_guard lock(impl_->mutex);
    auto& q = impl_->queue;
    auto it = std::find_if(q.begin(), q.end(), [id](const impl::waiter& w) { return w.id == id; });
    if (it == q.end()) return false;
    q.erase(it);
    found = true;
    ready = impl_->pump_locked(impl_->clock());  // the next one may go now
  }
  for (auto& f : ready) impl_->rt->post(std::move(f));
  return found;
}

std::uint64_t rate_limiter::estimate(const chat_request& request) const {
  std::uint64_t bytes = 0;
  for (const message& m : request.messages) bytes += m.content.size();
  std::uint64_t output = 0;
  if (request.max_tokens) {
    output = *request.max_tokens;
  } else {
    std::lock_guard lock(impl_->mutex);
    if (impl_->output_count > 0)
      output = static_cast<std::uint64_t>(impl_->output_sum / static_cast<double>(impl_->output_count));
  }
  return bytes / 4 + output;
}

void rate_limiter::settle(std::uint64_t estimated, std::uint64_t actual, std::uint64_t output) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard lock(impl_->mutex);
    impl& s = *impl_;
    s.counts.tokens_reported += actual;
    ++s.output_count;
    s.output_sum += static_cast<double>(output);
    if (s.tok_per_ns > 0) {
      const auto now = s.clock();
      s.refill(now);
      s.tok_level = std::min(s.tok_cap, s.tok_level - (static_cast<double>(actual) - static_cast<double>(estimated)));
      if (actual < estimated) ready = s.pump_locked(now);  // tokens given back: a waiter may fit now
    }
  }
  for (auto& f : ready) impl_->rt->post(std::move(f));
}

void rate_limiter::back_off(std::chrono::nanoseconds wait) {
  std::vector<std::function<void()>> ready;
  {
    std::lock_guard lock(impl_->mutex);
    impl& s = *impl_;
    ++s.counts.back_offs;
    const auto now = s.clock();
    const auto until = now + std::max(wait, std::chrono::nanoseconds(0));
    if (until > s.paused_until) s.paused_until = until;
    ready = s.pump_locked(now);
  }
  for (auto& f : ready) impl_->rt->post(std::move(f));
}

rate_limiter_stats rate_limiter::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->counts;
}

const rate_limiter_options& rate_limiter::options() const noexcept { return impl_->opts; }

}  // namespace covenant
