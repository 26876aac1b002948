// covenant::runtime: one Boost.Asio I/O loop (own thread or the application's io_context) and a
// worker pool.
#include "covenant/engine/runtime.hpp"

#include "covenant/engine/future.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>
#include <exception>
#include <optional>
#include <thread>

#include "asio_runtime.hpp"
#include "log.hpp"

namespace covenant {

namespace asio = boost::asio;

struct timer::state {
  explicit state(asio::io_context& io) : wait(io) {}
  asio::steady_timer wait;
  std::function<void()> callback;      // delayed timers: touched on the strand only
  std::atomic<bool> cancelled{false};
  detail::io_strand* strand = nullptr;  // null for a timer that was due at once
};

namespace {

unsigned worker_count(unsigned requested) {
  if (requested != 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return std::clamp(hw, 1u, 4u);
}

void run_guarded(const std::function<void()>& f) noexcept {
  try {
    f();
  } catch (const std::exception& e) {
    detail::log_error("runtime: a task threw {} (ignored)", e.what());
  } catch (...) {
    detail::log_error("runtime: a task threw an unknown exception (ignored)");
  }
}

void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// The workers: a FIFO of tasks and threads that run them. An idle worker first spins for a few
/// microseconds (at most one at a time) so that work posted right after, the common case of a call
/// handed back and forth, starts without a sleep and a wake-up; then it sleeps. Boost.Asio's
/// thread_pool has no such spin, which costs two futex round trips per hand-off.
class worker_pool {
 public:
  explicit worker_pool(unsigned n) {
    threads_.reserve(n);
    for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~worker_pool() { join(); }

  void post(std::function<void()> f) {
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      if (!exited_) {
        queue_.push_back(std::move(f));
        pending_.fetch_add(1, std::memory_order_release);
        wake = sleeping_ > 0 && spinning_.load(std::memory_order_acquire) == 0;
      }
    }
    if (f) {
      run_guarded(f);  // the workers have stopped: run it here rather than lose it
      return;
    }
    if (wake) cv_.notify_one();
  }

  /// Runs what is queued, then stops the threads; what is posted later runs on its poster.
  void join() {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    std::deque<std::function<void()>> rest;
    {
      std::lock_guard lock(mutex_);
      exited_ = true;
      rest.swap(queue_);
    }
    for (auto& f : rest) run_guarded(f);
  }

 private:
  static constexpr auto spin_budget = std::chrono::microseconds(20);

  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (!queue_.empty()) {
        std::function<void()> f = std::move(queue_.front());
        queue_.pop_front();
        pending_.fetch_sub(1, std::memory_order_relaxed);
        lock.unlock();
        run_guarded(f);
        f = nullptr;
        spin();
        lock.lock();
        continue;
      }
      if (stopping_) return;
      ++sleeping_;
      cv_.wait(lock, [this] { return !queue_.empty() || stopping_; });
      --sleeping_;
    }
  }

