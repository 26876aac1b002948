// The wire protocol of one provider, as the HTTP engine needs it: where requests go, which headers
// they carry, the body for a chat_request in an output mode, and how replies (whole or streamed)
// read back. http_engine does the transport (connections, retries, streaming, cancellation) the
// same for every provider; a dialect only turns values into bytes and back.
#pragma once

#include <boost/json/object.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/engine/engine.hpp"
#include "covenant/engine/http_engine.hpp"

namespace covenant::detail {

/// The token counts a reply's usage object reports, each only when it is there: a stream's events
/// may report some counts and not others, and a later report replaces an earlier one.
struct usage_report {
  std::optional<std::uint64_t> input;
  std::optional<std::uint64_t> output;
  std::optional<std::uint64_t> cached_input;
  std::optional<std::uint64_t> cache_write;
  std::optional<std::uint64_t> reasoning;
  /// The reported counts written into `u` (the others stay).
  void apply(covenant::usage& u) const noexcept {
    if (input) u.input_tokens = *input;
    if (output) u.output_tokens = *output;
    if (cached_input) u.cached_input_tokens = *cached_input;
    if (cache_write) u.cache_write_tokens = *cache_write;
    if (reasoning) u.reasoning_tokens = *reasoning;
  }
};

/// How a reply is read: the output mode it was asked in and, for a request with tools
/// (chat_request::tools not empty: an agent's turn), the name the dialect gives the answer tool
/// in output_mode::tools (wire_dialect::answer_tool_name).
///
/// Without `agent` a reply is read as it always was: its text is the content, or in `tools` mode
/// the first tool call's arguments. With `agent` the calls are kept apart: a whole reply's
/// tool_calls hold every call in order except, in `tools` mode, the first call of the answer
/// tool, whose arguments are its text (else its text is the content alone); a streamed event's
/// `text` is content only and every call's pieces are in its `tools`.
struct reply_form {
  output_mode mode;
  std::string_view answer_tool{};
  bool agent = false;
  reply_form(output_mode m) : mode(m) {}  // NOLINT(google-explicit-constructor): a mode is a form
};

/// One piece of a tool call in a streamed event: the call's place in the reply (`index`, as the
/// server numbers it), its id and name (on the piece that starts it, else ""), and the next piece
/// of its arguments.
struct tool_piece {
  std::size_t index = 0;
  std::string id;
  std::string name;
  std::string arguments;
};

/// What one streamed event said.
struct wire_event {
  /// The next piece of the reply: the content, or without an agent in `tools` mode the answer
  /// tool's arguments; with an agent (reply_form::agent) the content only.
  std::string text;
  /// With an agent: the pieces of tool calls the event carries, in order (the answer tool's too).
  std::vector<tool_piece> tools;
  std::string reasoning;                      ///< the next piece of the reasoning (chat_response::reasoning)
  std::optional<std::string> finish_reason;   ///< as the chat_response carries it ("stop", "length", ...)
  usage_report usage;                         ///< the token counts the event reports
  std::string model;
  std::string id;                    ///< the reply's id, when the event carries it
  std::optional<std::string> error;  ///< the server's message of an error event
  bool done = false;                 ///< the end-of-stream marker ([DONE], message_stop)
  bool malformed = false;            ///< not an event of this protocol (ignored)
};

class COVENANT_API wire_dialect {
 public:
  virtual ~wire_dialect() = default;
  /// "openai", "anthropic"
  [[nodiscard]] virtual std::string_view name() const noexcept = 0;
  /// The endpoint for an API root without a trailing slash (the root may already end with the
  /// path, which is then not repeated).
  [[nodiscard]] virtual std::string endpoint(std::string_view base_url) const = 0;
  /// The URL a health probe asks with one GET for an API root without a trailing slash: the
  /// provider's model list (OpenAI: {root}/models; Anthropic: {root}/v1/models). A root that is
  /// already a full chat endpoint (what endpoint() keeps) is taken back to its API root first.
  [[nodiscard]] virtual std::string probe_url(std::string_view base_url) const = 0;
  /// Header lines ("Name: value") that authenticate and version each request; the API key only
  /// ever goes here. `own_auth`: the options' headers already carry the provider's auth header.
  [[nodiscard]] virtual std::vector<std::string> auth_headers(const http_engine_options& o, bool own_auth) const = 0;
  /// The header name that carries the API key (to tell whether the application set it itself).
  [[nodiscard]] virtual std::string_view auth_header_name() const noexcept = 0;
  /// The media the provider's API takes in one request (docs/media.md, "Limits").
  [[nodiscard]] virtual const media_limits& accepted_media() const noexcept = 0;
  /// The modes the provider speaks, best first: output_mode::automatic starts with the first and
  /// falls back along this list.
  [[nodiscard]] virtual std::vector<output_mode> modes() const = 0;
  /// The mode a request asking for `asked` (never automatic) is sent in.
  [[nodiscard]] virtual output_mode nearest(output_mode asked) const noexcept = 0;
  /// The request body for `request` in `mode` (one of modes()), streamed when request.stream.
  /// options().extra_body fields come first; the request's fields win. A request with tools lists
  /// them (in tools mode before the answer tool, the model free to choose among them), and its
  /// messages carry their tool calls and the tools' results.
  [[nodiscard]] virtual boost::json::object body(const chat_request& request, output_mode mode,
                                                 const http_engine_options& o) const = 0;
  /// body() as JSON text, exactly as boost::json::serialize writes it. A dialect may write it
  /// directly, without building the document first (the default builds and serializes it).
  [[nodiscard]] virtual std::string body_text(const chat_request& request, output_mode mode,
                                              const http_engine_options& o) const;
  /// The name the answer tool goes out with in output_mode::tools for a request's schema name.
  [[nodiscard]] virtual std::string answer_tool_name(std::string_view schema_name) const = 0;
  /// A 2xx response body read as a reply (reply_form). Throws engine_error (status 200, not
  /// retryable) naming what is missing when it is not one.
  [[nodiscard]] virtual chat_response parse_reply(std::string_view body, const reply_form& form) const = 0;
  /// One Server-Sent Event (its type, "" when it had no `event:` line, and its data).
  [[nodiscard]] virtual wire_event parse_event(std::string_view type, std::string_view data,
                                               const reply_form& form) const = 0;
};

/// OpenAI Chat Completions (and the many servers that copy it).
COVENANT_API std::unique_ptr<wire_dialect> openai_dialect();
/// Anthropic Messages API.
COVENANT_API std::unique_ptr<wire_dialect> anthropic_dialect();

/// Whether an HTTP error refuses the request because of its output mode: a 400 (or 422) whose
/// error text names response_format, json_schema, json_object, tools, tool_choice or functions.
bool is_mode_refusal(int status, std::string_view error_text) noexcept;

/// The wait a Retry-After header value asks for: delta-seconds ("120", "1.5") or an HTTP-date
/// (relative to `now`, never negative). nullopt when the value is neither.
COVENANT_API std::optional<std::chrono::nanoseconds> parse_retry_after(std::string_view value,
                                                                       std::chrono::system_clock::time_point now);

/// A chat_response from a Chat Completions response body. Throws engine_error (status 200, not
/// retryable) naming what is missing when the body is not a chat completion.
COVENANT_API chat_response parse_chat_completion(std::string_view body);

/// The server's error message from an error response body (error.message of an OpenAI-style error
/// object, else the body as text): one line, trimmed, elided past `max_chars`.
std::string server_error_message(std::string_view body, std::size_t max_chars = 300);

/// One streamed chunk (an SSE event's data) of a Chat Completions stream.
struct stream_chunk {
  std::string content;                       ///< choices[0].delta.content ("" when none)
  std::string tool_arguments;                ///< choices[0].delta.tool_calls[0].function.arguments ("" when none)
  std::vector<tool_piece> tools;             ///< every entry of choices[0].delta.tool_calls, in order
  std::string reasoning;                     ///< choices[0].delta.reasoning_content (or .reasoning; "" when none)
  std::optional<std::string> finish_reason;  ///< choices[0].finish_reason when not null
  usage_report usage;                        ///< the counts of its usage, when it has one
  std::string model;
  std::string id;                            ///< the completion's id ("" when the chunk has none)
  std::optional<std::string> error;          ///< the server's message of an {"error": ...} chunk
  bool malformed = false;                    ///< not a JSON object
};
stream_chunk parse_stream_chunk(std::string_view data);

}  // namespace covenant::detail
