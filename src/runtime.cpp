// covenant::runtime: one Boost.Asio I/O loop (own thread or the application's io_context) and a
// worker pool.
#include "covenant/runtime.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>

#include <algorithm>
#include <atomic>
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

}  // namespace

struct runtime::impl {
  impl(asio::io_context* app_io, unsigned workers)
      : own_io(app_io == nullptr ? std::make_unique<asio::io_context>(1) : nullptr),
        io(app_io != nullptr ? app_io : own_io.get()),
        strand(asio::make_strand(*io)),
        pool(worker_count(workers)),
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
    pool.join();
  }

  std::unique_ptr<asio::io_context> own_io;
  asio::io_context* io;
  detail::io_strand strand;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> guard;
  std::thread io_thread;
  asio::thread_pool pool;
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

runtime::runtime(options o) : impl_(std::make_unique<impl>(nullptr, o.workers)) {}
runtime::runtime() : runtime(options{}) {}
runtime::runtime(asio::io_context& io, options o) : impl_(std::make_unique<impl>(&io, o.workers)) {}
runtime::runtime(asio::io_context& io) : runtime(io, options{}) {}
runtime::~runtime() = default;

runtime& runtime::shared() {
  static runtime* const instance = new runtime();  // never destroyed: calls may run until exit
  return *instance;
}

void runtime::post(std::function<void()> f) {
  asio::post(impl_->pool, [f = std::move(f)] { run_guarded(f); });
}

void runtime::post_io(std::function<void()> f) {
  asio::post(impl_->strand, [f = std::move(f)] { run_guarded(f); });
}

timer runtime::schedule(std::chrono::nanoseconds delay, std::function<void()> f) {
  auto s = std::make_shared<timer::state>(*impl_->io);
  if (delay.count() <= 0) {
    asio::post(impl_->pool, [s, f = std::move(f)] {
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
      asio::post(impl_->pool, [s, cb = std::move(cb)] {
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
}  // namespace detail

}  // namespace covenant
