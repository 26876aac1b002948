// covenant/engine/engine.hpp - what a contract needs from a model: one chat completion, blocking or
// asynchronous, whole or streamed.
//
// An engine turns a conversation into the model's reply text. Transport failures (HTTP 429/5xx,
// timeouts) are the engine's business: it retries them itself (honouring Retry-After) and reports
// covenant::engine_error when it gives up. A contract never shows such a failure to the model as
// "your output was wrong".
//
// Two ways in, one of which an engine implements (the other has a default built on it):
//   * complete(request): blocking; returns the reply or throws engine_error.
//   * start(request, receiver, stop): asynchronous; returns at once and later reports to the
//     receiver: any number of on_text() deltas (when it streams), then exactly one of on_reply()
//     or on_error(). A stop request aborts the work and ends it with on_error(cancelled).
// An engine that implements only complete() still works asynchronously: its start() runs
// complete() on a thread of a small shared pool (one thread per call in flight for such engines,
// up to a bound; see docs/engines.md). An engine that implements only start() gets a complete()
// that waits for it.
#pragma once

#include <boost/json/fwd.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/engine/trace_context.hpp"
#include "covenant/types/config.hpp"
#include "covenant/types/media.hpp"

namespace covenant {

class rate_limiter;

/// Who wrote a message. `tool`: the result of one tool call the model asked for (docs/agents.md).
enum class role : std::uint8_t { system, user, assistant, tool };

/// "system", "user", "assistant", "tool"
COVENANT_API std::string_view to_string(role r) noexcept;

/// One call of a tool that the model asked for in its reply (docs/agents.md).
struct tool_call {
  /// The provider's id of the call ("call_...", "toolu_..."); its result names it.
  std::string id;
  std::string name;
  /// The arguments as the model wrote them: JSON text, not always well-formed.
  std::string arguments;

  friend bool operator==(const tool_call&, const tool_call&) = default;
};

/// A tool the model may call: its name, what it does, and the JSON Schema of its arguments.
struct tool_spec {
  std::string name;
  std::string description;
  /// JSON Schema of the arguments (an object schema in OpenAI's strict form), built once.
  std::shared_ptr<const boost::json::value> parameters;
};

struct message {
  covenant::role role = covenant::role::user;
  std::string content;
  /// Images, PDFs and audio sent with the text, in the order `content` refers to them ("<image 1>"
  /// is the first image). Engines that take no media refuse a request with them (docs/media.md).
  std::vector<covenant::media> media{};
  /// role::assistant: the tool calls the model made in this turn (`content` is any text beside them).
  std::vector<covenant::tool_call> tool_calls{};
  /// role::tool: the id of the call this message answers (`content` is its result).
  std::string tool_call_id{};
  /// role::tool: the result reports an error (a refused argument, a failed tool).
  bool is_error = false;

  friend bool operator==(const message&, const message&) = default;
};

/// Tokens reported by the engine. `input_tokens` and `output_tokens` count everything the call
/// was billed for; the other counts are parts of them that providers price apart (docs/cost.md):
/// input read from the provider's prompt cache, input written to it, and output spent reasoning
/// before the answer. A count the server did not report is 0.
struct usage {
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  /// Part of input_tokens served from the prompt cache (OpenAI prompt_tokens_details.cached_tokens,
  /// Anthropic cache_read_input_tokens).
  std::uint64_t cached_input_tokens = 0;
  /// Part of input_tokens written to the prompt cache (Anthropic cache_creation_input_tokens).
  std::uint64_t cache_write_tokens = 0;
  /// Part of output_tokens spent reasoning (OpenAI completion_tokens_details.reasoning_tokens).
  std::uint64_t reasoning_tokens = 0;

