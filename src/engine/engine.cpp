// The engine base class: liveness of engines with calls in flight, complete() over start() and
// start() over complete() (on a bounded pool of blocking threads).
#include "covenant/engine/engine.hpp"

#include <atomic>
#include <cstdio>
#include <exception>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>

#include "log.hpp"

namespace covenant {

namespace detail {

struct engine_anchor {
  std::mutex mutex;
  std::condition_variable idle;
  bool open = true;
  std::size_t inside = 0;
};

engine_lease::engine_lease(const std::shared_ptr<engine_anchor>& anchor) noexcept {
  if (!anchor) return;
  std::lock_guard lock(anchor->mutex);
  if (!anchor->open) return;
  ++anchor->inside;
  anchor_ = anchor.get();
}

engine_lease::~engine_lease() {
  if (anchor_ == nullptr) return;
  std::lock_guard lock(anchor_->mutex);
  if (--anchor_->inside == 0) anchor_->idle.notify_all();
}

namespace {

/// Threads for engines that only block (complete() without start()): created when every thread
/// is busy, up to a bound (then work queues), ending after a while without work. Never
/// destroyed, like runtime::shared().
class blocking_pool {
 public:
  static blocking_pool& instance() {
    static blocking_pool* const pool = new blocking_pool();
    return *pool;
  }

  void run(std::function<void()> job) {
    std::unique_lock lock(mutex_);
    queue_.push_back(std::move(job));
    if (idle_ > 0) {
      wake_.notify_one();
      return;
    }
    if (threads_ < max_threads) {
      ++threads_;
      lock.unlock();
      std::thread([this] { loop(); }).detach();
    }
  }

 private:
  static constexpr std::size_t max_threads = 256;
  static constexpr auto idle_timeout = std::chrono::seconds(30);

  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (queue_.empty()) {
        ++idle_;
        const bool woke = wake_.wait_for(lock, idle_timeout, [this] { return !queue_.empty(); });
        --idle_;
        if (!woke) {
          --threads_;
          return;
        }
      }
      std::function<void()> job = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      job();
      job = nullptr;
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;
  std::size_t threads_ = 0;
  std::size_t idle_ = 0;
};

thread_local int default_complete_depth = 0;

/// A copy of `e` that shares nothing with it. A copied std::runtime_error shares its message by a
/// reference count kept inside libstdc++; the error handed over between the engine's thread and the
/// waiting one is copied this way, so that no message is shared between threads at all.
engine_error detached(const engine_error& e) {
  engine_error copy = e.cancelled() ? engine_error::cancellation(std::string(e.what()))
                                    : engine_error(std::string(e.what()), e.status(), e.retryable());
  copy.set_queued(e.queued());
  copy.set_retries(e.retries());
  return copy;
}

/// Waits for one asynchronous reply (complete() over start()).
class waiting_receiver final : public reply_receiver {
 public:
  void on_reply(chat_response response) noexcept override { set(std::move(response)); }
  void on_error(const engine_error& error) noexcept override {
    try {
      set(detached(error));
    } catch (...) {
      set(engine_error("engine: out of memory storing the error"));
    }
  }

  chat_response wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return result_.has_value(); });
    if (auto* e = std::get_if<engine_error>(&*result_)) throw detached(*e);
    return std::move(std::get<chat_response>(*result_));
  }

 private:
  template <class V>
  void set(V&& v) noexcept {
    std::lock_guard lock(mutex_);
    if (result_) return;
    try {
      result_.emplace(std::forward<V>(v));
    } catch (...) {
      result_.emplace(engine_error("engine: out of memory storing the reply"));
    }
    done_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable done_;
  std::optional<std::variant<chat_response, engine_error>> result_;
};

/// start() over complete(): the result of the blocking call, or the cancellation if it came first.
struct blocking_call {
  std::shared_ptr<reply_receiver> receiver;
  std::atomic<bool> reported{false};
  bool stream = false;

  bool claim() noexcept { return !reported.exchange(true); }
};

}  // namespace

}  // namespace detail

engine::engine() : anchor_(std::make_shared<detail::engine_anchor>()) {}

engine::~engine() {
  std::unique_lock lock(anchor_->mutex);
  if (anchor_->open && anchor_->inside > 0) {
    // A derived engine that did not close() first: its members are gone while calls run in it.
    std::fprintf(stderr,
                 "covenant::engine: destroyed while %zu call(s) were inside its start() or complete(); the "
                 "destructor of a class derived from covenant::engine must call close() first "
                 "(covenant/engine/engine.hpp)\n",
                 anchor_->inside);
    std::terminate();
  }
  anchor_->open = false;
  anchor_->idle.wait(lock, [this] { return anchor_->inside == 0; });
}

void engine::close() noexcept {
  if (!anchor_) return;
  std::unique_lock lock(anchor_->mutex);
  anchor_->open = false;
  anchor_->idle.wait(lock, [this] { return anchor_->inside == 0; });
}

void engine::refuse_calls() noexcept {
  if (!anchor_) return;
  std::lock_guard lock(anchor_->mutex);
  anchor_->open = false;
}

chat_response engine::complete(const chat_request& request) {
  ++detail::default_complete_depth;
  struct depth_guard {
    ~depth_guard() { --detail::default_complete_depth; }
  } guard;
  auto receiver = std::make_shared<detail::waiting_receiver>();
  start(request, receiver, std::stop_token{});
  return receiver->wait();
}

void engine::start(const chat_request& request, std::shared_ptr<reply_receiver> receiver, std::stop_token stop) {
  if (detail::default_complete_depth > 0) {
    receiver->on_error(engine_error("engine: the engine implements neither complete() nor start()"));
    return;
  }
  auto call = std::make_shared<detail::blocking_call>();
  call->receiver = std::move(receiver);
  call->stream = request.stream;
  if (stop.stop_requested()) {
    if (call->claim()) call->receiver->on_error(engine_error::cancellation());
    return;
  }
  auto lease_anchor = anchor_;
  detail::blocking_pool::instance().run([this, call, request, stop, lease_anchor]() mutable {
    // A stop request reports the cancellation at once; the blocking call's late result is dropped.
    std::stop_callback on_stop(stop, [&call] {
      if (call->claim()) call->receiver->on_error(engine_error::cancellation());
    });
    if (stop.stop_requested()) return;
    detail::engine_lease lease(lease_anchor);
    if (!lease) {
      if (call->claim()) call->receiver->on_error(engine_error::cancellation("the engine was destroyed"));
      return;
    }
    try {
      chat_response r = complete(request);
      if (!call->claim()) return;
      if (call->stream && !r.text.empty()) call->receiver->on_text(r.text);
      call->receiver->on_reply(std::move(r));
    } catch (const engine_error& e) {
      if (call->claim()) call->receiver->on_error(e);
    } catch (const std::exception& e) {
      if (call->claim()) call->receiver->on_error(engine_error(e.what()));
    } catch (...) {
      if (call->claim()) call->receiver->on_error(engine_error("engine: unknown exception"));
    }
  });
}

}  // namespace covenant
