// covenant/contract/detail/call.hpp - the type-erased core of a contract call, shared by typed and dynamic
// contracts, blocking and asynchronous calls.
//
// A call is a fixed sequence of steps (call_steps, implemented per contract kind): check the
// input; with pre-remedy, a remedy phase asking for a repaired input; prepare the output request
// (act, render); the output remedy phase; finish (forward). A remedy phase (remedy_phase) is the
// model-facing loop: send, read and check the reply (reply_reader, typed), then accept, fail, or
// wait and ask again with a corrective message. One driver runs that sequence (src/contract/call.cpp),
// one event at a time: start_async on a runtime (the engine's asynchronous start(), timers for the
// waits, one piece of the call's work at a time on a worker), run_blocking the same on the calling
// thread, which waits for the call's end. Either way the call owns its steps and the contract's core
// until its last event.
#pragma once

#include <boost/json/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/contract/contract_options.hpp"
#include "covenant/engine/engine.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/contract/observer.hpp"
#include "covenant/contract/outcome.hpp"
#include "covenant/contract/perf_stats.hpp"

namespace covenant::detail {

using time_point = std::chrono::steady_clock::time_point;

/// The typed side of a remedy phase: reads replies into the phase's value and checks them.
class COVENANT_API reply_reader {
 public:
  virtual ~reply_reader() = default;
  /// Reads `a.text` and runs every check of the phase: issues into a.issues, notes into a.notes.
  /// Stage times go into `times`, counted from `mark`, which is set to when the work ended.
  /// Returns the stage of the failure (parse, validate or post; ignored when a.issues is empty).
  virtual stage read(attempt& a, call_timings& times, time_point& mark) = 0;
  /// The value of the last read was accepted: keep it.
  virtual void accept() = 0;
  /// Streaming: attempt `number` starts streaming; `rejected` is the previous attempt of the
  /// phase when it was rejected (null for the first).
  virtual void stream_start(int number, const attempt* rejected) { (void)number, (void)rejected; }
  /// Streaming: the next piece of the reply. Returns true to stop the transfer now, with the
  /// violations that no later text can fix in `violations`, and in `kept` the length of the
  /// reply's text up to and including the byte on which the stop was decided (what the rejected
  /// reply is: the same however the text arrived).
  virtual bool stream_text(std::string_view delta, issue_list& violations, std::size_t& kept) {
    (void)delta, (void)violations, (void)kept;
    return false;
  }
  /// Streaming, agents: the next piece of the arguments of tool call `index` of the reply
  /// (`name` with its first piece).
  virtual void stream_tool_text(std::size_t index, std::string_view name, std::string_view delta) {
    (void)index, (void)name, (void)delta;
  }
};

/// A stream reader's early stop (reply_reader::stream_text): its first violations and where they
/// were decided. The one rule of both streaming readers (typed and dynamic).
template <class StreamReader>
bool stream_stop(const StreamReader& r, issue_list& violations, std::size_t& kept) {
  if (r.violations().empty()) return false;
  violations = r.violations();
  kept = r.decided_at();
  return true;
}

/// Throws std::logic_error: `what` (a contract) was used after being moved from.
[[noreturn]] COVENANT_API void throw_moved_from(const char* what);

/// Logged when the application's streaming callback (on_update) threw: the exception is ignored.
COVENANT_API void stream_callback_threw(const char* what) noexcept;
/// Logged when a check run on a streaming reply (a streaming-safe predicate) threw: the stream is
/// no longer judged; the final reading runs the check again.
COVENANT_API void stream_check_threw(const char* what) noexcept;

/// The strict JSON Schema `get` returns, shared (an aliasing pointer to the static schema); null
/// when it is not an object schema.
COVENANT_API std::shared_ptr<const boost::json::value> strict_schema_or_null(const boost::json::value& (*get)());

/// Receives a finished tool call (tool_runner::start).
using tool_done = std::function<void(tool_run&&)>;

/// Runs the calls of one tool of an agent (covenant/contract/agent.hpp): made once per contract.
class COVENANT_API tool_runner {
 public:
  virtual ~tool_runner() = default;
  /// The tool as the model sees it: name, description, the arguments' schema.
  [[nodiscard]] virtual const tool_spec& spec() const noexcept = 0;
  /// A quick tool runs on the thread running the call, without a hand-off to a worker and without
  /// a timeout (agent.hpp, `static constexpr bool quick = true;`).
  [[nodiscard]] virtual bool quick() const noexcept { return false; }
  /// Runs the call in `run`: reads its arguments, pre(), act(), the result's schema and post(),
  /// filling status, issues, notes, arguments and (when ok) result; then calls `done` exactly
  /// once, before returning or later from the thread that completes an asynchronous act(). Returns
  /// what cancels a pending asynchronous act() (empty when there is none). Never throws.
  virtual std::function<void()> start(tool_run run, const contract_options& options, tool_done done) const = 0;
};

/// What every call of one contract shares: options, engine, names, statistics. Calls in flight
/// hold it, so a contract may be destroyed before they end.
struct COVENANT_API contract_core : std::enable_shared_from_this<contract_core> {
  contract_core(engine& model, contract_options opts, std::string name_)
      : model(&model), anchor(model.anchor()), options(std::move(opts)), name(std::move(name_)) {
    if (const covenant::engine_info* i = model.info()) server.emplace(*i);
  }
  virtual ~contract_core() = default;