  // After a task: wait for the next one by spinning briefly, if no other worker is spinning.
  void spin() noexcept {
    if (pending_.load(std::memory_order_acquire) > 0) return;
    int expected = 0;
    if (!spinning_.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
    const auto until = std::chrono::steady_clock::now() + spin_budget;
    for (int i = 0;; ++i) {
      if (pending_.load(std::memory_order_acquire) > 0) break;
      if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) break;
      cpu_relax();
    }
    spinning_.store(0, std::memory_order_release);
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::atomic<std::size_t> pending_{0};
  std::atomic<int> spinning_{0};
  int sleeping_ = 0;
  bool stopping_ = false;
  bool exited_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

struct runtime::impl {
  impl(asio::io_context* app_io, unsigned workers)
      : own_io(app_io == nullptr ? std::make_unique<asio::io_context>(1) : nullptr),
        io(app_io != nullptr ? app_io : own_io.get()),
        strand(asio::make_strand(*io)),
        pool(std::make_shared<worker_pool>(worker_count(workers))),
        worker_threads(worker_count(workers)) {
    if (own_io) {
      guard.emplace(io->get_executor());
      io_thread = std::thread([this] {
        for (;;) {
          try {
            io->run();
            return;
          } catch (const std::exception& e) {  // a handler threw: log, keep the loop alive
            detail::log_error("runtime: an I/O handler threw {} (ignored)", e.what());
          }
        }
      });
    }
  }

  ~impl() {
    if (own_io) {
      guard.reset();
      io->stop();
      if (io_thread.joinable()) io_thread.join();
    }
    pool->join();
  }

  std::unique_ptr<asio::io_context> own_io;
  asio::io_context* io;
  detail::io_strand strand;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  std::thread io_thread;
  std::shared_ptr<worker_pool> pool;  // shared with poster(): see there
  unsigned worker_threads;
};

void timer::cancel() const noexcept {
  if (!state_) return;
  if (state_->cancelled.exchange(true)) return;
  if (state_->strand == nullptr) return;
  try {
    asio::post(*state_->strand, [s = state_] {
      s->wait.cancel();
      s->callback = nullptr;
    });
  } catch (...) {  // posting can only fail on allocation; the flag alone keeps the callback from running
  }
}

runtime::runtime(runtime_options o) : impl_(std::make_unique<impl>(nullptr, o.workers)) {}
runtime::runtime() : runtime(runtime_options{}) {}
runtime::runtime(asio::io_context& io, runtime_options o) : impl_(std::make_unique<impl>(&io, o.workers)) {}
runtime::runtime(asio::io_context& io) : runtime(io, runtime_options{}) {}
runtime::~runtime() = default;

runtime& runtime::shared() {
  static runtime* const instance = new runtime();  // never destroyed: calls may run until exit
  return *instance;
}

void runtime::post(std::function<void()> f) { impl_->pool->post(std::move(f)); }

void runtime::post_io(std::function<void()> f) {
  asio::post(impl_->strand, [f = std::move(f)] { run_guarded(f); });
}

timer runtime::schedule(std::chrono::nanoseconds delay, std::function<void()> f) {
  auto s = std::make_shared<timer::state>(*impl_->io);
  if (delay.count() <= 0) {
    impl_->pool->post([s, f = std::move(f)] {
      if (!s->cancelled.load()) run_guarded(f);
    });
    return timer(s);
  }
  s->callback = std::move(f);
  s->strand = &impl_->strand;
  asio::post(impl_->strand, [s, delay, this] {
    if (s->cancelled.load()) {
      s->callback = nullptr;
      return;
    }
    s->wait.expires_after(delay);
    s->wait.async_wait(asio::bind_executor(impl_->strand, [s, this](const boost::system::error_code& ec) {
      std::function<void()> cb = std::move(s->callback);
      if (ec || s->cancelled.load() || !cb) return;
      impl_->pool->post([s, cb = std::move(cb)] {
        if (!s->cancelled.load()) run_guarded(cb);
      });
    }));
  });
  return timer(s);
}

asio::io_context& runtime::io_context() noexcept { return *impl_->io; }
unsigned runtime::workers() const noexcept { return impl_->worker_threads; }

namespace detail {
io_strand& runtime_access::strand(runtime& rt) noexcept { return rt.impl_->strand; }
std::function<void(std::function<void()>)> runtime_access::poster(runtime& rt) {
  return [pool = rt.impl_->pool](std::function<void()> f) { pool->post(std::move(f)); };
}
}  // namespace detail

}  // namespace covenant

namespace covenant::detail {

void spin_until_ready(const std::atomic<bool>& flag) noexcept {
  constexpr auto budget = std::chrono::microseconds(20);
  const auto until = std::chrono::steady_clock::now() + budget;
  for (int i = 0;; ++i) {
    if (flag.load(std::memory_order_acquire)) return;
    if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

}  // namespace covenant::detail
