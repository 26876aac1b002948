// covenant/contract/observer.hpp - callbacks for each event of a contract call, to feed tracing, metrics
// and audit logs without patching covenant.
//
//     struct tracer : covenant::observer {
//       void on_attempt(const covenant::attempt_event& e) override { ... e.call.query_id, e.a.issues ... }
//       void on_finished(const covenant::finished_event& e) override { ... e.outcome.summary() ... }
//     };
//     covenant::contract_options o;
//     o.observers.push_back(std::make_shared<tracer>());
//
// Every callback runs on the thread doing that piece of the call (the caller's for blocking calls,
// a runtime worker for asynchronous ones), without any lock of covenant held; one call's events
// arrive one at a time, in order. Observers shared by many contracts or calls are called from
// several threads at once and must be thread-safe. An observer that throws is logged (warn level
// of the "covenant" logger) and ignored: it never changes the call. The event objects are valid
// only during the callback. covenant's own metrics (covenant/telemetry/metrics.hpp) and audit log
// (covenant/telemetry/audit_log.hpp) are observers.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "covenant/engine/engine.hpp"
#include "covenant/types/config.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/contract/outcome.hpp"
#include "covenant/contract/perf_stats.hpp"

namespace covenant {

/// Which call an event belongs to.
struct call_info {
  std::string_view contract;        ///< the contract's name (its Expression's)
  std::string_view query_id;        ///< call_options::query_id, or one generated for the call
  std::string_view schema_version;  ///< registry-backed dynamic contracts: the version used ("" otherwise)
  /// The call's trace context (outcome_base::trace): its own span when a tracing observer recorded
  /// it (on_start), else the application's (call_options::trace); null when there is none.
  const trace_context* trace = nullptr;
  /// Where the contract's engine sends its requests (engine::info()); null when it does not say.
  const engine_info* engine = nullptr;
};

/// A call starts (before its input is checked): the first event of every call, to every observer.
struct start_event {
  const call_info& call;
  /// The application's trace context (call_options::trace); null when there is none.
  const trace_context* parent;
};

/// A request is about to be sent to the engine.
struct request_event {
  const call_info& call;
  attempt_kind kind;
  int attempt;                 ///< 1-based within its kind
  const chat_request& request;
};

/// A piece of a streamed reply arrived.
struct stream_event {
  const call_info& call;
  attempt_kind kind;
  int attempt;
  std::string_view delta;
};

/// What became of an attempt.
enum class verdict : std::uint8_t {
  accepted,  ///< the reply was accepted
  rejected,  ///< rejected; the model is asked again (a retry_event follows)
  failed,    ///< rejected, and the phase ends (no tries left, remedy off, refrain, exception, engine error, stop)
};

/// "accepted", "rejected", "failed".
COVENANT_API std::string_view to_string(verdict v) noexcept;

/// An attempt was read and judged: the reply (text, usage, latency, queue time) and its issues and
/// notes.
struct attempt_event {
  const call_info& call;
  const covenant::attempt& a;
  covenant::verdict verdict;
  int retries;  ///< attempts of this phase before this one
  /// Agents: the steps that came before this attempt since the previous one (their
  /// agent_step::attempt is a.number); empty otherwise.
  std::span<const agent_step> steps{};
};

/// An on-fail action was taken: fix, filter and noop (with the note that records it) or refrain
/// and exception (with the issue that decided).
struct action_event {
  const call_info& call;
  int attempt;
  fail_action action;
  const covenant::note* note;    ///< fix, filter, noop: the note on the attempt (else null)
  const covenant::issue* issue;  ///< refrain, exception: the deciding issue (else null)
};

/// The model will be asked again after `wait`.
struct retry_event {
  const call_info& call;
  attempt_kind kind;
  int next_attempt;
  std::chrono::nanoseconds wait;
  const issue_list& issues;  ///< what is fed back
};

/// Agents: a tool call of step `step` starts (its arguments are read and checked first).
struct tool_start_event {
  const call_info& call;
  int step;
  const tool_call& tool;
};

/// Agents: a tool call ended: its status, read arguments, issues, result and time.
struct tool_end_event {
  const call_info& call;
  int step;
  const tool_run& run;
};

/// The call ended (after forward ran, or threw).
struct finished_event {
  const call_info& call;
  const outcome_base& outcome;
  const call_timings& timings;  ///< the call's stage times (perf_stats has the same, aggregated)
};

/// A new call id: 16 hexadecimal digits (what a call without call_options::query_id gets).
COVENANT_API std::string make_query_id();

/// Receives the events of contract calls. Every callback has an empty default.
class COVENANT_API observer {
 public:
  virtual ~observer() = default;
  /// A call starts. A tracing observer that records the call returns its span's context: in the
  /// parent's trace when there is one, with a span id of its own and the sampled flag set. The
  /// first context returned becomes the call's (outcome_base::trace, call_info::trace), each model
  /// request then gets a span id of its own in that trace (chat_request::trace, seen in
  /// on_request), and the requests send it on as `traceparent`. When none returns one, the call's
  /// context is the parent's, sent on unchanged. The default returns nullopt.
  virtual std::optional<trace_context> on_start(const start_event&) { return std::nullopt; }
  virtual void on_request(const request_event&) {}
  virtual void on_stream(const stream_event&) {}
  virtual void on_attempt(const attempt_event&) {}
  virtual void on_action(const action_event&) {}
  virtual void on_retry(const retry_event&) {}
  virtual void on_tool_start(const tool_start_event&) {}
  virtual void on_tool_end(const tool_end_event&) {}
  virtual void on_finished(const finished_event&) {}
};

}  // namespace covenant
