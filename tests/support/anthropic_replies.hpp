// Reply bodies in the Anthropic Messages API format for loopback servers (tests, benchmarks):
// whole messages with a text or a tool_use block, a full Server-Sent Events stream, and error
// objects.
#pragma once

#include <string>
#include <vector>

namespace covenant_test {

/// A message with one text block:
///     {"id", "type": "message", "role": "assistant", "model": "loopback",
///      "content": [{"type": "text", "text"}], "stop_reason", "stop_sequence": null,
///      "usage": {"input_tokens", "output_tokens"}}
std::string anthropic_message(const std::string& text, int input_tokens = 10, int output_tokens = 5,
                              const std::string& stop_reason = "end_turn");

/// A message with one tool_use block calling `tool_name` with `input_json` (JSON text; text that
/// is not JSON goes in as a JSON string).
std::string anthropic_tool_message(const std::string& tool_name, const std::string& input_json, int input_tokens = 10,
                                   int output_tokens = 5, const std::string& stop_reason = "tool_use");

/// A whole streamed reply, one SSE event per element ("event: <type>\ndata: <json>\n\n"):
/// message_start (input usage), content_block_start (a text block, or with `tool` a tool_use
/// block named `tool_name`), ping, one content_block_delta per piece (text_delta, or with `tool`
/// input_json_delta), content_block_stop, message_delta (stop_reason, output usage), message_stop.
std::vector<std::string> anthropic_stream(const std::vector<std::string>& pieces, bool tool,
                                          const std::string& stop_reason = "end_turn", int input_tokens = 10,
                                          int output_tokens = 5, const std::string& tool_name = "output");

/// An error body: {"type": "error", "error": {"type", "message"}} (e.g. "overloaded_error",
/// "Overloaded"; the API sends it with an error status, or as a stream's `error` event).
std::string anthropic_error(const std::string& type, const std::string& message);

/// The error as one SSE event: "event: error\ndata: <anthropic_error(...)>\n\n".
std::string anthropic_error_event(const std::string& type, const std::string& message);

}  // namespace covenant_test