  engine* model;
  std::shared_ptr<engine_anchor> anchor;
  contract_options options;
  std::string name;
  /// The output's strict JSON Schema (null when not sent) and its name.
  std::shared_ptr<const boost::json::value> response_schema;
  std::string schema_name;
  /// Registry-backed dynamic contracts: the schema version (observers, audit lines, metrics).
  std::string schema_version;
  /// Where the engine sends its requests (engine::info(), copied: observers read it while the
  /// engine may be going).
  std::optional<covenant::engine_info> server;
  /// Whether a forward hook runs at the end of each call (typed contracts; dynamic ones have none).
  bool has_forward = true;
  /// Agents: the tools the model may call (their runners refer to the Expression's tools) and
  /// what every output request sends of them. Empty / null: no tools.
  std::vector<std::shared_ptr<const tool_runner>> tools;
  std::shared_ptr<const std::vector<tool_spec>> tool_specs;
  /// Sets `tools` and `tool_specs`.
  void set_tools(std::vector<std::shared_ptr<const tool_runner>> runners);
  mutable covenant::perf_stats stats;

  [[nodiscard]] time_point now() const { return options.clock ? options.clock() : std::chrono::steady_clock::now(); }
};

/// One remedy phase: the model-facing loop (ask, read, check; corrective message and wait).
class COVENANT_API remedy_phase {
 public:
  /// wait: ask again after wait(); tools: run the calls of the step (pending_tools()), then
  /// tools_done(); again: ask again now.
  enum class next : std::uint8_t { wait, accepted, failed, tools, again };

  remedy_phase(const contract_core& core, attempt_kind kind, bool remedy, std::vector<message> base,
               outcome_base& oc, call_timings& times, reply_reader& reader, time_point mark);

  /// What the current attempt sends.
  [[nodiscard]] const chat_request& request() const noexcept { return request_; }
  [[nodiscard]] chat_request& request() noexcept { return request_; }
  [[nodiscard]] attempt_kind kind() const noexcept { return kind_; }
  [[nodiscard]] reply_reader& reader() noexcept { return *reader_; }
  /// 1-based number of the current attempt within the phase.
  [[nodiscard]] int number() const noexcept { return k_ + 1; }
  /// The attempt rejected last (null before the first rejection).
  [[nodiscard]] const attempt* rejected() const noexcept;

  /// The next attempt waited `d` for its turn under the rate limiter before it was sent (part of
  /// its queue time, attempt::queued).
  void waited_for_turn(std::chrono::nanoseconds d) noexcept { turn_ += d; }
  /// Starts the next attempt; its engine time counts from the end of the previous stage (its
  /// latency is that time less its queue time).
  void begin_attempt();
  /// The engine's reply to the current attempt.
  next on_reply(chat_response&& reply);
  /// The engine failed (not a violation: no corrective message); the phase fails. The issue reads
  /// `engine failed (HTTP <status>): <what>` when there was an HTTP status, else `engine failed: <what>`.
  /// `queued`: the engine's waits between its exchanges (engine_error::queued); `retries`: its
  /// transport retries (engine_error::retries).
  next on_engine_error(const std::string& what, int status = 0, std::chrono::nanoseconds queued = {},
                       std::vector<transport_retry> retries = {});
  /// A streamed reply was stopped with `violations` after `text` arrived; judged like a rejected
  /// reply (a note says it was stopped early).
  next on_early_stop(std::string text, issue_list violations);
  /// The call was stopped (stage::cancelled or stage::deadline) during the current attempt (after
  /// `text` arrived) or during a wait; the phase fails with that issue.
  void on_stopped(stage why, std::string_view reason, std::string text, bool in_attempt);

