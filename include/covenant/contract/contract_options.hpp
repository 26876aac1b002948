// covenant/contract/contract_options.hpp - how a contract asks, reads and retries (contract_options), and
// what one call may add (call_options: a stop token, a deadline, an executor).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/read/detail/decode_context.hpp"
#include "covenant/engine/engine.hpp"
#include "covenant/read/lenient.hpp"
#include "covenant/engine/retry.hpp"

namespace covenant {

class observer;

class runtime;
class rate_limiter;
class price_table;

/// What one call may spend over all its attempts (0: no cap). Before asking the model again, the
/// contract estimates the next attempt: the input of the phase's first attempt plus the reply and
/// the corrective message it adds (4 bytes a token), and the largest output so far. When what the
/// call has spent plus that estimate would pass a cap, it does not ask: the call fails with
/// outcome::reason "budget" (forward runs). The first model call of a call is always made.
struct budget_options {
  std::uint64_t max_tokens = 0;  ///< input and output tokens (usage::total()) over the call's attempts
  /// US dollars over the call's attempts (needs contract_options::prices; an attempt whose cost is
  /// unknown stops the asking, as its cost cannot be kept under the cap).
  double max_cost_usd = 0;
};

/// What a tool failing on the application's side (act() throws or times out, the result breaks
/// post() or its schema) does in an agent loop (docs/agents.md).
enum class tool_errors : std::uint8_t {
  tell_model,  ///< the model gets the error as the call's result and goes on (the default)
  end_call,    ///< the call fails at stage::tool (reason "tool_error"); forward runs
};

/// The limits of an agent loop: contracts whose Expression declares tools (docs/agents.md). The
/// call's deadline (call_options) and contract_options::budget bound the whole loop too.
struct agent_options {
  /// Model replies that call tools, at most: one more ends the call at stage::tool with reason
  /// "max_steps" (its calls are recorded, not run).
  int max_steps = 8;
  /// Tool calls run in all, at most (0: no limit): calls past it are not run (tool_status::refused)
  /// and the model is told why.
  std::size_t max_tool_calls = 32;
  /// Calls of the named tools, at most, each: calls past it are refused the same way.
  std::vector<std::pair<std::string, std::size_t>> max_calls_per_tool{};
  /// One tool call's time, at most (0: no limit): past it the model is told the tool timed out
  /// (tool_status::timeout); an act() that returned a covenant::future is cancelled, a blocking
  /// one runs to its end on its worker and its result is dropped.
  std::chrono::milliseconds tool_timeout{std::chrono::seconds(60)};
  tool_errors on_tool_error = tool_errors::tell_model;
  /// The runtime whose workers run the tools' acts (quick tools aside). Null: a process-wide
  /// runtime for tools (8 workers), apart from the one calls run on, so that blocking tools never
  /// hold up the calls' own work, their timeouts included.
  covenant::runtime* tool_runtime = nullptr;
};

struct contract_options {
  /// Ask the model to repair an input that fails validation or pre().
  bool pre_remedy = false;
  /// Ask the model again when its output fails parsing, validation or post().
  bool post_remedy = true;
  /// Show every earlier attempt's issues in each corrective message (else only the latest).
  bool accumulate_errors = false;
  /// Log prompts and corrective messages (at debug level of the "covenant" logger).
  bool verbose = false;
  /// How many times to ask again, and when (see covenant/engine/retry.hpp for the exact semantics).
  retry_options retry{};
  /// What the call operator does when tries run out (forward runs either way and the outcome
  /// keeps the full attempt history):
  ///   false (default): after forward has produced its fallback, the call operator throws
  ///     covenant::contract_failure<R> carrying that fallback value and the outcome;
  ///   true: no exception; the call operator returns forward's value (a dynamic contract's: null).
  /// run(), run_async() and stream() never throw for a failed contract, whatever it says.
  bool graceful = false;
  /// How replies are read: strict (JSON only), repair (also extraction from prose and fences and
  /// syntax repairs), coerce (also schema-guided conversions such as "0.9" -> 0.9; the default).
  /// Whatever was repaired or coerced is recorded as notes on the attempt and the outcome.
  covenant::strictness strictness = covenant::strictness::coerce;
  /// A reply that was cut off (the text ended mid-value, or the engine reported its token limit)
  /// is accepted when what was written completely validates (the unfinished value is dropped, never
  /// completed; outcome::truncated and a `truncated` note say so). false: such a reply is rejected
  /// like any other invalid one and the model is asked again.
  bool accept_truncated = true;
  /// Options of the output decoder (unknown fields, limits).
  decode_options decode{};
  /// Send the output's JSON Schema with each request (for engines with structured outputs).
  bool send_json_schema = true;
  /// How the output type is asked for: json_schema (structured outputs, the default), json_object
  /// (JSON mode), tools (a forced function call), prompt (the schema in the prompt only) or
  /// automatic (the engine's best, falling back when the server refuses it). The prompt shows the
  /// output's schema and constraints in every mode. See docs/engines.md, "Output modes".
  output_mode mode = output_mode::json_schema;
  /// Show the input type's schema (field descriptions, constraints) in the system prompt when it
  /// has such metadata, so the model knows what the input's fields mean.
  bool describe_input = true;
  /// Streamed calls: when a value already complete in the stream breaks a constraint that no
  /// later text can fix, stop the transfer at once and ask again with that violation, instead of
  /// paying for the rest of the reply (a note on the attempt and perf_stats::early_stops() say so).
  bool early_stop = true;
  /// Where asynchronous calls run (I/O loop, timers, workers); null: runtime::shared().
  covenant::runtime* runtime = nullptr;
  /// Injectable for tests: sleeps between attempts (default std::this_thread::sleep_for; for
  /// asynchronous calls a timer on the runtime's I/O loop). When set, asynchronous calls call it
  /// on a worker and go on at once.
  std::function<void(std::chrono::nanoseconds)> sleep{};
  /// Injectable for tests: uniform draws in [0, 1) for jitter (default: a per-thread generator).
  std::function<double()> random{};
  /// Injectable for tests: the clock stages are timed with (default std::chrono::steady_clock).
  /// Deadlines (call_options) always use the real steady clock.
  std::function<std::chrono::steady_clock::time_point()> clock{};
  /// Receive every event of every call (covenant/contract/observer.hpp): metrics, audit logs, tracing.
  std::vector<std::shared_ptr<observer>> observers{};
  /// Token prices (covenant/engine/prices.hpp): with them each attempt and the outcome carry their
  /// cost (attempt::cost_usd, outcome::cost_usd); without them the cost is unknown.
  std::shared_ptr<const covenant::price_table> prices{};
  /// Caps on what one call may spend (docs/cost.md, "Budgets").
  budget_options budget{};
  /// The agent loop's limits (Expressions with tools; docs/agents.md).
  agent_options agent{};

