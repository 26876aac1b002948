// covenant/contract/outcome.hpp - what happened in one contract call, handed to forward() and returned
// by contract::run(). It belongs to that call only.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/engine/engine.hpp"
#include "covenant/types/config.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/types/media.hpp"

namespace covenant {

/// The stages of a contract call, in order.
enum class stage : std::uint8_t {
  none,              ///< nothing failed
  input_validation,  ///< the input did not satisfy its type's schema
  pre,               ///< pre() rejected the input
  pre_remedy,        ///< asking the model to repair the input
  act,               ///< act() threw
  render,            ///< building the prompt
  engine,            ///< the engine failed (transport, quota; never shown to the model)
  tool,              ///< the agent loop ended the call: a limit of agent_options, or a failed tool with tool_errors::end_call
  parse,             ///< the reply was not readable JSON
  validate,          ///< the reply did not fit the output type and its constraints
  post,              ///< post() rejected the output
  post_remedy,       ///< building corrective messages and waiting between attempts
  forward,           ///< the forward() hook
  cancelled,         ///< the call was cancelled (call_options::stop, future::cancel, engine destroyed)
  deadline,          ///< the call's deadline (call_options::timeout / deadline) passed
};

/// "input_validation", "pre", ... ("none" for stage::none)
COVENANT_API std::string_view to_string(stage s) noexcept;

/// Which loop an attempt belongs to.
enum class attempt_kind : std::uint8_t {
  output,        ///< generating (and re-generating) the output
  input_repair,  ///< pre-remedy: asking for a corrected input
};

/// One model call and what came of it.
struct attempt {
  attempt_kind kind = attempt_kind::output;
  int number = 1;                          ///< 1-based within its kind
  std::string text;                        ///< the model's raw reply
  issue_list issues;                       ///< why it was rejected (empty: accepted)
  note_list notes;                         ///< repairs and coercions applied to read it
  /// The model call's time: from sending the request to its reply, less `queued`.
  std::chrono::nanoseconds latency{};
  /// Time the attempt waited to be served rather than talking to the server: its turn under the
  /// rate limiter before it was sent, and within the engine the waits before transport retries
  /// (backoff, a server's Retry-After) and their turns under the limiter (chat_response::queued,
  /// engine_error::queued). Not part of `latency`.
  std::chrono::nanoseconds queued{};
  /// The remedy delay slept before this attempt (retry_options: after a rejected reply); neither
  /// latency nor queue time.
  std::chrono::nanoseconds waited{};
  covenant::usage usage;                   ///< tokens of this call
  std::string model;                       ///< the model that answered (chat_response::model)
  /// What this call cost in US dollars (contract_options::prices): nullopt without prices or when
  /// the model has none; 0 for an attempt that got no reply.
  std::optional<double> cost_usd;
  std::string finish_reason;
  /// What a reasoning model wrote apart from its answer (chat_response::reasoning); never read.
  std::string reasoning;
  bool from_cache = false;                 ///< answered by a response cache (chat_response::from_cache): cost nothing
  /// The images, PDFs and audio the request carried (the input's media fields, docs/media.md).
  std::vector<covenant::media> media;
  bool engine_failed = false;              ///< the engine threw; `issues` holds the engine_error
  /// The server's id of the reply (chat_response::id; "" when it gave none).
  std::string response_id;
  /// The transport retries the engine made for this model call (chat_response::retries,
  /// engine_error::retries): 429 and 5xx answers, connections refused, timeouts, with their waits.
  std::vector<transport_retry> transport_retries;
  /// A streamed reply: the time from sending the request to its first piece of text (0 when the
  /// attempt did not stream, or no text arrived).
  std::chrono::nanoseconds first_chunk{};
};

/// How one tool call the model asked for ended (agents, docs/agents.md).
enum class tool_status : std::uint8_t {
  ok,            ///< the tool ran and its result passed its checks: the model got the result
  unknown_tool,  ///< the model named no tool of the agent
  arguments,     ///< the arguments could not be read as the tool's argument type, or broke its schema
  pre,           ///< the tool's pre() rejected the arguments
  failed,        ///< act() threw
  timeout,       ///< act() did not finish within agent_options::tool_timeout
  post,          ///< the result broke its schema or the tool's post()
  refused,       ///< not run: a limit of agent_options (tool calls in all, or of this tool) was spent
};

/// "ok", "unknown_tool", "arguments", "pre", "failed", "timeout", "post", "refused".
COVENANT_API std::string_view to_string(tool_status s) noexcept;

/// One tool call of an agent step and what came of it.
struct tool_run {
  covenant::tool_call call;           ///< as the model wrote it (id, name, raw arguments)
  std::string arguments;              ///< the arguments as read (JSON); empty when they could not be read
  tool_status status = tool_status::ok;
  /// Why it was not ok: the arguments' issues (reading, schema, pre), the result's (schema, post),
  /// or one issue saying the tool threw, timed out, is unknown or was refused.
  issue_list issues;
  note_list notes;                    ///< repairs and coercions applied to read the arguments
  /// What the model was sent: the result's JSON, or the error text (the issues).
  std::string result;
  std::chrono::nanoseconds elapsed{}; ///< from the start of the call to its end (or its timeout)