  [[nodiscard]] std::uint64_t total() const noexcept { return input_tokens + output_tokens; }
  usage& operator+=(const usage& o) noexcept {
    input_tokens += o.input_tokens;
    output_tokens += o.output_tokens;
    cached_input_tokens += o.cached_input_tokens;
    cache_write_tokens += o.cache_write_tokens;
    reasoning_tokens += o.reasoning_tokens;
    return *this;
  }
  friend usage operator+(usage a, const usage& b) noexcept { return a += b; }
  friend bool operator==(const usage&, const usage&) = default;
};

/// How a request asks for the output type (docs/engines.md, "Output modes"). Every mode sends the
/// same schema where it sends one, and the contract's prompt shows the constraints in every mode.
enum class output_mode : std::uint8_t {
  /// Structured outputs: the JSON Schema as `response_format` (strict); the default.
  json_schema,
  /// JSON mode: `response_format: {"type": "json_object"}`; the schema only in the prompt.
  json_object,
  /// The output type as the one function (tool) the model must call; the reply is its arguments.
  tools,
  /// The schema in the prompt only; nothing else is sent.
  prompt,
  /// The engine's best mode; when the server refuses the request because of the mode, the engine
  /// falls back to its next mode and remembers that for its endpoint (http_engine).
  automatic,
};

/// "json_schema", "json_object", "tools", "prompt", "auto"
COVENANT_API std::string_view to_string(output_mode m) noexcept;
/// The mode named by to_string()'s spelling ("automatic" is accepted for "auto"); nullopt otherwise.
COVENANT_API std::optional<output_mode> parse_output_mode(std::string_view name) noexcept;

struct chat_request {
  std::vector<message> messages;
  /// JSON Schema of the expected reply (OpenAI strict form) for engines with structured outputs;
  /// null when the reply is not JSON-constrained. Shared, built once per contract. A schema the
  /// pointer does not own (an aliasing pointer without an owner, to a static schema) must outlive
  /// every request that carries it: engines may remember it by its address (cassettes and the
  /// response cache keep its canonical form).
  std::shared_ptr<const boost::json::value> response_schema;
  /// Name of the expected type (for structured-output APIs; the tool's name in `tools` mode).
  std::string schema_name;
  /// How the output type is asked for (contract_options::mode). Engines without the mode use
  /// their nearest one (see each engine's documentation).
  output_mode mode = output_mode::json_schema;
  std::optional<double> temperature;
  std::optional<std::uint32_t> max_tokens;
  /// The tools the model may call besides giving its answer (agents, docs/agents.md); shared,
  /// built once per contract. Null or empty: no tools. In output_mode::tools the answer is one
  /// more tool, named `schema_name`, and the model must call one of them.
  std::shared_ptr<const std::vector<tool_spec>> tools;
  /// Deliver the reply as it is written (receiver::on_text) when the engine can stream. Engines
  /// that cannot stream ignore it and report the whole reply as one delta.
  bool stream = false;
  /// The limiter the call runs under, if any (covenant/engine/rate_limiter.hpp). The contract has already
  /// waited for the request's turn; an engine that retries a transport failure itself waits for a
  /// turn again before each retry (acquire) and reports a server's 429 / Retry-After (back_off).
  std::shared_ptr<covenant::rate_limiter> limiter;
  /// The W3C trace context the request carries (http_engine: the `traceparent` and `tracestate`
  /// headers), so that a gateway or a self-hosted server can join the caller's trace. The contract
  /// sets it from call_options::trace: the span of this model request when a tracing observer
  /// records the call, else the application's own context. Invalid (the default): no headers.
  /// It is no part of what the request asks: cassettes and the response cache leave it out of
  /// their keys.
  trace_context trace{};
};

/// A transport retry an engine made (http_engine_options::on_retry, chat_response::retries).
struct transport_retry {
  int retry = 0;  ///< 1..tries
  int tries = 0;  ///< the budget (http_engine_options::retry.tries)
  /// The wait before it: the server's Retry-After (capped at retry.max_delay) or the backoff.
  std::chrono::nanoseconds wait{0};
  int status = 0;       ///< the HTTP status that failed (0: no response: refused, reset, timed out)
  std::string reason{};  ///< what failed, as in the log ("HTTP 429: Rate limit reached", "timed out: ...")
  /// When the retry was decided (the end of the exchange that failed), on the system clock.
  std::chrono::system_clock::time_point at{};
};

struct chat_response {
  /// The answer: the reply's text, or in output_mode::tools the arguments of the call of the
  /// answer tool.
  std::string text;
  /// The calls of the request's tools (chat_request::tools) the model made instead of answering,
  /// in order. Empty for a request without tools.
  std::vector<covenant::tool_call> tool_calls;
  covenant::usage usage;
  /// The model that answered, as the server names it (http_engine: the model asked for when the
  /// server does not say).
  std::string model;
  std::string finish_reason;  ///< "stop", "length" (cut off by the token limit), ...
  /// The text a reasoning model wrote apart from its answer (OpenAI-style reasoning_content from
  /// DeepSeek, vLLM or llama.cpp; Anthropic thinking blocks). Never read as the answer.
  std::string reasoning;
  /// The reply ended before the model finished it for another reason than the token limit: a
  /// stream broken after its first content byte, or one that ended without a finish reason.
  /// `text` holds what arrived. Contracts treat it like a reply cut at the token limit.
  bool cut_off = false;
  /// The reply came from a response cache (covenant/engine/response_cache.hpp), not the server:
  /// its usage is 0, it cost nothing.
  bool from_cache = false;
  /// The mode the reply was asked for in (for output_mode::automatic: the one the server took).
  output_mode mode = output_mode::json_schema;
  /// Time the call spent between its exchanges with the server, not talking to it: the waits
  /// before its transport retries (backoff or Retry-After) and its turns under the rate limiter
  /// before them. The contract reports it as the attempt's queue time (attempt::queued), apart
  /// from its latency. Engines that never wait leave it 0.
  std::chrono::nanoseconds queued{0};
  /// The server's id of the reply (OpenAI `id`, e.g. "chatcmpl-123"; Anthropic `id`, "msg_..."); ""
  /// when it gave none.
  std::string id{};
  /// The transport retries the engine made before this reply, in order (429 and 5xx answers,
  /// connections refused or reset, timeouts); empty when the first exchange answered.
  std::vector<transport_retry> retries{};
};

/// The engine could not produce a reply (after its own transport retries), or was stopped.
class COVENANT_API engine_error : public std::runtime_error {
 public:
  explicit engine_error(const std::string& what, int status = 0, bool retryable = false)
      : std::runtime_error(what), status_(status), retryable_(retryable) {}
  /// The error an engine reports when a stop request ended its work.
  static engine_error cancellation(const std::string& what = "cancelled") {
    engine_error e(what, 0, false);
    e.cancelled_ = true;
    return e;
  }
  /// HTTP status when there was one, else 0.
  [[nodiscard]] int status() const noexcept { return status_; }
  /// Whether the failure was transient (it was retried until the engine's budget ran out).
  [[nodiscard]] bool retryable() const noexcept { return retryable_; }
  /// The work was stopped (a stop request, the engine being destroyed), not failed.
  [[nodiscard]] bool cancelled() const noexcept { return cancelled_; }
  /// What chat_response::queued is for a reply: the time the failed call spent between its
  /// exchanges (transport-retry waits, its turns under the rate limiter). 0 unless the engine set it.
  [[nodiscard]] std::chrono::nanoseconds queued() const noexcept { return queued_; }
  void set_queued(std::chrono::nanoseconds d) noexcept { queued_ = d; }
  /// What chat_response::retries is for a reply: the transport retries made before the engine gave
  /// up (empty unless the engine set them).
  [[nodiscard]] const std::vector<transport_retry>& retries() const noexcept {
    static const std::vector<transport_retry> none;
    return retries_ ? *retries_ : none;
  }
  void set_retries(std::vector<transport_retry> r) {
    retries_ = r.empty() ? nullptr : std::make_shared<const std::vector<transport_retry>>(std::move(r));
  }

