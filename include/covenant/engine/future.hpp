// covenant/engine/future.hpp - the result of an asynchronous call: wait for it, chain on it, await it in
// a coroutine, or cancel it.
//
//     covenant::future<R> f = contract.run_async(input);
//     f.then([](covenant::future<R> done) { use(done.get()); });   // on the thread that completes it
//     R r = f.get();                                              // or block
//     R r = co_await contract.run_async(input);                   // or await in any C++20 coroutine
//     f.cancel();                                                 // the call ends in forward, cancelled
//
// Why one future type: a callback is the cheapest primitive but does not compose; a C++20
// coroutine task forces every caller into coroutines; std::future cannot chain or cancel. This
// future is all three at the price of one small shared state per call: then() is the completion
// callback, co_await suspends any coroutine (it resumes on the thread that completed the call),
// get()/wait() block, and an std::future or a Boost.Asio completion token is a few lines on top
// of then() (docs/contracts.md shows both).
//
// Unlike std::future: wait_for() returns a bool (true: the result is there), not a
// std::future_status; get() leaves the future valid (a second get() throws std::logic_error instead
// of being undefined); dropping every future of a call neither waits for it nor cancels it (the
// call runs to its end and its result is discarded); and a future is copyable, its copies sharing
// the one result, get() and continuation (docs/contracts.md, "Reference: what a call gives you").
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <utility>

#include "covenant/types/config.hpp"

namespace covenant {

template <class T>
class future;

namespace detail {

/// Spins for a few microseconds while `flag` is false (returns as soon as it is true).
COVENANT_API void spin_until_ready(const std::atomic<bool>& flag) noexcept;

template <class T>
struct future_state {
  std::mutex mutex;
  std::condition_variable done_cv;
  bool done = false;
  /// `done`, readable without the lock (a waiter spins on it briefly before sleeping).
  std::atomic<bool> ready{false};
  bool retrieved = false;
  bool continued = false;  ///< then() or co_await was used
  std::optional<T> value;
  std::exception_ptr error;
  std::function<void()> continuation;
  /// Requested by future::cancel(); the call watches its token.
  std::stop_source stop;

  template <class V>
  void set_value(V&& v) {
    std::function<void()> next;
    {
      std::lock_guard lock(mutex);
      if (done) return;
      value.emplace(std::forward<V>(v));
      done = true;
      ready.store(true, std::memory_order_release);
      next = std::move(continuation);
    }
    done_cv.notify_all();
    if (next) next();
  }

  void set_exception(std::exception_ptr e) {
    std::function<void()> next;
    {
      std::lock_guard lock(mutex);
      if (done) return;
      error = std::move(e);
      done = true;
      ready.store(true, std::memory_order_release);
      next = std::move(continuation);
    }
    done_cv.notify_all();
    if (next) next();
  }
};

/// A future and the state its producer completes.
template <class T>
std::pair<future<T>, std::shared_ptr<future_state<T>>> make_future();

}  // namespace detail

/// The result of one asynchronous call. Copies share the call's state: one result, taken once by
/// get() or co_await through any of them, and at most one continuation (then() or co_await). Every
/// member but valid(), cancel() and the default constructor throws std::logic_error on a future
/// that refers to no call (default-constructed or moved from).
template <class T>
class future {
 public:
  /// A future that refers to no call (valid() is false).
  future() = default;

  /// Whether this future refers to a call (false when default-constructed or moved from; still true
  /// after get()).
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  /// Whether the result is there (get() will not block). Never blocks; stays true after get().
  [[nodiscard]] bool ready() const {
    std::lock_guard lock(checked().mutex);
    return state_->done;
  }
  /// Blocks until the result is there (after a spin of at most about 20 microseconds: a call that
  /// ends that soon costs no sleep and wake-up). Returns at once when it already is. Does not take
  /// the result: get() still can.
  void wait() const {
    detail::spin_until_ready(checked().ready);
    std::unique_lock lock(state_->mutex);
    state_->done_cv.wait(lock, [this] { return state_->done; });
  }
  /// Blocks until the result is there or `d` has passed, and returns whether it is there: true
  /// (ready: get() will not block) or false (timed out). A bool, not a std::future_status. A zero or
  /// negative `d` does not block.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> d) const {
    std::unique_lock lock(checked().mutex);
    return state_->done_cv.wait_for(lock, d, [this] { return state_->done; });
  }
  /// Waits for the result (as wait()) and moves it out. Once per call: a second get() (through
  /// this future or a copy, or after co_await took it) throws std::logic_error. When the call
  /// ended in an exception (forward threw; a failed call is a result, not an exception) get()
  /// rethrows it, every time it is called. The future stays valid().
  T get() {
    wait();
    std::lock_guard lock(state_->mutex);
    if (state_->error) std::rethrow_exception(state_->error);
    if (state_->retrieved) throw std::logic_error("covenant::future: get() called twice");
    state_->retrieved = true;
    return std::move(*state_->value);
  }
  /// Requests the call's cancellation, like a stop request on call_options::stop. Returns at once
  /// and never throws; a second request changes nothing. The result still comes: a call that is
  /// not over ends in forward with a failed outcome at stage::cancelled as soon as the piece of its
  /// work that is running returns (a hook is never interrupted; a transfer or a wait is aborted at
  /// once). Once forward has started, or on a future that refers to no call, it does nothing: the
  /// result is not changed.
  void cancel() const noexcept {
    if (state_) state_->stop.request_stop();
  }
  /// Calls `f(future<T>)` once the result is there, with a future of the same call (call get()
  /// on it to take the result): at once, on this thread and before then() returns, if the result
  /// is already there; else on the thread that completes the call, right after forward (a worker
  /// of the contract's runtime, or where call_options::executor runs the call's work), after the
  /// threads blocked in get()/wait() were woken. One continuation per call: a second then(), or then() after co_await, throws
  /// std::logic_error. `f` must not throw (nothing can report it) and should be quick: it runs on
  /// a thread that other calls need.
  template <class F>
  void then(F&& f) {
    std::shared_ptr<detail::future_state<T>> s = state_;
    if (!s) throw std::logic_error("covenant::future: then() on an invalid future");
    {
      std::lock_guard lock(s->mutex);
      if (s->continued) throw std::logic_error("covenant::future: then() called twice");
      s->continued = true;
      if (!s->done) {
        s->continuation = [s, fn = std::forward<F>(f)]() mutable { fn(future<T>(s)); };
        return;
      }
    }
    std::forward<F>(f)(future<T>(s));
  }

