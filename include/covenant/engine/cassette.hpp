// covenant/engine/cassette.hpp - record the model's replies once, replay them in every later test run.
//
//     // Record (talks to the real model, writes tests/cassettes/qa.jsonl):
//     covenant::http_engine real{covenant::http_engine::from_env()};
//     covenant::cassette_engine model{{.path = "tests/cassettes/qa.jsonl", .mode = covenant::cassette_mode::record,
//                                      .redact = {api_key}}, real};
//     // Replay (no network, no key): the same calls get the recorded replies.
//     covenant::cassette_engine model{{.path = "tests/cassettes/qa.jsonl"}};
//     covenant::contract<QA> qa{model};
//
// GoogleTest helpers (replay_cassette(), cassette() reading COVENANT_CASSETTE_MODE, the
// AllInteractionsUsed() matcher) live in covenant/testing/cassette_gtest.hpp; docs/engines.md, "Cassettes".
//
// Modes
//   record        every call goes to the inner engine; the file is truncated when the engine is
//                 built and one line per finished call is appended (flushed per line).
//   replay        every call is answered from the file; the inner engine (if any) is never called.
//   new_episodes  a call with an unused matching recording is replayed; any other call goes to the
//                 inner engine and is appended to the file.
//
// Matching. A call is answered by the first recording, in file order, that has not been used yet
// and whose normalised request equals the call's normalised request:
//   * messages: the list of (role, content), exactly (same count, order, bytes), with each
//     message's media digest and tool fields (an assistant's tool_calls: id, name and arguments
//     of each; a tool result's tool_call_id and is_error);
//   * schema_name;
//   * mode: to_string(chat_request::mode) ("json_schema", "json_object", "tools", "prompt", "auto");
//   * schema: the response schema with every object's keys sorted (null when there is none), so
//     the key order of the schema does not matter;
//   * temperature and max_tokens (null when not set);
//   * tools: the name, description and parameters schema of each tool, in order (every object's
//     keys sorted); absent when the request has none (null or an empty list).
// Not part of the match: chat_request::stream (a streamed call and a whole call match the same
// recording), the rate limiter, and anything else the request or the engine carries (HTTP headers,
// the API key). The strings of cassette_options::redact are replaced by "[redacted]" in the call's
// normalised request before it is compared, as they were when it was recorded: replay with the same
// redact list. Each recording answers one call: the (N+1)-th call of a request recorded N times
// fails in replay mode ("recorded N times, asked N+1 times") and goes to the model in new_episodes
// mode. A call matching no recording fails with an engine_error naming the closest recording (the
// one sharing the longest prefix of the normalised form) and where they differ (the first
// differing message, with an excerpt of both).
//
// Replaying a recording: a recorded reply is returned (complete()) or delivered (start(): the
// recorded chunks through on_text() and on_tool_text() in order when the call streams - each tool
// call's arguments as one piece, then the whole text as one chunk, when the recording was not
// streamed - then on_reply(); a whole call from a streamed recording gets the whole reply). The
// reply's tool calls come back with their recorded ids, so that a conversation that sends their
// results back matches its recording again. A recorded failure is thrown (complete()) or reported
// (start(), after its recorded chunks) as an engine_error with the recorded message, status and
// retryable flag, and as a cancellation when the recorded call was cancelled (a contract's early
// stop). Replayed calls are
// delivered at once, from inside start(), on the calling thread: no thread, no timer, recorded
// timings are not replayed. A stop request seen between two chunks ends the delivery with
// on_error(engine_error::cancellation()).
//
// File format (stable; version 1). JSON Lines, UTF-8, one JSON object per line, '\n' separated:
//   line 1:  {"covenant_cassette":1,"created":"2025-01-31T12:00:00Z"}
//            the version (an integer; other versions are refused) and when recording began (UTC).
//   then one line per interaction, in the order the calls finished:
//     {"request":{"messages":[{"role":"system","content":"..."},{"role":"user","content":"..."}],
//                 "schema_name":"Answer","mode":"json_schema","schema":{...}|null,
//                 "temperature":0.2|null,"max_tokens":512|null},
//      "response":{"text":"...","usage":{"input_tokens":120,"output_tokens":12},"model":"gpt-4o-mini",
//                  "finish_reason":"stop","cut_off":false,"mode":"json_schema","ms":812},
//      "chunks":[{"text":"{\"ans","ms":301},{"text":"wer\": ...","ms":340}]}
//   or, for a failed call, "error" instead of "response":
//      "error":{"message":"HTTP 503: overloaded","status":503,"retryable":true,"cancelled":false,"ms":20}
//   Tools and tool calls add these fields, each written only when it is set:
//     request.tools                   [{"description":"...","name":"get_weather","parameters":{...}|null}]
//     request.messages[i] (assistant) "tool_calls":[{"id":"call_1","name":"get_weather","arguments":"{...}"}]
//     request.messages[i] (tool)      "role":"tool","tool_call_id":"call_1","is_error":true
//     response.tool_calls             [{"id":"call_1","name":"get_weather","arguments":"{...}"}]
//     chunks[i] of tool call k        {"tool":k,"name":"get_weather","text":"{\"ci"}  ("name" with the
//                                     call's first piece only)
//   "request" is the normalised request above (schema keys sorted when written; any order is read).
//   "chunks" is present when the call streamed: the pieces of text as on_text() and on_tool_text()
//   delivered them (for a failed call, those delivered before the failure). "ms" (milliseconds
//   from the start of the call, an integer) is written only with cassette_options::record_timing;
//   it is optional everywhere. When reading, "schema_name", "mode", "schema", "temperature",
//   "max_tokens", "tools", the tool fields and every response/error field except "text"/"message"
//   are optional (defaults: "", json_schema, null, unset, unset, none, none / "" / false,
//   0 / "" / false; a tool and a tool call need their "name"), unknown keys are ignored and empty
//   lines are skipped. The file never holds HTTP headers or API keys: only the fields above are
//   written, and every string of cassette_options::redact is replaced by "[redacted]" in every
//   string written (also across the boundary of two chunks, and of two pieces of a tool call).
//
// Errors. A malformed file (not JSON, a missing or wrongly typed field, no header, an unknown
// version) or a missing file in replay mode makes the constructor throw std::runtime_error naming
// the file and the line ("tests/cassettes/qa.jsonl:3: ..."). A write that fails ends that call with
// an engine_error.
//
// Thread-safe: calls may run at once from many threads (one mutex guards the file and the set of
// used recordings; the inner engine is called outside it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/engine/engine.hpp"
#include "covenant/types/config.hpp"

