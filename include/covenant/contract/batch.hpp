// covenant/contract/batch.hpp - many contract calls with bounded concurrency, shared rate limits, a
// deadline, cancellation and progress; results in input order or as they finish.
//
//     covenant::batch_options o;
//     o.concurrency = 100;                       // calls in flight at most
//     o.requests_per_minute = 3000;              // shared token buckets (rate_limiter.hpp)
//     o.tokens_per_minute = 1'000'000;
//     o.on_progress = [](const covenant::batch_progress& p) { std::cerr << p.line() << "\r"; };
//     covenant::batch_progress summary = covenant::run_batch(
//         contract, inputs,                                   // a range, or a generator
//         [&](std::size_t index, auto&& result) { write(index, result); }, o);
//
// The inputs are read lazily, one at a time, as room frees up: a generator (any callable returning
// std::optional<Input>, empty at the end) or any input range; a million-line file is never held in
// memory. Each call runs as contract.run_async() would, so a failed record ends in forward like any
// call, is delivered with its outcome, and never stops the batch. The sink runs on the calling
// thread, one result at a time (no locking needed), in input order (batch_order::input; at most
// `concurrency` results wait for an earlier slow one, so memory stays bounded by the concurrency)
// or as calls finish (batch_order::completion). Progress is reported on the calling thread every
// `progress_every` and once at the end. The calls' own work (hooks, reading, forward) runs on the
// calling thread too, between deliveries (batch_options::work_on_batch_thread); the engine's
// transfers run on the runtime's I/O loop.
//
// Stopping: a stop request (options.stop) cancels the calls in flight (each ends in forward at
// stage cancelled and is delivered) and reads no further input; the deadline (timeout/deadline)
// applies to every call (in-flight calls end at stage deadline) and also stops reading. Every input
// taken from the source is delivered exactly once; the summary says how many were started.
//
// Exceptions: when the application's code that the batch runs on its thread throws (the source,
// batch_options::query_id or ::trace, the sink, on_progress, on_exception), no further call starts, the calls
// in flight are cancelled and waited for (their results are not delivered), and then run_batch
// rethrows that exception. It never returns or throws with a call of its still running. A forward
// that throws is no such exception: it is the record's result (on_exception, or the first one
// rethrown once the batch is over).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ranges>
#include <stop_token>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "covenant/contract/contract_options.hpp"
#include "covenant/engine/future.hpp"
#include "covenant/contract/outcome.hpp"
#include "covenant/engine/rate_limiter.hpp"

namespace covenant {

/// Where a batch stands (and, at the end, its summary).
struct COVENANT_API batch_progress {
  std::size_t started = 0;    ///< inputs taken from the source and started
  std::size_t done = 0;       ///< calls finished and delivered
  std::size_t succeeded = 0;  ///< of which succeeded
  std::size_t failed = 0;     ///< of which failed (any stage, cancelled and deadline included)
  std::size_t in_flight = 0;  ///< started, not yet delivered
  std::uint64_t retries = 0;  ///< model calls beyond the first of each finished call
  std::uint64_t tokens_in = 0;
  std::uint64_t tokens_out = 0;
  std::uint64_t cached_tokens_in = 0;  ///< of tokens_in, served from the provider's prompt cache
  /// What the finished calls with a known cost cost (outcome::cost_usd), in US dollars.
  double cost_usd = 0;
  std::size_t priced = 0;    ///< finished calls with a known cost
  std::size_t unpriced = 0;  ///< finished calls whose cost is unknown (no prices, a model without one)
  std::uint64_t cache_hits = 0;  ///< model calls answered by a response cache (attempt::from_cache)
  std::chrono::nanoseconds elapsed{0};
  /// Number of inputs, when the source knows it (a sized range, or batch_options::total).
  std::optional<std::size_t> total;
  /// The batch stopped reading early (stop request, deadline or budget).
  bool stopped = false;
  /// The batch stopped starting calls because its budget was reached (batch_options::max_tokens,
  /// max_cost_usd); the calls in flight then finished as usual.
  bool budget_reached = false;