  [[nodiscard]] bool ok() const noexcept { return status == tool_status::ok; }
};

/// One model reply that called tools instead of answering, and the tools it ran.
struct agent_step {
  int number = 1;                          ///< 1-based within the call
  /// The answer attempt the step came before (attempt::number of the output attempt that follows
  /// it, or would have: a call the loop ended has no attempt after its last steps).
  int attempt = 1;
  std::string text;                        ///< any text the model wrote beside its calls
  std::vector<tool_run> tools;             ///< the calls, in the order the model made them
  covenant::usage usage;                   ///< tokens of the model call
  std::string model;
  std::optional<double> cost_usd;          ///< as attempt::cost_usd
  std::chrono::nanoseconds latency{};      ///< the model call's time, less `queued`
  std::chrono::nanoseconds queued{};       ///< as attempt::queued
  std::chrono::nanoseconds tools_elapsed{};  ///< wall time of running the step's tools (side by side)
  std::string response_id;                 ///< as attempt::response_id
  std::string finish_reason;               ///< as the engine reported it ("tool_calls", "tool_use", ...)
  std::vector<transport_retry> transport_retries;  ///< as attempt::transport_retries
};

/// Everything about a call except the typed result.
struct COVENANT_API outcome_base {
  bool success = false;
  stage failed_stage = stage::none;        ///< where the call failed (stage::none on success)
  issue_list issues;                       ///< the issues that decided the call (empty on success)
  /// Why a failed call ended without asking again, when a check's on-fail action decided it:
  /// "refrained", "exception", or the reason the check gave (e.g. "no_valid_resources"); "budget"
  /// when contract_options::budget kept it from asking again; empty otherwise (success, retries
  /// used up, engine failures...).
  std::string reason;
  /// The input's own issues (its schema, pre()) that pre-remedy was asked to repair; empty when the
  /// input passed as given. With pre_remedy off, a bad input fails the call with these as `issues`.
  issue_list input_issues;
  bool truncated = false;                  ///< the accepted reply was cut off (see the `truncated` note)
  note_list notes;                         ///< repairs and coercions of the accepted reply
  std::vector<attempt> attempts;           ///< every model call that gave (or was to give) the answer, in order
  /// Agents: every model reply that called tools, with the tools run (docs/agents.md). Their usage
  /// and cost are part of `usage` and `cost_usd`.
  std::vector<agent_step> steps;
  covenant::usage usage;                   ///< tokens summed over every attempt
  /// attempt::cost_usd summed over every attempt; nullopt when one of them is unknown (a model
  /// without a price) or the contract has no prices: an unknown cost is never shown as 0.
  std::optional<double> cost_usd;
  std::chrono::nanoseconds elapsed{};      ///< wall time of the call up to forward()
  std::string query_id;                    ///< call_options::query_id, or the id generated for the call
  /// The call's W3C trace context: its own span when a tracing observer recorded the call
  /// (observer::on_start; covenant/telemetry/otel.hpp), else call_options::trace; invalid when
  /// neither. Audit lines and `covenant run`'s result lines carry its ids.
  trace_context trace;

  explicit operator bool() const noexcept { return success; }
  /// Number of model calls made (answer attempts and agent steps).
  [[nodiscard]] std::size_t calls() const noexcept { return attempts.size() + steps.size(); }
  /// Agents: the tool calls of every step, in order.
  [[nodiscard]] std::vector<const tool_run*> tool_runs() const;
  /// The call's queue time: attempt::queued summed over its attempts (part of `elapsed`).
  [[nodiscard]] std::chrono::nanoseconds queued() const noexcept {
    std::chrono::nanoseconds sum{0};
    for (const attempt& a : attempts) sum += a.queued;
    return sum;
  }
  /// One-line summary: "succeeded after 2 attempts" / "failed at post after 4 attempts: ...".
  [[nodiscard]] std::string summary() const;
};

/// The outcome of a contract call, with the validated output when it succeeded.
template <class Output>
struct outcome : outcome_base {
  std::optional<Output> result;  ///< present exactly when success is true
};

/// What contract::run() returns: forward's value and the call's outcome.
template <class Result, class Output>
struct contract_result {
  Result value;
  covenant::outcome<Output> outcome;
};

/// Thrown by a non-graceful contract's call operator when the contract failed (after forward ran).
class COVENANT_API contract_error : public std::runtime_error {
 public:
  explicit contract_error(outcome_base outcome);
  [[nodiscard]] const outcome_base& outcome() const noexcept { return outcome_; }

 private:
  outcome_base outcome_;
};

/// contract_error that also carries the value forward() returned (the fallback).
template <class Result>
class COVENANT_API contract_failure : public contract_error {
 public:
  contract_failure(outcome_base outcome, Result fallback)
      : contract_error(std::move(outcome)), fallback_(std::move(fallback)) {}
  [[nodiscard]] const Result& fallback() const noexcept { return fallback_; }

 private:
  Result fallback_;
};

}  // namespace covenant