  /// The wait before the next attempt (after next::wait).
  [[nodiscard]] std::chrono::nanoseconds wait() const noexcept { return wait_; }
  /// The wait is over (timed as post_remedy).
  void after_wait();

  [[nodiscard]] time_point mark() const noexcept { return mark_; }

  /// A piece of a streamed reply arrived (observers' on_stream; the first one's time is the
  /// attempt's first_chunk).
  void on_stream_piece(std::string_view delta);
  /// The call has a trace context of its own (a tracing observer records it): each request gets a
  /// span id of its own in it. Otherwise requests carry the call's context (the parent's) as it is.
  void own_trace(bool own) noexcept { own_trace_ = own; }

  /// After next::tools: the calls of the step, each with its runner (null: not to be run, the run
  /// is already settled: an unknown tool, a call past a limit).
  [[nodiscard]] std::vector<tool_run>& pending_tools() noexcept { return pending_; }
  [[nodiscard]] const std::vector<const tool_runner*>& pending_runners() const noexcept { return runners_; }
  /// The step's calls have all settled (run, failed or timed out), in their order: the step is
  /// recorded and its messages appended; next::again, or next::failed when the loop ends here.
  next tools_done(std::vector<tool_run> runs);
  /// The call was stopped while the step's tools ran: the step is recorded with `runs` as they
  /// were, and the phase fails with the stop's issue.
  void tools_stopped(stage why, std::string_view reason, std::vector<tool_run> runs);

 private:
  next begin_step(chat_response&& reply);
  [[nodiscard]] std::size_t runs_of(std::string_view tool) const;
  void record_step(std::vector<tool_run>&& runs);
  [[nodiscard]] call_info info() const noexcept;
  void attempt_judged(verdict v);
  void actions_taken(const attempt& a, fail_action decided);
  next judge(attempt& a, stage failed_at);
  void lap(perf_stage s);
  void fail(attempt&& a, stage at);
  /// A new attempt record for the current attempt, with its turn under the limiter as queue time.
  attempt new_attempt();
  /// Adds `a` to the outcome, and its cost to the call's.
  void keep(attempt&& a);
  /// Whether asking again after `a` with `correction` stays within contract_options::budget.
  [[nodiscard]] bool within_budget(const attempt& a, std::string_view correction) const;
  /// The attempt's engine time ends at `t`: its latency (less its queue time) and stage times.
  void timed(attempt& a, time_point t);

  const contract_core* core_;
  attempt_kind kind_;
  bool remedy_;
  outcome_base* oc_;
  call_timings* times_;
  reply_reader* reader_;
  time_point mark_;
  chat_request request_;
  std::size_t base_size_ = 0;
  bool media_ = false;  ///< the base messages carry media (each attempt lists them)
  std::size_t first_attempt_ = 0;
  int k_ = -1;
  std::chrono::nanoseconds wait_{0};
  std::chrono::nanoseconds waited_{0};
  std::chrono::nanoseconds turn_{0};  // the current attempt's wait under the limiter
  time_point sent_{};
  std::chrono::nanoseconds first_chunk_{0};  // the current attempt's time to its first streamed piece
  bool own_trace_ = false;
  std::optional<agent_step> step_;              // the step whose tools run now
  std::vector<tool_run> pending_;
  std::vector<const tool_runner*> runners_;
};

/// The calls of one agent step running side by side on a runtime's workers, each bounded by
/// agent_options::tool_timeout. `on_done` runs once, when every call has settled (on the thread
/// that settled the last one, or in start() when none was to run).
class COVENANT_API tool_batch : public std::enable_shared_from_this<tool_batch> {
 public:
  tool_batch(std::shared_ptr<const contract_core> core, std::vector<tool_run> runs,
             std::vector<const tool_runner*> runners, std::function<void()> on_done);
  ~tool_batch();
  tool_batch(const tool_batch&) = delete;
  tool_batch& operator=(const tool_batch&) = delete;
  /// Starts the calls that have a runner (each on a worker of agent_options::tool_runtime, quick
  /// ones on this thread) and the timeout, a timer of `rt` (the call's runtime).
  void start(runtime& rt);
  /// The settled calls (after on_done).
  [[nodiscard]] std::vector<tool_run> take();
  /// Stops waiting: the calls not settled yet are settled as stopped with `issue`, pending
  /// asynchronous acts are cancelled, and the calls as they are now are returned. on_done does
  /// not run after this.
  [[nodiscard]] std::vector<tool_run> stop(const issue& why);