  /// Throws std::invalid_argument for options that cannot work: invalid retry options, a
  /// negative or non-finite cost cap, a cost cap without prices.
  COVENANT_API void check() const;
};

/// A call's id as call_options holds it: shared, immutable text (no small-string buffer inside, so
/// call_options may be relocated bitwise, as GCC 12 does with default arguments of coroutine calls).
class call_id {
 public:
  call_id() = default;
  call_id(std::string_view text)  // NOLINT(google-explicit-constructor)
      : text_(text.empty() ? nullptr : std::make_shared<const std::string>(text)) {}
  call_id(const std::string& text) : call_id(std::string_view(text)) {}  // NOLINT(google-explicit-constructor)
  call_id(const char* text) : call_id(std::string_view(text)) {}        // NOLINT(google-explicit-constructor)
  [[nodiscard]] std::string_view view() const noexcept { return text_ ? std::string_view(*text_) : std::string_view(); }
  [[nodiscard]] bool empty() const noexcept { return !text_; }

 private:
  std::shared_ptr<const std::string> text_;
};

/// A call's parent trace context as call_options holds it: shared and immutable, like call_id (no
/// small-string buffer inside). Made from a trace_context (`call.trace = *parent;`); an invalid one
/// is no context.
class call_trace {
 public:
  call_trace() = default;
  call_trace(const trace_context& t)  // NOLINT(google-explicit-constructor)
      : context_(t.valid() ? std::make_shared<const trace_context>(t) : nullptr) {}
  /// The context, or null when there is none.
  [[nodiscard]] const trace_context* get() const noexcept { return context_.get(); }
  explicit operator bool() const noexcept { return context_ != nullptr; }

