// Reply bodies in the Anthropic Messages API format (see anthropic_replies.hpp).
#include "anthropic_replies.hpp"

#include <boost/json.hpp>

namespace covenant_test {

namespace json = boost::json;

namespace {

json::object message_skeleton(json::array content, const std::string& stop_reason, int input_tokens,
                              int output_tokens) {
  return json::object{{"id", "msg_loopback"},
                      {"type", "message"},
                      {"role", "assistant"},
                      {"model", "loopback"},
                      {"content", std::move(content)},
                      {"stop_reason", stop_reason.empty() ? json::value(nullptr) : json::value(stop_reason)},
                      {"stop_sequence", nullptr},
                      {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens}}}};
}

std::string event(const std::string& type, const json::value& data) {
  return "event: " + type + "\ndata: " + json::serialize(data) + "\n\n";
}

}  // namespace

std::string anthropic_message(const std::string& text, int input_tokens, int output_tokens,
                              const std::string& stop_reason) {
  json::array content{json::object{{"type", "text"}, {"text", text}}};
  return json::serialize(message_skeleton(std::move(content), stop_reason, input_tokens, output_tokens));
}

std::string anthropic_tool_message(const std::string& tool_name, const std::string& input_json, int input_tokens,
                                   int output_tokens, const std::string& stop_reason) {
  boost::system::error_code ec;
  json::value input = json::parse(input_json, ec);
  if (ec) input = json::value(input_json);
  json::array content{
      json::object{{"type", "tool_use"}, {"id", "toolu_loopback"}, {"name", tool_name}, {"input", std::move(input)}}};
  return json::serialize(message_skeleton(std::move(content), stop_reason, input_tokens, output_tokens));
}

std::vector<std::string> anthropic_stream(const std::vector<std::string>& pieces, bool tool,
                                          const std::string& stop_reason, int input_tokens, int output_tokens,
                                          const std::string& tool_name) {
  std::vector<std::string> out;
  // The message skeleton: no content yet, input usage, a first output count (the API sends 1).
  json::object start = message_skeleton(json::array{}, "", input_tokens, 1);
  out.push_back(event("message_start", json::object{{"type", "message_start"}, {"message", std::move(start)}}));
  json::object block = tool ? json::object{{"type", "tool_use"}, {"id", "toolu_loopback"}, {"name", tool_name}, {"input", json::object{}}}
                            : json::object{{"type", "text"}, {"text", ""}};
  out.push_back(event("content_block_start",
                      json::object{{"type", "content_block_start"}, {"index", 0}, {"content_block", std::move(block)}}));
  out.push_back(event("ping", json::object{{"type", "ping"}}));
  for (const std::string& p : pieces) {
    json::object delta = tool ? json::object{{"type", "input_json_delta"}, {"partial_json", p}}
                              : json::object{{"type", "text_delta"}, {"text", p}};
    out.push_back(event("content_block_delta",
                        json::object{{"type", "content_block_delta"}, {"index", 0}, {"delta", std::move(delta)}}));
  }
  out.push_back(event("content_block_stop", json::object{{"type", "content_block_stop"}, {"index", 0}}));
  out.push_back(event("message_delta", json::object{{"type", "message_delta"},
                                                    {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", nullptr}}},
                                                    {"usage", {{"output_tokens", output_tokens}}}}));
  out.push_back(event("message_stop", json::object{{"type", "message_stop"}}));
  return out;
}

std::string anthropic_error(const std::string& type, const std::string& message) {
  return json::serialize(json::object{{"type", "error"}, {"error", {{"type", type}, {"message", message}}}});
}

std::string anthropic_error_event(const std::string& type, const std::string& message) {
  return "event: error\ndata: " + anthropic_error(type, message) + "\n\n";
}

}  // namespace covenant_test
