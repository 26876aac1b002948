// The one driver of a contract call, blocking or asynchronous: the call's steps run one event at a
// time (engine replies, timers, the limiter's turn, tools, stops, the deadline) on an executor.
#include "covenant/contract/detail/call.hpp"

#include <boost/core/demangle.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "covenant/engine/rate_limiter.hpp"
#include "covenant/engine/runtime.hpp"
#include "engine/asio_runtime.hpp"
#include "engine/log.hpp"

namespace covenant::detail {

namespace {

// What a call's outcome holds before its first step: its id, its trace context, and with prices a
// cost of 0. The observers hear of the call first here (on_start): a tracing one may give the call a
// span of its own.
void begin_outcome(call_steps& steps, const contract_core& core, const call_options* options) {
  outcome_base& oc = *steps.oc;
  if (options != nullptr && !options->query_id.empty()) oc.query_id = options->query_id.view();
  else if (oc.query_id.empty()) oc.query_id = make_query_id();
  if (core.options.prices) oc.cost_usd = 0.0;
  const trace_context* parent = options != nullptr ? options->trace.get() : nullptr;
  steps.own_trace = false;
  if (!core.options.observers.empty()) {
    const call_info info{core.name, oc.query_id, core.schema_version, parent, core.server ? &*core.server : nullptr};
    const start_event e{info, parent};
    notify(core, [&](observer& o) {
      std::optional<trace_context> own = o.on_start(e);
      if (own && own->valid() && !steps.own_trace) {
        oc.trace = std::move(*own);
        steps.own_trace = true;
      }
    });
  }
  if (!steps.own_trace && parent != nullptr) oc.trace = *parent;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The call driver

namespace {

/// Records an exception that escaped a step as an issue of the stage that was running.
void record_step_exception(call_steps& steps) {
  steps.discard();
  std::string type = "unknown exception";
  std::string what;
  try {
    throw;
  } catch (const std::exception& e) {
    type = boost::core::demangle(typeid(e).name());
    what = e.what();
  } catch (...) {
  }
  steps.oc->issues.push_back(hook_exception_issue(to_string(steps.at), type, what));
}

}  // namespace

namespace {

using executor_fn = std::function<void(std::function<void()>)>;

/// A first-in, first-out queue that allocates nothing before its first push and then reuses its
/// storage. std::deque allocates at construction, which every blocking call would pay for a queue
/// it mostly never uses.
template <class T>
class fifo {
 public:
  [[nodiscard]] bool empty() const noexcept { return head_ == items_.size(); }
  T& back() { return items_.back(); }
  void push_back(T v) { items_.push_back(std::move(v)); }
  void push_front(T v) { items_.insert(items_.begin() + static_cast<std::ptrdiff_t>(head_), std::move(v)); }
  T take_front() {
    T v = std::move(items_[head_]);
    if (++head_ == items_.size()) {
      clear();
    } else if (head_ >= 32 && head_ * 2 >= items_.size()) {  // taken items never pile up
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    return v;
  }
  void clear() noexcept {
    items_.clear();
    head_ = 0;
  }

 private:
  std::vector<T> items_;
  std::size_t head_ = 0;  // the first item not taken yet
};

/// Work of one blocking call, run by the calling thread while it waits for the call's end.
class calling_thread_queue {
 public:
  void post(std::function<void()> f) {
    {
      std::lock_guard lock(mutex_);
      work_.push_back(std::move(f));
    }
    ready_.notify_one();
  }
  void done() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    ready_.notify_one();
  }
  /// Runs the queued work until done() was called and nothing is left.
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ready_.wait(lock, [this] { return done_ || !work_.empty(); });
      if (work_.empty()) return;
      std::function<void()> f = work_.take_front();
      lock.unlock();
      f();
      lock.lock();
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  fifo<std::function<void()>> work_;
  bool done_ = false;
};

/// The one driver of a contract call, blocking or asynchronous: it runs the call's steps as events
/// arrive (the engine's text, reply or error; timers; the rate limiter's turn; the tools of an agent
/// step; stop requests and the deadline), one at a time, on an executor. An asynchronous call's
/// executor is the contract's runtime (or call_options::executor); a blocking call's is the calling
/// thread, which runs the call's work until it ends (run_here()). The call owns what it touches:
/// the driver holds the call's steps and the contract's core (and so the Expression and its tools)
/// until the last event, and owns itself until finish().
class call_driver final : public std::enable_shared_from_this<call_driver> {
 public:
  /// Asynchronous: the work runs on `exec`.
  call_driver(std::shared_ptr<call_steps> steps, std::shared_ptr<const contract_core> core, call_options options,
              std::stop_token cancel, bool stream, executor_fn exec)
      : steps_(std::move(steps)),
        core_(std::move(core)),
        options_(std::move(options)),
        cancel_(std::move(cancel)),
        stream_(stream),
        exec_(std::move(exec)),
        rt_(core_->options.runtime != nullptr ? core_->options.runtime : &runtime::shared()) {}

  /// Blocking: the work runs on the thread that calls run_here(). When nothing can stop the call
  /// (no stop token, deadline or limiter), each attempt is the engine's own blocking complete() on
  /// this thread: no hand-off to the engine's threads and back.
  call_driver(std::shared_ptr<call_steps> steps, std::shared_ptr<const contract_core> core, call_options options)
      : steps_(std::move(steps)),
        core_(std::move(core)),
        options_(std::move(options)),
        stream_(false),
        rt_(core_->options.runtime != nullptr ? core_->options.runtime : &runtime::shared()),
        inline_engine_(!options_.stoppable() && !options_.limiter) {
    here_.emplace();
    exec_ = [q = &*here_](std::function<void()> f) { q->post(std::move(f)); };
  }

  /// Blocking use: runs the call on this thread to its end.
  void run_here() {
    begin();
    here_->run();
  }

  /// Queues the first step, then watches the stop tokens and the deadline.
  void begin() {
    self_ = shared_from_this();  // the call owns itself until finish(): timers and stops only hold weak pointers
    deadline_ = options_.deadline_from(std::chrono::steady_clock::now());
    {
      // Events raised while setting up (a stop already requested) wait in the queue: nothing runs
      // the call before this function is done with its members.
      std::lock_guard lock(queue_mutex_);
      draining_ = true;
    }
    std::weak_ptr<call_driver> self = weak_from_this();
    if (options_.stop.stop_possible()) user_stop_.emplace(options_.stop, stop_forward{self});
    if (cancel_.stop_possible()) future_stop_.emplace(cancel_, stop_forward{self});
    if (deadline_) {
      const auto left = *deadline_ - std::chrono::steady_clock::now();
      deadline_timer_ = rt_->schedule(std::chrono::duration_cast<std::chrono::nanoseconds>(left), [self] {
        if (auto d = self.lock()) d->enqueue(event{event::kind::stop, 0, {}, {}, {}, stage::deadline});
      });
    }
    if (here_) {
      // This thread runs a blocking call's work: the first step now, then what came meanwhile.
      event first{event::kind::begin};
      run(first);
      return drain();
    }
    {
      std::lock_guard lock(queue_mutex_);
      queue_.push_front(event{event::kind::begin});
    }
    exec_([d = shared_from_this()] { d->drain(); });
  }

  struct event {
    enum class kind : std::uint8_t { begin, text, reply, error, waited, stop, granted, tool_text, tools_done } k;
    std::uint64_t id = 0;
    std::string text{};
    std::optional<chat_response> reply{};
    /// kind::error: the engine's failure, as plain values (an exception object is not handed
    /// between threads: its message buffer is shared by reference count).
    struct failure {
      std::string what;
      int status = 0;
      bool cancelled = false;
      std::chrono::nanoseconds queued{0};
      std::vector<transport_retry> retries{};
    };
    std::optional<failure> error{};
    stage why = stage::none;
    /// kind::tool_text: which call of the reply, and its name (with its first piece).
    std::size_t index = 0;
    std::string name{};
  };

  void enqueue(event e) noexcept {
    try {
      std::lock_guard lock(queue_mutex_);
      if (closed_) return;
      if (e.k == event::kind::text && !queue_.empty() && queue_.back().k == event::kind::text &&
          queue_.back().id == e.id) {
        queue_.back().text += e.text;  // coalesce deltas the worker has not reached yet
        return;
      }
      queue_.push_back(std::move(e));
      if (draining_) return;
      draining_ = true;
    } catch (...) {
      log_error("contract: out of memory queueing a call's event (dropped)");
      return;
    }
    try {
      exec_([self = shared_from_this()] { self->drain(); });
    } catch (...) {
      log_error("contract: the executor refused a call's work");
      std::lock_guard lock(queue_mutex_);
      draining_ = false;
    }
  }

 private:
  struct stop_forward {
    std::weak_ptr<call_driver> driver;
    void operator()() const noexcept {
      if (auto d = driver.lock()) d->enqueue(event{event::kind::stop, 0, {}, {}, {}, stage::cancelled});
    }
  };

  /// Receives one attempt's reply from the engine.
  class receiver final : public reply_receiver {
   public:
    receiver(std::shared_ptr<call_driver> d, std::uint64_t id) : driver_(std::move(d)), id_(id) {}
    void on_text(std::string_view delta) noexcept override {
      try {
        driver_->enqueue(event{event::kind::text, id_, std::string(delta)});
      } catch (...) {
        log_error("contract: out of memory queueing streamed text (dropped)");
      }
    }
    void on_tool_text(std::size_t index, std::string_view name, std::string_view delta) noexcept override {
      try {
        event e{event::kind::tool_text, id_, std::string(delta)};
        e.index = index;
        e.name = std::string(name);
        driver_->enqueue(std::move(e));
      } catch (...) {
        log_error("contract: out of memory queueing streamed tool arguments (dropped)");
      }
    }
    void on_reply(chat_response response) noexcept override {
      driver_->enqueue(event{event::kind::reply, id_, {}, std::move(response)});
    }
    void on_error(const engine_error& error) noexcept override {
      try {
        driver_->enqueue(event{event::kind::error, id_, {}, {},
                               event::failure{std::string(error.what()), error.status(), error.cancelled(),
                                              error.queued(), error.retries()}});
      } catch (...) {
        log_error("contract: out of memory queueing an engine error (dropped)");
      }
    }
    [[nodiscard]] std::size_t text_kept() const noexcept override { return kept_.load(std::memory_order_acquire); }
    /// The attempt stops early, keeping the first `n` bytes of its text (before the stop request).
    void keep(std::size_t n) noexcept { kept_.store(n, std::memory_order_release); }

   private:
    std::shared_ptr<call_driver> driver_;
    std::uint64_t id_;
    std::atomic<std::size_t> kept_{std::string_view::npos};
  };

  enum class state : std::uint8_t { idle, limited, attempt, waiting, tools, done };

  void drain() noexcept {
    for (;;) {
      event e{event::kind::begin};
      {
        std::lock_guard lock(queue_mutex_);
        if (queue_.empty() || closed_) {
          draining_ = false;
          return;
        }
        e = queue_.take_front();
      }
      run(e);
    }
  }

  /// Runs one event (with the queue marked as being drained by this thread).
  void run(event& e) noexcept {
    try {
      process(e);
    } catch (...) {
      // A step threw outside the guarded calls (a check of the application's while reading, out
      // of memory): the exception is an issue of the stage running, and the call ends there.
      if (state_ != state::done) {
        try {
          record_step_exception(*steps_);
        } catch (...) {
        }
        finish(steps_->at);
      }
    }
  }

  [[nodiscard]] std::optional<stage> stop_now() const {
    if (options_.stop.stop_requested() || cancel_.stop_requested()) return stage::cancelled;
    if (deadline_ && std::chrono::steady_clock::now() >= *deadline_) return stage::deadline;
    return std::nullopt;
  }

  void process(event& e) {
    if (state_ == state::done) return;
    switch (e.k) {
      case event::kind::begin: return run_steps();
      case event::kind::stop: return stop(e.why, {});
      case event::kind::waited:
        if (state_ != state::waiting || e.id != wait_id_) return;
        state_ = state::idle;
        phase_->after_wait();
        return send();
      case event::kind::granted:
        if (state_ != state::limited || e.id != limit_id_) return;
        state_ = state::idle;
        phase_->waited_for_turn(core_->now() - limited_since_);
        return transmit();
      case event::kind::text: {
        if (state_ != state::attempt || e.id != attempt_id_) return;
        text_so_far_ += e.text;
        phase_->on_stream_piece(e.text);
        issue_list violations;
        std::size_t kept = text_so_far_.size();
        if (!phase_->reader().stream_text(e.text, violations, kept)) return;
        if (!core_->options.early_stop || violations.empty()) return;
        // The rejected reply is the text up to the byte that decided the stop, whatever else had
        // arrived by now: the next request is a function of the reply, not of its timing.
        text_so_far_.resize(std::min(kept, text_so_far_.size()));
        if (auto r = receiver_.lock()) r->keep(text_so_far_.size());
        attempt_stop_.request_stop();
        ++attempt_id_;  // whatever the engine still sends for this attempt is ignored
        state_ = state::idle;
        return handle(phase_->on_early_stop(std::move(text_so_far_), std::move(violations)));
      }
      case event::kind::tool_text:
        if (state_ != state::attempt || e.id != attempt_id_) return;
        return phase_->reader().stream_tool_text(e.index, e.name, e.text);
      case event::kind::tools_done: {
        if (state_ != state::tools || e.id != batch_id_) return;
        state_ = state::idle;
        std::vector<tool_run> runs = batch_->take();
        batch_.reset();
        return handle(phase_->tools_done(std::move(runs)));
      }
      case event::kind::reply:
        if (state_ != state::attempt || e.id != attempt_id_) return;
        state_ = state::idle;
        if (options_.limiter)
          options_.limiter->settle(estimate_, e.reply->usage.total(), e.reply->usage.output_tokens);
        return handle(read(std::move(*e.reply)));
      case event::kind::error:
        if (state_ != state::attempt || e.id != attempt_id_) return;
        if (e.error->cancelled) {
          if (auto why = stop_now()) return stop(*why, {});
          return stop(stage::cancelled, e.error->what);  // the engine stopped on its own (destroyed)
        }
        state_ = state::idle;
        return handle(phase_->on_engine_error(e.error->what, e.error->status, e.error->queued,
                                              std::move(e.error->retries)));
    }
  }

  // Input checks, the input-repair phase or the output request.
  void run_steps() {
    if (auto why = stop_now()) return stop(*why, {});
    stage failed = stage::none;
    std::vector<message> messages;
    try {
      failed = steps_->check_input(messages);
    } catch (...) {
      record_step_exception(*steps_);
      return finish(steps_->at);
    }
    if (failed == stage::pre_remedy) {
      steps_->at = stage::pre_remedy;
      phase_.emplace(*core_, attempt_kind::input_repair, true, std::move(messages), *steps_->oc, steps_->times,
                     steps_->input_reader(), core_->now());
      phase_->own_trace(steps_->own_trace);
      return send();
    }
    if (failed != stage::none) return finish(failed);
    prepare_output();
  }

  void prepare_output() {
    if (auto why = stop_now()) return stop(*why, {});
    std::vector<message> messages;
    stage failed = stage::none;
    try {
      failed = steps_->prepare(messages);
    } catch (...) {
      record_step_exception(*steps_);
      return finish(steps_->at);
    }
    if (failed != stage::none) return finish(failed);
    steps_->at = stage::engine;
    phase_.emplace(*core_, attempt_kind::output, core_->options.post_remedy, std::move(messages), *steps_->oc,
                   steps_->times, steps_->output_reader(), steps_->mark);
    phase_->own_trace(steps_->own_trace);
    phase_->request().stream = stream_;
    send();
  }

  // The next attempt: first its turn under the rate limiter, if any.
  void send() {
    if (auto why = stop_now()) return stop(*why, {});
    if (!options_.limiter) return transmit();
    phase_->request().limiter = options_.limiter;
    estimate_ = options_.limiter->estimate(phase_->request());
    state_ = state::limited;
    limited_since_ = core_->now();
    const std::uint64_t id = ++limit_id_;
    std::weak_ptr<call_driver> self = weak_from_this();
    limit_ticket_ = options_.limiter->acquire(estimate_, [self, id] {
      if (auto d = self.lock()) d->enqueue(event{event::kind::granted, id});
    });
  }

  void transmit() {
    if (auto why = stop_now()) return stop(*why, {});
    if (inline_engine_) return complete_here();
    engine_lease lease(core_->anchor);
    if (!lease) return stop(stage::cancelled, "the engine was destroyed");
    phase_->begin_attempt();
    text_so_far_.clear();
    if (stream_ && phase_->kind() == attempt_kind::output)
      phase_->reader().stream_start(phase_->number(), phase_->rejected());
    attempt_stop_ = std::stop_source();
    const std::uint64_t id = ++attempt_id_;
    state_ = state::attempt;
    auto to = std::make_shared<receiver>(shared_from_this(), id);
    receiver_ = to;
    try {
      core_->model->start(phase_->request(), std::move(to), attempt_stop_.get_token());
    } catch (const std::exception& e) {
      state_ = state::idle;
      return handle(phase_->on_engine_error(e.what()));
    } catch (...) {
      state_ = state::idle;
      return handle(phase_->on_engine_error("unknown exception"));
    }
  }

  /// The reply of the current attempt, read and checked. What throws there is a check of the
  /// application's (a predicate, a tool check) or the reader running out of memory: it is recorded
  /// as an issue of stage validate (drain() ends the call).
  remedy_phase::next read(chat_response&& reply) {
    try {
      return phase_->on_reply(std::move(reply));
    } catch (...) {
      steps_->at = stage::validate;
      throw;
    }
  }

  /// A blocking call nothing can stop: the attempt is the engine's complete() on this thread.
  void complete_here() {
    std::optional<chat_response> reply;
    event::failure failed;
    {
      engine_lease lease(core_->anchor);  // (the engine may be destroyed once it has ended)
      if (!lease) return stop(stage::cancelled, "the engine was destroyed");
      phase_->begin_attempt();
      try {
        reply.emplace(core_->model->complete(phase_->request()));
      } catch (const engine_error& e) {
        failed = event::failure{e.what(), e.status(), e.cancelled(), e.queued(), e.retries()};
      } catch (const std::exception& e) {
        failed.what = e.what();
      } catch (...) {
        failed.what = "unknown exception";
      }
    }
    if (reply) return handle(read(std::move(*reply)));
    if (failed.cancelled) return stop(stage::cancelled, failed.what);  // (the engine was destroyed meanwhile)
    return handle(phase_->on_engine_error(failed.what, failed.status, failed.queued, std::move(failed.retries)));
  }

  void handle(remedy_phase::next n) {
    switch (n) {
      case remedy_phase::next::accepted:
        if (phase_->kind() == attempt_kind::input_repair) {
          steps_->mark = core_->now();
          phase_.reset();
          return prepare_output();
        }
        return finish(stage::none);
      case remedy_phase::next::failed: return finish(steps_->oc->failed_stage);
      case remedy_phase::next::again: return send();
      case remedy_phase::next::tools: {
        state_ = state::tools;
        const std::uint64_t id = ++batch_id_;
        std::weak_ptr<call_driver> self = weak_from_this();
        batch_ = std::make_shared<tool_batch>(core_, std::move(phase_->pending_tools()), phase_->pending_runners(),
                                              [self, id] {
                                                if (auto d = self.lock()) d->enqueue(event{event::kind::tools_done, id});
                                              });
        batch_->start(*rt_);
        return;
      }
      case remedy_phase::next::wait: {
        const std::chrono::nanoseconds d = phase_->wait();
        if (core_->options.sleep) {
          if (d.count() > 0) core_->options.sleep(d);
          phase_->after_wait();
          return send();
        }
        state_ = state::waiting;
        const std::uint64_t id = ++wait_id_;
        std::weak_ptr<call_driver> self = weak_from_this();
        wait_timer_ = rt_->schedule(d, [self, id] {
          if (auto dr = self.lock()) dr->enqueue(event{event::kind::waited, id});
        });
        return;
      }
    }
  }

  void stop(stage why, std::string_view reason) {
    std::string because(reason);
    if (because.empty() && why == stage::deadline && deadline_) because = "the call's deadline passed";
    if (because.empty() && why == stage::cancelled) because = "the call was cancelled";
    switch (state_) {
      case state::attempt:
        attempt_stop_.request_stop();
        ++attempt_id_;
        phase_->on_stopped(why, because, std::move(text_so_far_), true);
        break;
      case state::waiting:
        wait_timer_.cancel();
        phase_->on_stopped(why, because, {}, false);
        break;
      case state::tools:
        ++batch_id_;
        phase_->tools_stopped(why, because, batch_->stop(stopped_issue(why, because)));
        batch_.reset();
        break;
      case state::limited:
        options_.limiter->cancel(limit_ticket_);
        ++limit_id_;
        phase_->on_stopped(why, because, {}, false);
        break;
      case state::idle:
        if (phase_) {
          phase_->on_stopped(why, because, {}, false);
        } else {
          steps_->oc->issues = {stopped_issue(why, because)};
          steps_->oc->failed_stage = why;
        }
        break;
      case state::done: return;
    }
    finish(why);
  }

  void finish(stage failed) {
    if (state_ == state::done) return;
    state_ = state::done;
    deadline_timer_.cancel();
    wait_timer_.cancel();
    user_stop_.reset();
    future_stop_.reset();
    if (batch_) {  // (tools still running: their late results are dropped, pending acts cancelled)
      (void)batch_->stop(stopped_issue(stage::cancelled, "the call ended"));
      batch_.reset();
    }
    phase_.reset();
    {
      std::lock_guard lock(queue_mutex_);
      closed_ = true;
      queue_.clear();
    }
    try {
      steps_->finish(failed);  // forward, the result and the call's record (never throws but for memory)
    } catch (...) {
      log_error("contract {}: the call's result could not be made (out of memory)", core_->name);
    }
    if (here_) here_->done();
    // The drain running this still holds a reference; the engine may too, until its last call.
    self_.reset();
  }

  std::shared_ptr<call_steps> steps_;
  std::shared_ptr<const contract_core> core_;
  call_options options_;
  std::stop_token cancel_;
  bool stream_;
  executor_fn exec_;
  runtime* rt_;
  std::optional<time_point> deadline_;

  std::optional<std::stop_callback<stop_forward>> user_stop_;
  std::optional<std::stop_callback<stop_forward>> future_stop_;
  timer deadline_timer_;
  timer wait_timer_;

  std::mutex queue_mutex_;
  fifo<event> queue_;
  bool draining_ = false;
  bool closed_ = false;

  // Touched only by the draining thread.
  state state_ = state::idle;
  std::optional<remedy_phase> phase_;
  std::stop_source attempt_stop_;
  std::weak_ptr<receiver> receiver_;  // the current attempt's (the engine owns it)
  std::uint64_t attempt_id_ = 0;
  std::uint64_t wait_id_ = 0;
  std::uint64_t limit_id_ = 0;
  std::uint64_t limit_ticket_ = 0;
  std::shared_ptr<tool_batch> batch_;  // the agent step whose tools run now
  std::uint64_t batch_id_ = 0;
  std::uint64_t estimate_ = 0;
  time_point limited_since_{};  // when the current attempt asked the limiter for its turn
  std::string text_so_far_;
  std::shared_ptr<call_driver> self_;

  // Blocking use: the calling thread's queue, and whether each attempt is the engine's complete().
  std::optional<calling_thread_queue> here_;
  bool inline_engine_ = false;
};

}  // namespace

void run_blocking(std::shared_ptr<call_steps> steps, std::shared_ptr<const contract_core> core,
                  const call_options* options) {
  begin_outcome(*steps, *core, options);
  auto driver = std::make_shared<call_driver>(std::move(steps), std::move(core),
                                              options != nullptr ? *options : call_options{});
  driver->run_here();
}

void start_async(std::shared_ptr<call_steps> steps, std::shared_ptr<const contract_core> core, call_options options,
                 std::stop_token cancel, bool stream) {
  begin_outcome(*steps, *core, &options);
  executor_fn exec = options.executor;
  if (!exec) {
    runtime* rt = core->options.runtime != nullptr ? core->options.runtime : &runtime::shared();
    exec = runtime_access::poster(*rt);
  }
  auto driver = std::make_shared<call_driver>(std::move(steps), std::move(core), std::move(options),
                                               std::move(cancel), stream, std::move(exec));
  driver->begin();
}

}  // namespace covenant::detail