  /// Calls finished per second so far.
  [[nodiscard]] double rate() const noexcept;
  /// Estimated time left (needs `total` and some finished calls).
  [[nodiscard]] std::optional<std::chrono::nanoseconds> eta() const noexcept;
  /// One line: "420/1000 done (12 failed), 100 in flight, 83.1/s, ETA 7s, 15 retries, tokens 120k in / 30k out";
  /// with cached input ", tokens 120k in (64% cached) / 30k out"; once a call had a known cost
  /// ", $0.012345" (format_usd; and ", 3 unpriced" for calls whose cost is unknown).
  [[nodiscard]] std::string line() const;
  /// Counts a finished call: done, succeeded or failed, retries, tokens and cost.
  void count(const outcome_base& o) noexcept;
  /// Whether what the finished calls spent, plus what the calls in flight are expected to spend
  /// (each the average of the finished ones), reaches `max_tokens` or `max_cost_usd` (0: no cap).
  /// A cost cap counts as reached once a finished call's cost is unknown: it cannot be kept.
  [[nodiscard]] bool over_budget(std::uint64_t max_tokens, double max_cost_usd) const noexcept;
};

enum class batch_order : std::uint8_t {
  input,       ///< results delivered in input order
  completion,  ///< results delivered as calls finish
};

struct batch_options {
  /// Calls in flight at most (at least 1).
  std::size_t concurrency = 16;
  batch_order order = batch_order::input;
  /// Client-side limits (0: none); ignored when `limiter` is given.
  double requests_per_minute = 0;
  double tokens_per_minute = 0;
  /// A limiter shared with other batches or processes' shares (see rate_limiter.hpp).
  std::shared_ptr<rate_limiter> limiter{};
  /// What the batch may spend (0: no cap), in tokens (input and output) and in US dollars (the
  /// calls' outcome::cost_usd: the contract needs prices). No call starts once the spending of
  /// the finished calls, plus the expected spending of those in flight, reaches a cap
  /// (batch_progress::over_budget); the calls in flight finish, and the summary says
  /// budget_reached. A budget is this batch's: a later batch over the rest starts afresh.
  std::uint64_t max_tokens = 0;
  double max_cost_usd = 0;
  /// Total time for the batch (0: none), and/or an absolute deadline.
  std::chrono::milliseconds timeout{0};
  std::optional<std::chrono::steady_clock::time_point> deadline{};
  /// Cancels the batch (the calls in flight end cancelled and are delivered).
  std::stop_token stop{};
  /// Options of each call (its own timeout per call, an executor); the batch adds its limiter,
  /// deadline and stop token.
  call_options call{};
  /// The query id of input `index` (0-based, in the order the inputs are taken): its calls' id in
  /// observers' events, audit lines and outcome::query_id, so that a result can be joined with
  /// them. Called on the calling thread as the input starts; not set or empty: `call.query_id`,
  /// else one generated per call.
  std::function<call_id(std::size_t index)> query_id{};
  /// The trace context of input `index`'s call (call_options::trace), e.g. the span an application
  /// started for that record: the call's spans become its children. Called on the calling thread as
  /// the input starts, after query_id; not set or invalid: `call.trace`.
  std::function<trace_context(std::size_t index)> trace{};
  /// Where the calls' work runs (input checks, pre, act, rendering, reading, post, forward) when
  /// `call.executor` is not set: true, on the thread that runs the batch, between deliveries, one
  /// piece at a time (no hand-off to another thread and back for each call); false, on the
  /// runtime's workers, as run_async() does. Keep true unless hooks block for long: a hook that
  /// waits holds up the whole batch's progress (but never the engine's transfers).
  bool work_on_batch_thread = true;
  /// Called on the calling thread every `progress_every` and once at the end.
  std::function<void(const batch_progress&)> on_progress{};
  std::chrono::milliseconds progress_every{1000};
  /// The number of inputs, for progress and ETA when the source cannot tell.
  std::optional<std::size_t> total{};
  /// Called when a call's forward threw (the record has no result); default: the first such
  /// exception is rethrown once the batch is over.
  std::function<void(std::size_t index, std::exception_ptr)> on_exception{};
};

namespace detail {

inline const outcome_base& outcome_of(const outcome_base& o) noexcept { return o; }
template <class R, class O>
const outcome_base& outcome_of(const contract_result<R, O>& r) noexcept {
  return r.outcome;
}

/// The non-template part of a batch: counters, limits, progress, time.
class COVENANT_API batch_state {
 public:
  explicit batch_state(const batch_options& options, std::optional<std::size_t> total);
  ~batch_state();
  batch_state(const batch_state&) = delete;
  batch_state& operator=(const batch_state&) = delete;

