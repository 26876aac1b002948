// covenant/engine/http_engine.hpp - an engine for OpenAI-compatible Chat Completions servers (libcurl).
//
//     covenant::http_engine model{{.base_url = "https://api.openai.com/v1",
//                                  .api_key = key, .model = "gpt-4o-mini"}};
//     auto model2 = covenant::http_engine::from_env();   // COVENANT_BASE_URL, _API_KEY, _MODEL
//     covenant::contract<Summarize> summarize{model};
//
// Each call is one POST {base_url}/chat/completions (plus transport retries) with the JSON body
//     {"model", "messages": [{"role", "content"}], "temperature"?, "max_tokens"?, "response_format"?}
// where response_format = {"type": "json_schema", "json_schema": {"name", "strict": true, "schema"}}
// is sent when the request carries a response schema and `structured_outputs` is on. The reply's
// choices[0].message.content, usage.prompt_tokens / completion_tokens, finish_reason and model
// become the chat_response. The request's output_mode changes what is sent (json_object: JSON
// mode; tools: the schema as the one function the model must call, the reply read from
// tool_calls[0].function.arguments; prompt: nothing; automatic: the best mode the server takes,
// falling back once per refused mode and remembering it). `provider = provider::anthropic` speaks
// the Anthropic Messages API instead (POST {base_url}/v1/messages). See docs/engines.md.
//
// Transport retries (never shown to the model): HTTP 408, 429, 500, 502, 503, 504, 529 (see
// `retry_statuses`), connection failures and timeouts are retried up to `retry.tries` times, on
// the schedule of covenant/engine/retry.hpp (the same retry_options a contract's remedy uses).
// The wait before retry k (k = 1..retry.tries) is
//     Retry-After (retry-after-ms, or Retry-After in seconds or as an HTTP-date) when the server
//     sent one and `honour_retry_after` is on, capped at retry.max_delay; otherwise
//     retry.delay_before(k, u): min(max_delay, delay * backoff^(k-1)) * (1 + U(-jitter, +jitter)),
//     within [0, max_delay].
// When the budget is spent: engine_error(message, status, retryable = true) (status 0 when there
// was no HTTP response). Any other HTTP error fails at once with engine_error(message, status,
// retryable = false) quoting the server's error message (trimmed, elided when long). A 2xx reply
// whose body is not a chat completion is an engine_error too (never a crash).
//
// Secrets: the API key is only ever sent in the Authorization header. It is never logged and
// never put into an exception message (a server echoing it back is redacted); URLs in messages
// and logs lose their query string and user-info. Logging goes to the "covenant" spdlog logger:
// debug for each request (method, URL, status, latency, attempt), warn for each transport retry.
//
// Asynchronous and streaming (docs/engines.md): every transfer of an engine runs on one libcurl
// multi handle driven by the runtime's I/O loop (no thread per call), reusing connections and
// multiplexing over HTTP/2 when the server offers it. A request with `stream` set sends
// "stream": true and "stream_options": {"include_usage": true} and reads the Server-Sent Events
// reply: each choices[0].delta.content goes to the receiver as it arrives, then the whole reply
// with its finish reason and usage. Transport retries happen only before the first content byte;
// after it, a broken or silent stream (stream_idle_timeout) hands over the text so far as cut off.
// A stream that ends without [DONE] and without a finish reason is cut off too. A stop request
// aborts the transfer at once. The receiver is called on the I/O loop's thread.
//
// Destruction with calls in flight: their transfers are aborted and each ends with a cancellation
// ("the engine was destroyed"); the destructor waits for the I/O loop to let go of the engine, so
// it must not be called while the runtime's loop is not running. Thread-safe: start()/complete()
// may be called from many threads at once.
#pragma once

#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/engine/engine.hpp"
#include "covenant/engine/retry.hpp"
#include "covenant/types/config.hpp"