namespace covenant {

enum class cassette_mode : std::uint8_t { record, replay, new_episodes };

/// "record", "replay", "new_episodes"
COVENANT_API std::string_view to_string(cassette_mode m) noexcept;
/// The mode named by to_string()'s spelling ("new-episodes" is accepted too); nullopt otherwise.
COVENANT_API std::optional<cassette_mode> parse_cassette_mode(std::string_view name) noexcept;

struct cassette_options {
  /// The cassette file (JSON Lines). record and new_episodes create its directory when missing.
  std::string path{};
  cassette_mode mode = cassette_mode::replay;
  /// Write "ms" (milliseconds since the start of the call) on each chunk and on the reply.
  bool record_timing = false;
  /// Strings never written (API keys, header values, personal data): each is replaced by
  /// "[redacted]" wherever it occurs in a written string. Empty strings are ignored.
  std::vector<std::string> redact{};
};

/// An engine that records another engine's replies to a file, or replays them from it.
class COVENANT_API cassette_engine final : public engine {
 public:
  /// Records or replays `inner`, which must outlive this engine.
  cassette_engine(cassette_options options, engine& inner);
  /// Shares `inner` (may be null in replay mode).
  cassette_engine(cassette_options options, std::shared_ptr<engine> inner);
  /// Replay only (options.mode must be replay).
  explicit cassette_engine(cassette_options options);
  /// Throws std::invalid_argument when the mode needs an inner engine and there is none, and
  /// std::runtime_error when the file cannot be read (replay / new_episodes), is malformed, or cannot
  /// be written (record / new_episodes).
  ~cassette_engine() override;

  chat_response complete(const chat_request& request) override;
  void start(const chat_request& request, std::shared_ptr<reply_receiver> receiver, std::stop_token stop) override;
  /// Replay: asynchronous and streaming. Otherwise: the inner engine's.
  [[nodiscard]] engine_capabilities capabilities() const noexcept override;
  /// The inner engine's (null without one).
  [[nodiscard]] const covenant::engine_info* info() const noexcept override {
    return inner_ != nullptr ? inner_->info() : nullptr;
  }
  /// The inner engine's (null without one).
  [[nodiscard]] const covenant::media_limits* accepted_media() const noexcept override {
    return inner_ != nullptr ? inner_->accepted_media() : nullptr;
  }

  /// Recorded interactions known: read from the file plus recorded by this engine.
  [[nodiscard]] std::size_t interactions() const;
  /// How many of them answered (or were recorded by) a call of this engine.
  [[nodiscard]] std::size_t used() const;
  /// One line per recorded interaction no call used yet, e.g.
  /// `line 3: Answer, 2 messages, last (user) "What is ..." -> reply "{\"answer\": ..."`.
  [[nodiscard]] std::vector<std::string> unused() const;
  [[nodiscard]] const std::string& path() const noexcept;
  [[nodiscard]] cassette_mode mode() const noexcept;

  /// The normalised form of a request that matching compares (compact JSON, see above), after
  /// redaction with `redact`.
  [[nodiscard]] static std::string normalized(const chat_request& request, const std::vector<std::string>& redact = {});

  struct state;

 private:
  std::shared_ptr<state> state_;
  std::shared_ptr<engine> owned_;
  engine* inner_ = nullptr;
};

}  // namespace covenant