  /// Whether another call may start now.
  [[nodiscard]] bool may_start(std::size_t next_to_deliver) const noexcept;
  [[nodiscard]] bool stopping() const noexcept { return stopping_; }
  /// The options of the next call.
  [[nodiscard]] const call_options& call() const noexcept { return call_; }
  void started() noexcept;
  /// The call counted by started() could not be started after all.
  void not_started() noexcept;
  /// Application code threw on the batch's thread: no call starts any more and the calls in
  /// flight are cancelled (they end cancelled and are counted).
  void cancel_all() noexcept;
  /// Counts one delivered call.
  void delivered(const outcome_base& o) noexcept;
  void source_ended() noexcept { source_done_ = true; }
  [[nodiscard]] bool finished() const noexcept { return progress_.in_flight == 0 && (source_done_ || stopping_); }
  /// Checks stop and deadline; reports progress when due. Returns when the next check is due.
  std::chrono::steady_clock::time_point tick();
  /// Final progress report; returns the summary.
  batch_progress end();
  /// Wakes the calling thread's wait (completion or stop).
  void notify();
  /// Waits (`lock` released meanwhile) until `pred` holds, a stop was asked, or `until`.
  template <class Pred>
  void wait(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point until, Pred pred) {
    while (!pred() && !(stop_seen_.load() && !stopping_)) {
      lock.unlock();
      const bool woken = sleep_until(until);
      lock.lock();
      if (!woken) return;
    }
  }
  std::mutex mutex;

 private:
  /// Sleeps until notify() (or one that came before) or `until`; false when `until` came first.
  bool sleep_until(std::chrono::steady_clock::time_point until);

