// covenant/engine/runtime.hpp - the threads asynchronous calls run on.
//
// A runtime is one I/O loop and a small worker pool:
//   * the I/O loop (a Boost.Asio io_context run by one thread of the runtime, or by the
//     application when it supplies its own io_context) drives the network transfers of the
//     engines that use it (the HTTP engine's libcurl multi handle) and every timer: remedy waits,
//     transport backoff, deadlines;
//   * the workers (default: as many as the machine has cores, at most 4) run what a call
//     computes: input validation, the hooks, reading and validating replies, partial results,
//     forward and the completion of the call's future.
// Nothing here starts a thread per call. Most programs never name a runtime: engines and
// contracts use runtime::shared(), created on first use and never destroyed (its threads end
// with the process).
//
//     covenant::runtime rt{{.workers = 2}};                        // or your own loop:
//     boost::asio::io_context io;  covenant::runtime on_mine{io};  // you run io
//     covenant::http_engine model{{.base_url = url, .runtime = &rt}};
//     covenant::contract<Summarize> summarize{model, {.runtime = &rt}};
//
// A runtime must outlive the engines and contracts that use it and every call they started.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

#include "covenant/types/config.hpp"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace covenant {

class runtime;
namespace detail {
struct runtime_access;
}

/// A scheduled callback; cancel() keeps it from running if it has not started. Copyable: every
/// copy refers to the same callback. A default-constructed timer refers to none.
class COVENANT_API timer {
 public:
  timer() = default;
  /// Cancels the callback unless it already started (safe from any thread, idempotent).
  void cancel() const noexcept;
  explicit operator bool() const noexcept { return state_ != nullptr; }

  struct state;

 private:
  friend class runtime;
  explicit timer(std::shared_ptr<state> s) : state_(std::move(s)) {}
  std::shared_ptr<state> state_;
};

struct runtime_options {
  /// Worker threads; 0: std::thread::hardware_concurrency(), between 1 and 4.
  unsigned workers = 0;
};

class COVENANT_API runtime {
 public:
  /// A runtime with its own I/O thread and `o.workers` worker threads.
  explicit runtime(runtime_options o);
  runtime();
  /// A runtime whose I/O loop is the application's `io` (the application runs it; covenant only
  /// posts work and timers to it), with its own workers.
  runtime(boost::asio::io_context& io, runtime_options o);
  explicit runtime(boost::asio::io_context& io);
  /// Stops the workers and the I/O thread (if it owns one) after the work already queued ran;
  /// pending timers are cancelled. Calls still in flight must have ended before.
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  /// The process-wide runtime, created on first use and never destroyed.
  static runtime& shared();

  /// Runs `f` on a worker thread. `f` must not throw (an exception is logged and dropped).
  void post(std::function<void()> f);
  /// Runs `f` on the I/O loop's thread (for engines; keep it short).
  void post_io(std::function<void()> f);
  /// Runs `f` on a worker after `delay` (at once when delay <= 0), unless the returned timer is
  /// cancelled first. The wait itself is a timer on the I/O loop: no thread sleeps.
  timer schedule(std::chrono::nanoseconds delay, std::function<void()> f);

  /// The I/O loop (for engines built on Boost.Asio).
  [[nodiscard]] boost::asio::io_context& io_context() noexcept;
  [[nodiscard]] unsigned workers() const noexcept;

 private:
  friend struct detail::runtime_access;
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace covenant