 private:
  std::shared_ptr<const trace_context> context_;
};

/// What one call may add to its contract's options.
struct call_options {
  /// A stop request cancels the call: the transfer in progress is aborted at once, no further
  /// attempt starts, and forward runs with a failed outcome at stage `cancelled`.
  std::stop_token stop{};
  /// Total time allowed for the call up to forward (0: none). When it passes, the call ends like a
  /// cancellation at stage `deadline`.
  std::chrono::milliseconds timeout{0};
  /// The same as an absolute time (the earlier of the two applies).
  std::optional<std::chrono::steady_clock::time_point> deadline{};
  /// Asynchronous calls: runs the call's work (hooks, reading, forward, completion). Default: the
  /// runtime's workers. Each call's work runs one piece at a time, in order. covenant::run_inline
  /// runs each piece at once on the thread that has it (see there).
  std::function<void(std::function<void()>)> executor{};
  /// Client-side request and token limits shared with other calls (covenant/engine/rate_limiter.hpp):
  /// each model call waits for its turn (a timer, no sleeping thread) and reports its usage; the
  /// HTTP engine backs the whole limiter off on 429 / Retry-After.
  std::shared_ptr<covenant::rate_limiter> limiter{};
  /// The call's id in observers' events, audit lines and outcome::query_id (empty: one is
  /// generated, 16 hexadecimal digits).
  call_id query_id{};
  /// The application's current span (W3C Trace Context, covenant/engine/trace_context.hpp): a
  /// tracing observer's spans of this call become its children, and each model request carries the
  /// trace on (chat_request::trace: the HTTP engine's `traceparent` header). None: a tracing
  /// observer starts a trace of its own.
  call_trace trace{};

  /// The deadline these options set, if any, counted from `start`.
  [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> deadline_from(
      std::chrono::steady_clock::time_point start) const noexcept {
    std::optional<std::chrono::steady_clock::time_point> d = deadline;
    if (timeout.count() > 0) {
      const auto t = start + timeout;
      if (!d || t < *d) d = t;
    }
    return d;
  }
  /// Whether a stop or a deadline may end the call early.
  [[nodiscard]] bool stoppable() const noexcept {
    return stop.stop_possible() || deadline.has_value() || timeout.count() > 0;
  }
};

/// An executor for call_options::executor (or batch_options::call.executor) that runs each piece
/// of an asynchronous call at once on the thread that has it, instead of handing it to the
/// runtime's workers: the start (input checks, `pre`, `act`, rendering) on the thread that calls
/// run_async(), and what follows a reply (reading, validating, `post`, `forward`, the future's
/// completion and its then() continuation) on the thread that delivers the reply, which for
/// `http_engine` is the runtime's I/O thread. That saves two hand-offs between threads per model
/// call (a futex wake-up each, or a worker's spin): up to a quarter of the client's CPU per call
/// against a loopback server, depending on load (docs/performance.md). Only for quick hooks that never wait for
/// another model call: while one runs on the I/O thread, no transfer of that runtime makes
/// progress (a blocking call made from there would wait for itself). The pieces of one call still
/// run one at a time and in order.
inline void run_inline(std::function<void()> work) { work(); }

}  // namespace covenant