 private:
  int status_;
  bool retryable_;
  bool cancelled_ = false;
  std::chrono::nanoseconds queued_{0};
  std::shared_ptr<const std::vector<transport_retry>> retries_;  // shared: copying the error never throws
};

/// Receives one reply of an asynchronous engine call, in order: any number of on_text() calls,
/// then exactly one of on_reply() and on_error(). Calls for one request never overlap; they may
/// come from any thread (the engine's I/O thread for the HTTP engine), so they should hand real
/// work elsewhere quickly. None of them may throw.
class COVENANT_API reply_receiver {
 public:
  virtual ~reply_receiver() = default;
  /// The next piece of the reply text (streaming). Not called by engines that do not stream.
  virtual void on_text(std::string_view delta) noexcept { (void)delta; }
  /// The next piece of the arguments of tool call `index` (0-based, in the reply's order) of a
  /// streamed reply: `name` is set with its first piece. Only for requests with tools.
  virtual void on_tool_text(std::size_t index, std::string_view name, std::string_view delta) noexcept {
    (void)index, (void)name, (void)delta;
  }
  /// The whole reply: `text` holds every delta delivered before, concatenated.
  virtual void on_reply(chat_response response) noexcept = 0;
  /// The call failed, or was stopped (error.cancelled()).
  virtual void on_error(const engine_error& error) noexcept = 0;
  /// Once the caller has stopped a streamed reply early (the call's stop token): how many bytes
  /// of the text delivered by on_text() it kept as the reply; what came after is no part of the
  /// conversation (a cassette records only that much). npos (the default): all of it.
  [[nodiscard]] virtual std::size_t text_kept() const noexcept { return std::string_view::npos; }
};

/// Where an engine's requests go, for telemetry: OpenTelemetry's `gen_ai.provider.name`,
/// `gen_ai.request.model`, `server.address` and `server.port` (covenant/telemetry/otel.hpp).
struct engine_info {
  /// The wire protocol's provider as the GenAI conventions name it ("openai", "anthropic"); "" when
  /// the engine does not say.
  std::string provider{};
  /// The model every request asks for ("" : the server's default).
  std::string model{};
  /// The server's host name or address, and its port ("" and 0 when there is no server).
  std::string server_address{};
  int server_port = 0;
};

/// What an engine does natively.
struct engine_capabilities {
  bool asynchronous = false;  ///< start() is non-blocking without a thread per call
  bool streaming = false;     ///< honours chat_request::stream with on_text deltas
};

namespace detail {
struct engine_anchor;
}

/// A chat model. Implementations must be safe to call from several threads at once.
///
/// Lifetime: an engine may be destroyed while calls are in flight: every later start()/complete()
/// through a contract fails with a cancellation, and destruction waits until calls already inside
/// the engine's functions have returned. A derived engine with state of its own must say when its
/// destruction begins, so that no call runs in it while its members go: its destructor calls
/// close() first (or refuse_calls(), then ends its own work, then close(), as http_engine does).
/// One that does not, destroyed while a call is inside its start() or complete(), stops the
/// program with a message saying so (std::terminate): that call would read freed memory.
/// An engine is neither copied nor moved: contracts and calls in flight refer to it. Hold it in a
/// std::unique_ptr (or std::optional) to pass it on.
class COVENANT_API engine {
 public:
  engine();
  virtual ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;
  engine(engine&&) = delete;
  engine& operator=(engine&&) = delete;