  // The wake-ups of the calling thread: a counting semaphore (one post per notify), not a
  // condition variable, whose waiter takes the mutex back marked as contended and so makes a
  // system call more for every wake-up. Declared before the stop callbacks that post to it.
  struct waker;
  std::unique_ptr<waker> waker_;
  batch_options options_;
  call_options call_;
  std::stop_source cancel_;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
  std::optional<std::stop_callback<std::function<void()>>> extra_stop_;
  std::atomic<bool> stop_seen_{false};
  batch_progress progress_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point next_report_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  bool source_done_ = false;
  bool stopping_ = false;
};

/// What a batch's calls in flight share with its thread (run_batch): the counters and limits, the
/// finished calls and the calls' work queued for the thread.
template <class Finished>
struct batch_shared {
  batch_shared(const batch_options& o, std::optional<std::size_t> n) : state(o, n) {}
  batch_state state;
  std::deque<Finished> finished;            // guarded by state.mutex
  std::deque<std::function<void()>> tasks;  // guarded by state.mutex: the calls' work (work_on_batch_thread)
  /// Queues something for the batch's thread (`push` adds it, with state.mutex held) and wakes
  /// that thread if it may be waiting: only when both queues were empty (else it was woken
  /// already). The wake-up is made outside the lock (a thread woken while the lock is still held
  /// would only block on it again).
  template <class Push>
  void post(Push&& push) {
    bool wake = false;
    {
      std::lock_guard lock(state.mutex);
      wake = finished.empty() && tasks.empty();
      push();
    }
    if (wake) state.notify();
  }
};

template <class Source, class Input>
concept input_generator = std::is_invocable_v<Source&> && requires(Source& s) {
  { s() } -> std::convertible_to<std::optional<Input>>;
};

}  // namespace detail

/// Runs `contract` (typed or dynamic) over `inputs`, handing each result to `on_result(index,
/// result&&)` on this thread; returns the summary. See the top of this header.
template <class Contract, class Source, class Sink>
batch_progress run_batch(const Contract& contract, Source&& inputs, Sink&& on_result, const batch_options& options = {}) {
  using input_type = typename Contract::input_type;
  using result_type = typename Contract::call_result;
  using source_type = std::remove_cvref_t<Source>;
  constexpr bool generator = detail::input_generator<source_type, input_type>;
  static_assert(generator || std::ranges::input_range<source_type>,
                "covenant::run_batch: the inputs must be a range of the contract's input type or a callable "
                "returning std::optional<input>");

  std::optional<std::size_t> total = options.total;
  if constexpr (std::ranges::sized_range<std::remove_cvref_t<Source>>) {
    if (!total) total = static_cast<std::size_t>(std::ranges::size(inputs));
  }

  struct finished_call {
    std::size_t index;
    std::optional<result_type> result;
    std::exception_ptr error;
  };
  // What the calls in flight share with this thread, owned by them as much as by this frame: a
  // call's continuation or a piece of its work queued here never refers to this frame, whatever
  // happens to it. The frame itself returns only once no call is in flight.
  using shared_part = detail::batch_shared<finished_call>;
  const auto sh = std::make_shared<shared_part>(options, total);
  detail::batch_state& state = sh->state;

  // The source, read one input at a time.
  [[maybe_unused]] auto it = [&] {
    if constexpr (generator) return 0;
    else return std::ranges::begin(inputs);
  }();
  auto take = [&]() -> std::optional<input_type> {
    if constexpr (generator) {
      return inputs();
    } else {
      if (it == std::ranges::end(inputs)) return std::nullopt;
      std::optional<input_type> in(std::in_place, *it);
      ++it;
      return in;
    }
  };

  std::map<std::size_t, finished_call> waiting;  // input order: finished before an earlier one
  std::size_t next_index = 0;
  std::size_t next_to_deliver = 0;
  std::exception_ptr first_error;  // the first forward that threw (without on_exception)
  // The first exception of the application's code run here (the source, query_id, the sink,
  // on_progress, on_exception): no call starts after it, the calls in flight are cancelled and
  // waited for (their results are counted, not delivered), and then it is rethrown.
  std::exception_ptr app_error;
  auto guarded = [&](auto&& f) {
    if (app_error) return false;
    try {
      f();
      return true;
    } catch (...) {
      app_error = std::current_exception();
      state.cancel_all();
      return false;
    }
  };

  // Each call's options: the batch's (limiter, deadline, stop), and the batch's thread as the
  // executor unless the caller chose one.
  call_options calls = state.call();
  if (!calls.executor && options.work_on_batch_thread) {
    calls.executor = [sh](std::function<void()> work) { sh->post([&] { sh->tasks.push_back(std::move(work)); }); };
  }

  auto deliver = [&](finished_call& f) {
    if (f.result) {
      state.delivered(detail::outcome_of(*f.result));
      guarded([&] { on_result(f.index, std::move(*f.result)); });
    } else {
      outcome_base none;
      none.failed_stage = stage::forward;
      state.delivered(none);
      if (options.on_exception) guarded([&] { options.on_exception(f.index, f.error); });
      else if (!first_error) first_error = f.error;
    }
  };

  for (;;) {
    while (!state.stopping() && state.may_start(next_to_deliver)) {
      std::optional<input_type> in;
      if (!guarded([&] { in = take(); })) break;
      if (!in) {
        state.source_ended();
        break;
      }
      const std::size_t index = next_index++;
      call_options these = calls;
      if (options.query_id &&
          !guarded([&] {
            if (call_id id = options.query_id(index); !id.empty()) these.query_id = std::move(id);
          }))
        break;
      if (options.trace &&
          !guarded([&] {
            if (trace_context t = options.trace(index); t.valid()) these.trace = t;
          }))
        break;
      state.started();
      std::optional<future<result_type>> f;
      if (!guarded([&] { f.emplace(contract.run_async(std::move(*in), std::move(these))); })) {
        state.not_started();
        break;
      }
      f->then([sh, index](future<result_type> done) {
        finished_call c{index, std::nullopt, nullptr};
        try {
          c.result.emplace(done.get());
        } catch (...) {
          c.error = std::current_exception();
        }
        sh->post([&] { sh->finished.push_back(std::move(c)); });
      });
    }
    if (state.finished()) break;
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    guarded([&] { until = state.tick(); });  // progress, stop and deadline, outside the lock
    std::deque<finished_call> ready;
    std::deque<std::function<void()>> work;
    {
      std::unique_lock lock(state.mutex);
      state.wait(lock, until, [&] { return !sh->finished.empty() || !sh->tasks.empty(); });
      ready.swap(sh->finished);
      work.swap(sh->tasks);
    }
    // The calls' pieces (their results come back through `finished`).
    for (auto& w : work) {
      try {
        w();
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
      }
    }
    for (finished_call& f : ready) {
      if (options.order == batch_order::completion || app_error) {
        if (app_error) state.delivered(f.result ? detail::outcome_of(*f.result) : outcome_base{});
        else deliver(f);
        continue;
      }
      waiting.emplace(f.index, std::move(f));
      for (auto w = waiting.find(next_to_deliver); w != waiting.end(); w = waiting.find(next_to_deliver)) {
        if (app_error) state.delivered(w->second.result ? detail::outcome_of(*w->second.result) : outcome_base{});
        else deliver(w->second);
        waiting.erase(w);
        ++next_to_deliver;
      }
    }
    if (app_error) {  // (what waited for an earlier result is counted too)
      for (auto& [i, f] : waiting) state.delivered(f.result ? detail::outcome_of(*f.result) : outcome_base{});
      waiting.clear();
    }
  }
  if (app_error) std::rethrow_exception(app_error);
  batch_progress summary = state.end();
  if (first_error) std::rethrow_exception(first_error);
  return summary;
}

}  // namespace covenant
