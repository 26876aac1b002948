// covenant/future.hpp - the result of an asynchronous call: wait for it, chain on it, await it in
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

namespace covenant {

template <class T>
class future;

namespace detail {

/// Spins for a few microseconds while `flag` is false (returns as soon as it is true).
void spin_until_ready(const std::atomic<bool>& flag) noexcept;

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

template <class T>
class future {
 public:
  future() = default;

  /// Whether this future refers to a call (false when default-constructed or moved from).
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }
  /// Whether the result is there (get() will not block).
  [[nodiscard]] bool ready() const {
    std::lock_guard lock(checked().mutex);
    return state_->done;
  }
  /// Blocks until the result is there (after a short spin: a call that ends within microseconds
  /// costs no sleep and wake-up).
  void wait() const {
    detail::spin_until_ready(checked().ready);
    std::unique_lock lock(state_->mutex);
    state_->done_cv.wait(lock, [this] { return state_->done; });
  }
  /// Blocks until the result is there or `d` has passed; returns ready().
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> d) const {
    std::unique_lock lock(checked().mutex);
    return state_->done_cv.wait_for(lock, d, [this] { return state_->done; });
  }
  /// The result (once: it is moved out), after waiting for it; rethrows the call's exception.
  T get() {
    wait();
    std::lock_guard lock(state_->mutex);
    if (state_->error) std::rethrow_exception(state_->error);
    if (state_->retrieved) throw std::logic_error("covenant::future: get() called twice");
    state_->retrieved = true;
    return std::move(*state_->value);
  }
  /// Requests the call's cancellation (see call_options::stop). Returns at once; the result still
  /// comes, with the failed outcome forward produced.
  void cancel() const noexcept {
    if (state_) state_->stop.request_stop();
  }
  /// Calls `f(future)` once the result is there: at once on this thread if it already is, else on
  /// the thread that completes the call. At most one continuation per future (std::logic_error).
  /// `f` must not throw.
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

  // Awaitable: `co_await f` in any coroutine; resumes on the completing thread.
  [[nodiscard]] bool await_ready() const { return ready(); }
  bool await_suspend(std::coroutine_handle<> h) {
    std::lock_guard lock(checked().mutex);
    if (state_->done) return false;
    if (state_->continued) throw std::logic_error("covenant::future: awaited after then()");
    state_->continued = true;
    state_->continuation = [h] { h.resume(); };
    return true;
  }
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

}  // namespace covenant