  /// The model's reply to the conversation. Throws engine_error on failure. The default waits
  /// for start().
  virtual chat_response complete(const chat_request& request);

  /// Starts one call and returns at once; the outcome goes to `receiver` (see reply_receiver).
  /// The engine reads `request` before returning (it may be destroyed afterwards) and keeps
  /// `receiver` alive until it has made its last call on it. When `stop` is requested, the call
  /// ends soon with on_error(engine_error::cancellation(...)). The default runs complete() on a
  /// thread of a shared pool and reports its result (with the whole text as one on_text delta
  /// when the request asked to stream); a stop request then reports the cancellation at once and
  /// the late result is discarded.
  virtual void start(const chat_request& request, std::shared_ptr<reply_receiver> receiver, std::stop_token stop);

  /// What this engine does natively (the default: neither).
  [[nodiscard]] virtual engine_capabilities capabilities() const noexcept { return {}; }

  /// The media the provider behind this engine accepts in one request (types, sizes, counts);
  /// contracts check an input's media against them before sending. Null (the default): the
  /// engine does not say; only what holds for every provider is checked.
  [[nodiscard]] virtual const covenant::media_limits* accepted_media() const noexcept { return nullptr; }

  /// Where the engine's requests go, for telemetry (observers see it in call_info::engine). Null
  /// (the default): the engine does not say. An engine that forwards to another (a cache) answers
  /// for the one behind it.
  [[nodiscard]] virtual const covenant::engine_info* info() const noexcept { return nullptr; }

  /// The engine's liveness record, shared with calls in flight (see close()).
  [[nodiscard]] const std::shared_ptr<detail::engine_anchor>& anchor() const noexcept { return anchor_; }

 protected:
  /// Refuses new calls and waits for calls inside complete()/start() to return. Idempotent.
  void close() noexcept;
  /// Refuses new calls without waiting (for a destructor that must first end its own transfers,
  /// then close()).
  void refuse_calls() noexcept;

 private:
  std::shared_ptr<detail::engine_anchor> anchor_;
};

namespace detail {

/// Shared between an engine and the calls that use it: whether the engine still accepts calls,
/// and how many are inside its functions right now.
struct engine_anchor;

/// Enters the engine for one call of start()/complete() if it is still open; the guard leaves it.
class COVENANT_API engine_lease {
 public:
  explicit engine_lease(const std::shared_ptr<engine_anchor>& anchor) noexcept;
  ~engine_lease();
  engine_lease(const engine_lease&) = delete;
  engine_lease& operator=(const engine_lease&) = delete;
  /// false: the engine was closed (destroyed or being destroyed); do not call it.
  explicit operator bool() const noexcept { return anchor_ != nullptr; }

 private:
  engine_anchor* anchor_ = nullptr;
};

}  // namespace detail

}  // namespace covenant