 private:
  void settle(std::size_t i, tool_run&& run);
  void time_out();

  struct state;
  std::unique_ptr<state> s_;
};

/// How a call was made, which decides what its caller gets when it fails (the log line of a
/// failed call says so).
enum class call_via : std::uint8_t {
  run,            ///< run(): the failed outcome is returned
  run_async,      ///< run_async() or stream(): the future gets the failed outcome
  call_operator,  ///< operator(): throws contract_failure, or returns the value when graceful
};

/// The steps of one call, in the order the drivers run them. Steps run one at a time.
class COVENANT_API call_steps {
 public:
  virtual ~call_steps() = default;
  /// Input validation and pre(). stage::none: go on; stage::pre_remedy: ask the model for a
  /// repaired input, starting with the messages put in `repair`; any other stage: the call failed
  /// there (the issues are on the outcome).
  virtual stage check_input(std::vector<message>& repair) = 0;
  virtual reply_reader& input_reader() = 0;
  /// act() and rendering. stage::none with the output request's first messages in `base`, else
  /// the stage that failed.
  virtual stage prepare(std::vector<message>& base) = 0;
  virtual reply_reader& output_reader() = 0;
  /// An exception escaped a step at stage `at`: drop any value produced so far.
  virtual void discard() = 0;
  /// forward, the call's record (statistics, log line, observers: exactly once, also when forward
  /// throws) and its result; `failed` is stage::none on success. forward's own exception is the
  /// call's result (a blocking call rethrows it, an asynchronous one puts it in its future): this
  /// never throws.
  virtual void finish(stage failed) = 0;

  /// The stage running now (an exception escaping a step is recorded as an issue of it).
  stage at = stage::input_validation;
  /// How the call was made (set before it runs).
  call_via via = call_via::run;
  outcome_base* oc = nullptr;
  call_timings times;
  time_point start{};
  time_point mark{};
  /// The call's trace context is its own (a tracing observer returned it from on_start).
  bool own_trace = false;
};

/// Runs the call on this thread to its end, with call options (a stop token, a deadline, a limiter)
/// or without; the result is then in `steps`. The call owns `steps` and `core` until its last event
/// (a tool or an engine reply still arriving after the call ended keeps them alive, not the caller).
COVENANT_API void run_blocking(std::shared_ptr<call_steps> steps, std::shared_ptr<const contract_core> core,
                               const call_options* options = nullptr);

/// Starts the call on the contract's runtime and returns at once. `steps` and `core` are kept
/// alive until finish() has run. `stream`: ask the engine to stream and feed the readers' stream
/// hooks. `cancel` is a second stop token (the future's).
COVENANT_API void start_async(std::shared_ptr<call_steps> steps, std::shared_ptr<const contract_core> core,
                              call_options options, std::stop_token cancel, bool stream);

/// The corrective message after a rejected attempt.
COVENANT_API std::string corrective_message(const attempt& rejected, const std::vector<const attempt*>& earlier,
                                            std::string_view what);
/// The issue recorded when a hook throws something other than covenant::violation.
COVENANT_API issue hook_exception_issue(std::string_view hook, std::string_view type, std::string_view what);
/// The issue of a stopped call: code cancelled or deadline.
COVENANT_API issue stopped_issue(stage why, std::string_view reason);

/// The line logged when a call ends (see docs/contracts.md#logging). `forward_threw`: the
/// exception of forward is what the caller gets.
COVENANT_API void log_call_result(const contract_core& core, const outcome_base& o, call_via via,
                                  bool forward_threw = false);
/// The call ended: its times into the contract's statistics, the result logged, observers told.
COVENANT_API void call_finished(const contract_core& core, const outcome_base& o, const call_timings& times,
                                call_via via, bool forward_threw = false);

COVENANT_API void notify_failed(const std::exception* e) noexcept;
/// Calls `f(observer&)` for each observer of the contract; one that throws is logged and ignored.
template <class F>
void notify(const contract_core& core, F&& f) noexcept {
  for (const auto& o : core.options.observers) {
    if (!o) continue;
    try {
      f(*o);
    } catch (const std::exception& e) {
      notify_failed(&e);
    } catch (...) {
      notify_failed(nullptr);
    }
  }
}
COVENANT_API void log_prompt(std::string_view expression, std::string_view what, std::string_view text);

}  // namespace covenant::detail