namespace covenant {

class runtime;

/// Which HTTP version the engine asks for.
enum class http_version : std::uint8_t {
  automatic,              ///< libcurl's choice: HTTP/2 over TLS when the server offers it (ALPN), else HTTP/1.1
  http1_1,                ///< HTTP/1.1 only
  http2,                  ///< HTTP/2 over TLS when offered, HTTP/1.1 otherwise (the same as automatic today)
  /// HTTP/2 without negotiation (h2c on plain http://, for servers known to speak it). libcurl
  /// before 7.89 cannot reuse such connections (curl issue 10634): with it, every request opens
  /// its own connection (the engine says so once in the log); https:// negotiates HTTP/2 and is
  /// not affected.
  http2_prior_knowledge,
};

/// Which wire protocol the engine speaks.
enum class provider : std::uint8_t {
  openai,     ///< OpenAI Chat Completions: POST {base_url}/chat/completions
  anthropic,  ///< Anthropic Messages: POST {base_url}/v1/messages
};

/// "openai", "anthropic"
COVENANT_API std::string_view to_string(provider p) noexcept;

/// What http_engine::probe() found: one GET of the provider's model list.
struct probe_result {
  /// The server answered HTTP 2xx.
  bool ok = false;
  /// The HTTP status (0: no HTTP response: refused, reset, timed out, an invalid URL, ...).
  int status = 0;
  /// From the start of the exchange to its end (connect, request, answer).
  std::chrono::nanoseconds latency{0};
  /// The URL asked, as shown in messages: without user-info, query or fragment.
  std::string url{};
  /// No complete answer within the timeout.
  bool timed_out = false;
  /// No HTTP response: why (libcurl's reason). Not 2xx: the server's error message (error.message
  /// of an error object, else the body as text), one line, trimmed; empty when it said nothing.
  /// The API key is redacted. Empty when ok.
  std::string message{};
};

struct http_engine_options {
  /// The protocol: OpenAI Chat Completions (also vLLM, llama.cpp, Ollama, ...) or Anthropic
  /// Messages. COVENANT_PROVIDER in from_env().
  covenant::provider provider = covenant::provider::openai;
  /// API root, e.g. "https://api.openai.com/v1" or "http://localhost:8080/v1" (a trailing slash is
  /// ignored). Requests go to {base_url}/chat/completions; for Anthropic the root is
  /// "https://api.anthropic.com" and requests go to {base_url}/v1/messages. Required.
  std::string base_url{};
  /// Sent as "Authorization: Bearer <api_key>" (Anthropic: "x-api-key: <api_key>"); empty sends
  /// no key.
  std::string api_key{};
  /// The "model" field of each request; empty leaves the field out (single-model local servers).
  std::string model{};
  /// Anthropic: the anthropic-version header.
  std::string anthropic_version = "2023-06-01";
  /// Anthropic: max_tokens of a request that sets none (the API requires the field).
  std::uint32_t default_max_tokens = 4096;
  /// Time allowed to establish the connection (TCP and TLS), per attempt.
  std::chrono::milliseconds connect_timeout{10'000};
  /// Time allowed for one whole attempt (connect, send, wait, receive).
  std::chrono::milliseconds request_timeout{120'000};
  /// Transport retries, in the words of a contract's remedy schedule (covenant/engine/retry.hpp):
  /// `tries` retries after the first attempt (at most 1 + tries requests per complete()), the
  /// wait before retry k min(max_delay, delay * backoff^(k-1)) spread by x (1 + U(-jitter,
  /// +jitter)); max_delay also caps a server's Retry-After. The defaults are the transport's
  /// (4 tries, 500 ms doubling, at most 30 s, jitter 0.2), not retry_options' own: a whole
  /// retry_options assigned here (`.retry = {.tries = 2}`) gives the fields it leaves out
  /// retry_options' defaults; set one field (`o.retry.tries = 2`) to keep the others.
  retry_options retry{.tries = 4, .delay = std::chrono::milliseconds(500), .backoff = 2.0,
                      .max_delay = std::chrono::seconds(30), .jitter = 0.2};
  /// Wait as long as the server's Retry-After / retry-after-ms says (capped at retry.max_delay).
  bool honour_retry_after = true;
  /// HTTP statuses retried as transient.
  std::vector<int> retry_statuses{408, 429, 500, 502, 503, 504, 529};
  /// Extra request headers (name, value), e.g. {"OpenAI-Organization", "org-..."}. Never logged.
  std::vector<std::pair<std::string, std::string>> headers{};
  /// User-Agent header; empty uses "covenant/<version>".
  std::string user_agent{};
  /// Send the request's JSON Schema as `response_format` (OpenAI structured outputs).
  bool structured_outputs = true;
  /// Body field that carries chat_request::max_tokens ("max_completion_tokens" for newer models).
  std::string max_tokens_field = "max_tokens";
  /// OpenAI reasoning models (o-series, gpt-5): sent as "reasoning_effort" ("minimal", "low",
  /// "medium", "high"; empty: not sent). With it the token limit goes as "max_completion_tokens"
  /// (unless max_tokens_field names another field) and no temperature is sent: reasoning models
  /// refuse both max_tokens and a temperature.
  std::string reasoning_effort{};
  /// Anthropic extended thinking: "thinking": {"type": "enabled", "budget_tokens": N} (0: off; the
  /// API's minimum is 1024). max_tokens then counts the thinking too, so the request's max_tokens
  /// (or default_max_tokens) is added to it; no temperature is sent; and `tools` mode lets the model
  /// choose the tool ("tool_choice": {"type": "auto"}), as the API refuses a forced tool with
  /// thinking. The OpenAI dialect ignores it.
  std::uint32_t thinking_budget = 0;
  /// Anthropic: mark the system prompt (the contract's constant part: task, output schema, rules)
  /// for the provider's prompt cache ("system": [{"type": "text", "text": ..., "cache_control":
  /// {"type": "ephemeral"}}]), so that the calls after the first read it from the cache (cheaper
  /// and faster; usage::cached_input_tokens). OpenAI-compatible servers cache a repeated prefix by
  /// themselves and ignore it. covenant run turns it on.
  bool cache_system_prompt = false;
  /// OpenAI: the "detail" of every image part ("auto", "low", "high"; empty: not sent). Anthropic
  /// has no such setting.
  std::string image_detail = "auto";
  /// Extra top-level fields merged into every request body (e.g. {"seed", 7}); request fields win.
  boost::json::object extra_body{};
  /// Largest accepted response body; a larger one fails the call (not retried).
  std::size_t max_response_bytes = 64u * 1024u * 1024u;
  /// Streamed replies: the longest silence between two pieces of data before the transfer is
  /// given up (0: none; request_timeout still bounds the whole exchange). Before the first
  /// content it is a transport failure and retried; after it, what arrived is handed over as cut off.
  std::chrono::milliseconds stream_idle_timeout{60'000};
  /// The HTTP version asked for; requests to one host share connections, and with HTTP/2 they
  /// are multiplexed over one connection.
  covenant::http_version http_version = covenant::http_version::automatic;
  /// PEM file of the certificate authorities to trust instead of the system's (a private CA, a
  /// TLS-inspecting proxy); empty: the system's. COVENANT_CA_FILE in from_env().
  std::string ca_file{};
  /// Most connections open at once, in all and per host (0: no limit); further transfers wait.
  long max_connections = 0;
  long max_host_connections = 0;
  /// The runtime whose I/O loop runs the transfers (null: runtime::shared()).
  covenant::runtime* runtime = nullptr;
  /// Called on the I/O loop each time a transport retry is decided, before its wait (for metrics,
  /// logs and tests; it must not block). The wait itself is always a timer on the runtime's I/O
  /// loop: there is no way to skip it, so what a test sees is what production does.
  std::function<void(const transport_retry&)> on_retry{};
  /// Injectable for tests: uniform draws in [0, 1) for jitter (default: a per-thread generator).
  std::function<double()> random{};
};

/// An engine speaking the OpenAI Chat Completions protocol over HTTP(S), with transport retries.
class COVENANT_API http_engine final : public engine {
 public:
  /// Throws std::invalid_argument for invalid options (missing or non-http(s) base_url, invalid
  /// `retry` (negative tries or delays, backoff below 1, jitter outside [0, 1]), non-positive
  /// timeouts, CR/LF in a header or the API key).
  explicit http_engine(http_engine_options options);
  ~http_engine() override;
  /// Neither copied nor moved (see covenant::engine): contracts refer to it. from_env() returns
  /// one in place (`auto e = http_engine::from_env();`); hold one in a std::unique_ptr to pass it on.
  http_engine(const http_engine&) = delete;
  http_engine& operator=(const http_engine&) = delete;

  /// `defaults` with base_url, api_key, model and request_timeout taken from the environment:
  ///   COVENANT_BASE_URL  (required unless defaults.base_url is set)
  ///   COVENANT_API_KEY   (optional)
  ///   COVENANT_MODEL     (optional)
  ///   COVENANT_TIMEOUT_S (optional, request timeout in seconds, e.g. 30 or 2.5)
  ///   COVENANT_CA_FILE (optional, ca_file)
  /// Throws std::invalid_argument naming the variable when one is missing or malformed.
  static http_engine_options options_from_env(http_engine_options defaults = {});
  /// http_engine(options_from_env(defaults)).
  static http_engine from_env(http_engine_options defaults = {});

  /// One chat completion, whole or streamed (request.stream), with transport retries; returns at
  /// once. The transfer runs on the runtime's I/O loop; the receiver is called on that loop's
  /// thread. complete() (inherited) waits for it.
  void start(const chat_request& request, std::shared_ptr<reply_receiver> receiver, std::stop_token stop) override;
  /// Asynchronous and streaming.
  [[nodiscard]] engine_capabilities capabilities() const noexcept override;
  /// The media the provider's API takes (docs/media.md, "Limits").
  [[nodiscard]] const covenant::media_limits* accepted_media() const noexcept override;
  /// The provider ("openai", "anthropic"), the model of `model`, and the host and port of
  /// base_url.
  [[nodiscard]] const covenant::engine_info* info() const noexcept override;

  /// The calls started and not ended yet: each holds its receiver, its request's body and its
  /// transfer until it ends (with a reply, an error or a cancellation). 0 when the engine is idle.
  [[nodiscard]] std::size_t calls_in_flight() const noexcept;

  /// The JSON body complete() sends for `request`.
  [[nodiscard]] boost::json::object request_body(const chat_request& request) const;
  /// {base_url}/chat/completions
  [[nodiscard]] const std::string& endpoint() const noexcept;
  /// The options (api_key included: do not log them).
  [[nodiscard]] const http_engine_options& options() const noexcept;

  /// The URL probe() asks: the provider's model list (OpenAI-compatible: {base_url}/models;
  /// Anthropic: {base_url}/v1/models).
  [[nodiscard]] std::string probe_endpoint() const;
  /// Checks that the server answers: one GET probe_endpoint() on the engine's own I/O loop, with
  /// its handles, connections, proxy, CA file, user agent and headers (the API key and, for
  /// Anthropic, anthropic-version included), within `timeout` for the whole exchange; no retries,
  /// no redirects, no body sent. Blocks until the exchange ends; must not be called on the I/O
  /// loop's thread (it then fails at once saying so). Never throws but std::bad_alloc: a
  /// non-positive timeout or a moved-from engine is a result with the reason in `message`.
  [[nodiscard]] probe_result probe(std::chrono::milliseconds timeout) const;

 private:
  void end_transfers() noexcept;
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace covenant