  // Awaitable: `co_await f` in any coroutine gives get()'s result. The coroutine goes on at once
  // when the result is already there, else it is resumed on the thread that completes the call.
  // Awaiting counts as the continuation: co_await after then() (on an unfinished call) throws
  // std::logic_error.
  /// Whether the result is there (ready()).
  [[nodiscard]] bool await_ready() const { return ready(); }
  /// Registers the coroutine as the continuation; false (go on at once) when the result arrived.
  bool await_suspend(std::coroutine_handle<> h) {
    std::lock_guard lock(checked().mutex);
    if (state_->done) return false;
    if (state_->continued) throw std::logic_error("covenant::future: awaited after then()");
    state_->continued = true;
    state_->continuation = [h] { h.resume(); };
    return true;
  }
  /// get().
  T await_resume() { return get(); }

 private:
  friend std::pair<future<T>, std::shared_ptr<detail::future_state<T>>> detail::make_future<T>();
  explicit future(std::shared_ptr<detail::future_state<T>> s) : state_(std::move(s)) {}
  detail::future_state<T>& checked() const {
    if (!state_) throw std::logic_error("covenant::future: no call (default-constructed or moved from)");
    return *state_;
  }
  std::shared_ptr<detail::future_state<T>> state_;
};

namespace detail {

template <class T>
std::pair<future<T>, std::shared_ptr<future_state<T>>> make_future() {
  auto s = std::make_shared<future_state<T>>();
  return {future<T>(s), s};
}

}  // namespace detail

/// The producing side of a covenant::future, for application code that completes one itself (a
/// tool whose act() works asynchronously, docs/agents.md). Copies share the one result; the
/// first set_value() or set_exception() completes the future and later ones are ignored. When the
/// last copy goes away without either, the future completes with a std::runtime_error ("a
/// covenant::promise was destroyed without a value"), so that no continuation waits for ever.
template <class T>
class promise {
  // Shared by the copies of one promise: the last one to go completes a future left without value.
  struct producer {
    std::shared_ptr<detail::future_state<T>> state;
    explicit producer(std::shared_ptr<detail::future_state<T>> s) : state(std::move(s)) {}
    producer(const producer&) = delete;
    producer& operator=(const producer&) = delete;
    ~producer() {
      if (state->ready.load(std::memory_order_acquire)) return;  // (completed: nothing to make)
      try {
        state->set_exception(
            std::make_exception_ptr(std::runtime_error("a covenant::promise was destroyed without a value")));
      } catch (...) {  // (only allocation can fail here; the future then stays without a result)
      }
    }
  };

 public:
  promise() {
    auto [f, s] = detail::make_future<T>();
    future_ = std::move(f);
    producer_ = std::make_shared<producer>(std::move(s));
  }
  /// The future this promise completes (every call gives a copy sharing its state).
  [[nodiscard]] future<T> get_future() const { return future_; }
  void set_value(T value) const { producer_->state->set_value(std::move(value)); }
  void set_exception(std::exception_ptr e) const { producer_->state->set_exception(std::move(e)); }
  /// Requested when a copy of the future is cancelled (future::cancel(): a tool past its timeout).
  [[nodiscard]] std::stop_token stop_token() const noexcept { return producer_->state->stop.get_token(); }

 private:
  future<T> future_;
  std::shared_ptr<producer> producer_;
};

}  // namespace covenant
