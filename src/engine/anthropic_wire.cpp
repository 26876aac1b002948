// The Anthropic Messages API as a wire dialect (wire_dialect.hpp): POST {base}/v1/messages with
// the x-api-key and anthropic-version headers.
//
// Request body:
//     {"model", "max_tokens" (required by the API), "system"?, "messages": [{"role", "content"}],
//      "temperature"?, "stream"?, "tools"?, "tool_choice"?}
// The API takes the system prompt as a top-level string, not as a message, and wants the turns to
// start with a user turn; the output type in `tools` mode is one tool the model is forced to call
// (tool_choice {"type": "tool"}), whose `input` is the reply. A request with tools (an agent's
// turn) lists them, with the answer tool after them in `tools` mode (tool_choice {"type": "any"}:
// the model chooses among them); the calls of an assistant turn are tool_use blocks, and the
// tools' results tool_result blocks of the user turn after it.
//
// Reply: {"type": "message", "content": [{"type": "text", "text"} |
//                                         {"type": "tool_use", "id", "name", "input"}],
//         "model", "stop_reason", "usage": {"input_tokens", "output_tokens"}}
// Stream (Server-Sent Events, each with an `event:` line naming the data's "type"):
//     message_start (model, input usage) -> per content block: content_block_start (its "index";
//     a tool_use block's id and name), content_block_delta* (text_delta.text |
//     input_json_delta.partial_json), content_block_stop
//     -> message_delta (stop_reason, cumulative output usage) -> message_stop
// with `ping` anywhere and `error` ({"error": {"type", "message"}}) possibly mid-stream.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "types/media_codec.hpp"
#include "wire_dialect.hpp"
#include "wire_text.hpp"

namespace covenant::detail {

namespace json = boost::json;

namespace {

constexpr std::size_t max_error_chars = 300;

/// The tool that carries the output type in `tools` mode: the model is told to call it, and the
/// reply is its input.
constexpr std::string_view tool_description = "Reply with the result as this tool's input.";

/// The name of that tool: the schema's name as the API accepts tool names ([a-zA-Z0-9_-]{1,64}).
std::string tool_name(std::string_view schema_name) {
  return schema_name.empty() ? std::string("output") : wire::api_name(schema_name);
}

/// stop_reason in the terms of chat_response::finish_reason: "end_turn" and "stop_sequence" are
/// a normal end ("stop"), "max_tokens" is the token limit ("length"); "tool_use", "refusal",
/// "pause_turn" and reasons added later are kept as they are.
std::string finish_reason_of(std::string_view stop_reason) {
  if (stop_reason == "end_turn" || stop_reason == "stop_sequence") return "stop";
  if (stop_reason == "max_tokens") return "length";
  return std::string(stop_reason);
}

/// "<type>: <message>" of an error object {"type", "message"}, one line; whatever there is of it.
std::string error_text(const json::value* error) {
  const json::object* e = error != nullptr ? error->if_object() : nullptr;
  if (e == nullptr) {
    if (error != nullptr && error->is_string()) return wire::one_line(error->as_string(), max_error_chars);
    return "unknown error";
  }
  const std::string type = wire::string_or_empty(*e, "type");
  const std::string message = wire::string_or_empty(*e, "message");
  std::string out = type.empty() ? message : message.empty() ? type : type + ": " + message;
  if (out.empty()) out = json::serialize(*e);
  return wire::one_line(out, max_error_chars);
}

/// The object under `key`, or null.
const json::object* object_at(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr ? v->if_object() : nullptr;
}

/// The input schema of a tool that has no schema: an object without properties.
const json::value& no_parameters() {
  static const json::value empty =
      json::parse(R"({"type":"object","properties":{},"required":[],"additionalProperties":false})");
  return empty;
}

/// A tool call's arguments as a tool_use block's input: the JSON object they are, or {} when they
/// are not one.
json::value tool_input(std::string_view arguments) {
  boost::system::error_code ec;
  json::value v = json::parse(arguments, ec);
  if (ec || !v.is_object()) return json::object{};
  return v;
}

/// The event's "index" (the content block's place in the message), or 0 when it has none.
std::size_t block_index(const json::object& event) {
  const json::value* v = event.if_contains("index");
  if (v == nullptr) return 0;
  if (v->is_uint64()) return static_cast<std::size_t>(v->get_uint64());
  if (v->is_int64() && v->get_int64() >= 0) return static_cast<std::size_t>(v->get_int64());
  return 0;
}

/// Appends a turn's text to a merged turn, a blank line between the two.
void append_turn(std::string& to, std::string_view text) {
  if (text.empty()) return;
  if (!to.empty()) to += "\n\n";
  to += text;
}

/// What the Messages API takes (Anthropic documentation, "Vision" and "PDF support", as read in
/// November 2026): JPEG, PNG, GIF and WebP images of at most 5 MB each, at most 100 in one request;
/// PDFs; both as base64 data or URLs; 32 MB for the whole request. No audio.
const media_limits& anthropic_limits() {
  static const media_limits limits{
      .provider = "Anthropic Messages",
      .image_types = {"image/jpeg", "image/png", "image/gif", "image/webp"},
      .audio_types = {},
      .pdf = true,
      .image_urls = true,
      .pdf_urls = true,
      .max_image_bytes = 5u * 1024u * 1024u,
      .max_pdf_bytes = 0,
      .max_audio_bytes = 0,
      .max_images = 100,
      .max_total_bytes = 32u * 1024u * 1024u,
  };
  return limits;
}

/// body_text(): the media whose base64 is written straight into the body's text, each in place of
/// the marker its "data" holds in the document.
struct deferred_data {
  std::vector<const covenant::media*> parts;
  std::string nonce;  ///< part of every marker, so that no text of the request can look like one
  [[nodiscard]] std::string marker(std::size_t i) const {
    std::string m(1, '\x01');
    m.append("covenant-media-").append(std::to_string(i)).append("-").append(nonce).push_back('\x01');
    return m;
  }
};

/// The content blocks of one media: the reference as a text block ("<image 1>"), then an "image"
/// or "document" block with a base64 or URL source (with `deferred`: a marker in place of the
/// base64). The API takes no audio: a request with audio fails (contracts refuse such an input
/// before, as accepted_media() says).
void append_media_blocks(json::array& blocks, const covenant::media& part, std::size_t n, deferred_data* deferred) {
  if (part.kind() == media_kind::audio) throw engine_error("the Anthropic Messages API takes no audio");
  if (!part.is_url() && part.data().empty()) throw engine_error("a media part has no data and no URL");
  blocks.emplace_back(json::object{{"type", "text"}, {"text", media_reference(part.kind(), n)}});
  json::object source;
  if (part.is_url()) {
    source["type"] = "url";
    source["url"] = part.url();
  } else {
    source["type"] = "base64";
    source["media_type"] = part.media_type();
    if (deferred != nullptr) {
      source["data"] = deferred->marker(deferred->parts.size());
      deferred->parts.push_back(&part);
    } else {
      json::string data;
      data.resize(base64_length(part.size()));
      write_base64(data.data(), part.data());
      source["data"] = std::move(data);
    }
  }
  blocks.emplace_back(json::object{{"type", part.kind() == media_kind::image ? "image" : "document"},
                                   {"source", std::move(source)}});
}

/// A tool's result (role::tool) as a tool_result block: {"type": "tool_result", "tool_use_id",
/// "content"}, with "is_error": true when it reports an error. Its content is the text, or with
/// media a text block (when there is text) and the media's blocks.
json::object result_block(const message& m, deferred_data* deferred) {
  json::object block{{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}};
  if (m.media.empty()) {
    block["content"] = m.content;
  } else {
    json::array blocks;
    if (!m.content.empty()) blocks.emplace_back(json::object{{"type", "text"}, {"text", m.content}});
    media_numbering numbering;
    for (const covenant::media& part : m.media) append_media_blocks(blocks, part, numbering.next(part.kind()), deferred);
    block["content"] = std::move(blocks);
  }
  if (m.is_error) block["is_error"] = true;
  return block;
}

class anthropic_wire final : public wire_dialect {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "anthropic"; }

  /// The API root ("https://api.anthropic.com") gets "/v1/messages"; a root that already ends with
  /// "/v1" (the form OpenAI-style roots take) gets "/messages"; a full endpoint is kept.
  [[nodiscard]] std::string endpoint(std::string_view base_url) const override {
    while (!base_url.empty() && base_url.back() == '/') base_url.remove_suffix(1);
    std::string out(base_url);
    if (base_url.ends_with("/v1/messages")) return out;
    if (base_url.ends_with("/v1")) return out + "/messages";
    return out + "/v1/messages";
  }

  /// GET {root}/v1/models, the Models API's list (with the same x-api-key and anthropic-version
  /// headers as a message); a root ending with "/v1" or "/v1/messages" gets "/models" after "/v1".
  [[nodiscard]] std::string probe_url(std::string_view base_url) const override {
    while (!base_url.empty() && base_url.back() == '/') base_url.remove_suffix(1);
    if (base_url.ends_with("/v1/messages")) base_url.remove_suffix(std::string_view("/messages").size());
    std::string out(base_url);
    if (base_url.ends_with("/v1")) return out + "/models";
    return out + "/v1/models";
  }

  /// x-api-key (unless empty, or the application's own headers carry it) and anthropic-version
  /// (unless empty, or the application's headers already name a version).
  [[nodiscard]] std::vector<std::string> auth_headers(const http_engine_options& o, bool own_auth) const override {
    std::vector<std::string> out;
    if (!o.api_key.empty() && !own_auth) out.push_back("x-api-key: " + o.api_key);
    bool own_version = false;
    for (const auto& [header, value] : o.headers) own_version = own_version || wire::iequals(header, "anthropic-version");
    if (!o.anthropic_version.empty() && !own_version) out.push_back("anthropic-version: " + o.anthropic_version);
    return out;
  }

  [[nodiscard]] std::string_view auth_header_name() const noexcept override { return "x-api-key"; }

  /// A forced tool call is the API's way to a reply of a given schema; the prompt is the fallback.
  /// (The Messages API has no response_format and no JSON mode.)
  [[nodiscard]] std::vector<output_mode> modes() const override { return {output_mode::tools, output_mode::prompt}; }
  [[nodiscard]] const media_limits& accepted_media() const noexcept override { return anthropic_limits(); }

  [[nodiscard]] output_mode nearest(output_mode asked) const noexcept override {
    switch (asked) {
      case output_mode::json_schema:
      case output_mode::tools:
      case output_mode::automatic:
        return output_mode::tools;
      case output_mode::json_object:
      case output_mode::prompt:
        return output_mode::prompt;
    }
    return output_mode::prompt;
  }

  /// options.extra_body first, then the request's fields. Turns:
  ///   * every system message (wherever it stands) goes into the top-level "system" string, in
  ///     order, a blank line between two (with options.cache_system_prompt, as one text block
  ///     marked for the prompt cache); no "system" field when there is none;
  ///   * consecutive user (or assistant) messages are merged into one turn, their texts joined by
  ///     a blank line (the API wants user and assistant turns to alternate); a tool's result
  ///     (role::tool) belongs to the user turn, so results and the user message after them are
  ///     one turn;
  ///   * a turn whose messages carry media, tool calls or tools' results is content blocks, in
  ///     order: the tool_result blocks first (as the API wants them), then for each other message
  ///     its text block (when it has text), its media blocks and its tool_use blocks; else the
  ///     plain text;
  ///   * the API wants the first turn to be a user turn: when the turns would start with an
  ///     assistant turn, or there would be none, a user turn "(continue)" is put first. A last
  ///     assistant turn is kept (the API continues it: a prefill).
  /// Without system messages an extra_body "system" stays.
  /// max_tokens is the request's or options.default_max_tokens (options.max_tokens_field is an
  /// OpenAI setting and not used here). "stream" is true when the request streams and left out
  /// otherwise (even when extra_body has it: the transport reads the reply as the request says).
  [[nodiscard]] json::object body(const chat_request& request, output_mode mode,
                                  const http_engine_options& o) const override {
    return build(request, mode, o, nullptr);
  }

  /// body() as text, each media's base64 written once, straight into the text.
  [[nodiscard]] std::string body_text(const chat_request& request, output_mode mode,
                                      const http_engine_options& o) const override {
    deferred_data deferred;
    deferred.nonce = std::to_string(reinterpret_cast<std::uintptr_t>(&deferred)) + "-" +
                     std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    const std::string text = json::serialize(build(request, mode, o, &deferred));
    if (deferred.parts.empty()) return text;
    std::size_t size = text.size();
    for (const covenant::media* p : deferred.parts) size += base64_length(p->size());
    std::string out;
    out.reserve(size);
    std::size_t from = 0;
    for (std::size_t i = 0; i < deferred.parts.size(); ++i) {
      // The marker as serialized: its control characters written as \u0001.
      std::string marker = json::serialize(json::value(deferred.marker(i)));
      marker = marker.substr(1, marker.size() - 2);
      const std::size_t at = text.find(marker, from);
      if (at == std::string::npos) throw engine_error("the request body lost a media part");
      out.append(text, from, at - from);
      const std::size_t start = out.size();
      out.resize(start + base64_length(deferred.parts[i]->size()));
      write_base64(out.data() + start, deferred.parts[i]->data());
      from = at + marker.size();
    }
    out.append(text, from, std::string::npos);
    return out;
  }

  [[nodiscard]] json::object build(const chat_request& request, output_mode mode, const http_engine_options& o,
                                   deferred_data* deferred) const {
    json::object body = o.extra_body;
    if (!o.model.empty()) body["model"] = o.model;
    // With extended thinking max_tokens counts the thinking too: the answer's allowance goes on top.
    body["max_tokens"] = static_cast<std::uint64_t>(o.thinking_budget) +
                         (request.max_tokens ? *request.max_tokens : o.default_max_tokens);
    if (o.thinking_budget != 0) body["thinking"] = json::object{{"type", "enabled"}, {"budget_tokens", o.thinking_budget}};

    std::string system;
    // A turn's messages; its content is their texts joined, or blocks when one has media, tool
    // calls or is a tool's result.
    struct turn {
      role r;
      std::vector<const message*> parts;
    };
    std::vector<turn> turns;
    for (const message& m : request.messages) {
      const role r = m.role == role::tool ? role::user : m.role;
      if (m.role == role::system) {
        append_turn(system, m.content);
      } else if (!turns.empty() && turns.back().r == r) {
        turns.back().parts.push_back(&m);
      } else {
        turns.push_back({r, {&m}});
      }
    }
    static const message go_on{role::user, "(continue)"};
    if (turns.empty() || turns.front().r != role::user) turns.insert(turns.begin(), turn{role::user, {&go_on}});
    if (!system.empty()) {
      if (o.cache_system_prompt)  // one text block, marked for the prompt cache
        body["system"] = json::array{
            json::object{{"type", "text"}, {"text", system}, {"cache_control", json::object{{"type", "ephemeral"}}}}};
      else
        body["system"] = system;
    }
    json::array messages;
    messages.reserve(turns.size());
    for (const turn& t : turns) {
      const bool blocked = std::any_of(t.parts.begin(), t.parts.end(), [](const message* m) {
        return !m->media.empty() || !m->tool_calls.empty() || m->role == role::tool;
      });
      json::value content;
      if (!blocked) {
        std::string text;
        for (const message* m : t.parts) append_turn(text, m->content);
        content = std::move(text);
      } else {
        json::array blocks;
        for (const message* m : t.parts)
          if (m->role == role::tool) blocks.emplace_back(result_block(*m, deferred));
        for (const message* m : t.parts) {
          if (m->role == role::tool) continue;
          if (!m->content.empty()) blocks.emplace_back(json::object{{"type", "text"}, {"text", m->content}});
          media_numbering numbering;
          for (const covenant::media& part : m->media)
            append_media_blocks(blocks, part, numbering.next(part.kind()), deferred);
          if (m->role == role::assistant)
            for (const tool_call& c : m->tool_calls)
              blocks.emplace_back(
                  json::object{{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", tool_input(c.arguments)}});
        }
        content = std::move(blocks);
      }
      messages.emplace_back(json::object{{"role", to_string(t.r)}, {"content", std::move(content)}});
    }
    body["messages"] = std::move(messages);

    if (request.temperature && o.thinking_budget == 0) body["temperature"] = *request.temperature;  // (refused with thinking)
    if (request.stream) {
      body["stream"] = true;
    } else {
      body.erase("stream");
    }
    // The request's tools, then in tools mode the answer tool.
    const bool agent = request.tools && !request.tools->empty();
    json::array tools;
    if (agent) {
      tools.reserve(request.tools->size() + 1);
      for (const tool_spec& t : *request.tools)
        tools.emplace_back(json::object{{"name", t.name},
                                        {"description", t.description},
                                        {"input_schema", t.parameters ? *t.parameters : no_parameters()}});
    }
    const bool answer = mode == output_mode::tools && request.response_schema && request.response_schema->is_object();
    const std::string name = answer ? tool_name(request.schema_name) : std::string();
    if (answer)
      tools.emplace_back(
          json::object{{"name", name}, {"description", tool_description}, {"input_schema", *request.response_schema}});
    if (!tools.empty()) body["tools"] = std::move(tools);
    if (answer) {
      // A forced tool is refused with extended thinking: the model chooses it then (a reply in text
      // instead is read as the answer, parse_reply). With the request's tools the model must call
      // one of them or the answer tool, and chooses which.
      if (o.thinking_budget != 0) body["tool_choice"] = json::object{{"type", "auto"}};
      else if (agent) body["tool_choice"] = json::object{{"type", "any"}};
      else body["tool_choice"] = json::object{{"type", "tool"}, {"name", name}};
    }
    return body;
  }

  /// The answer tool's name: the schema name as an API name ("output" when there is none).
  [[nodiscard]] std::string answer_tool_name(std::string_view schema_name) const override {
    return tool_name(schema_name);
  }

  /// The reply text: in `tools` mode the input of the first tool_use block (serialized), or the
  /// text blocks concatenated when there is none; in the other modes the text blocks, or the first
  /// tool_use input when there is no text (a tool the application asked for through extra_body).
  /// With an agent (reply_form::agent) every tool_use block is a tool call (its input serialized)
  /// except in `tools` mode the first one of the answer tool, whose input is the text; else the
  /// text is the text blocks.
  [[nodiscard]] chat_response parse_reply(std::string_view body, const reply_form& form) const override {
    if (wire::trim(body).empty()) wire::bad_body("the response body is empty");
    boost::system::error_code ec;
    json::value v = json::parse(body, ec);
    if (ec) wire::bad_body("the response body is not JSON (" + ec.message() + ")");
    const json::object* root = v.if_object();
    if (root == nullptr) wire::bad_body("the response body is not a JSON object");
    const std::string type = wire::string_or_empty(*root, "type");
    if (type == "error" || root->contains("error"))
      wire::bad_body("the server reported an error: " + error_text(root->if_contains("error")));
    if (!type.empty() && type != "message")
      wire::bad_body("the response is not a message (its \"type\" is \"" + wire::one_line(type, 60) + "\")");
    const json::value* content = root->if_contains("content");
    if (content == nullptr) wire::bad_body("the response has no \"content\"");
    if (!content->is_array()) wire::bad_body("the response's \"content\" is not an array");

    std::string text;
    std::string reasoning;  // thinking blocks: never the answer
    const json::value* tool_input = nullptr;
    std::vector<tool_call> calls;
    std::optional<std::string> answer;
    static const json::value no_input = json::object{};
    for (const json::value& block : content->as_array()) {
      const json::object* b = block.if_object();
      if (b == nullptr) continue;
      const std::string block_type = wire::string_or_empty(*b, "type");
      if (block_type == "text") {
        if (const json::value* t = b->if_contains("text"); t != nullptr && t->is_string()) {
          text += t->as_string();
        }
      } else if (block_type == "thinking") {
        reasoning += wire::string_or_empty(*b, "thinking");
      } else if (block_type == "redacted_thinking") {
        reasoning += "[redacted thinking]";
      } else if (block_type == "tool_use" && form.agent) {
        const json::value* input = b->if_contains("input");
        if (input == nullptr || input->is_null()) input = &no_input;
        std::string name = wire::string_or_empty(*b, "name");
        if (!answer && form.mode == output_mode::tools && !form.answer_tool.empty() && name == form.answer_tool)
          answer = wire::json_text(*input);
        else
          calls.push_back({wire::string_or_empty(*b, "id"), std::move(name), wire::json_text(*input)});
      } else if (block_type == "tool_use" && tool_input == nullptr) {
        tool_input = b->if_contains("input");
        if (tool_input == nullptr || tool_input->is_null()) tool_input = &no_input;
      }
    }

    chat_response out;
    if (form.agent) {
      out.text = answer ? std::move(*answer) : std::move(text);
      out.tool_calls = std::move(calls);
    } else {
      const bool use_tool = tool_input != nullptr && (form.mode == output_mode::tools || text.empty());
      out.text = use_tool ? wire::json_text(*tool_input) : std::move(text);  // numbers as short as they read back
    }
    out.reasoning = std::move(reasoning);
    out.finish_reason = finish_reason_of(wire::string_or_empty(*root, "stop_reason"));
    out.model = wire::string_or_empty(*root, "model");
    out.id = wire::string_or_empty(*root, "id");
    if (const json::object* u = object_at(*root, "usage")) read_usage(*u).apply(out.usage);
    out.mode = form.mode;
    return out;
  }

  /// One streamed event. In `tools` mode only the tool input (input_json_delta) is reply text, in
  /// the other modes only text (text_delta): the dialect keeps no state between events, and with a
  /// forced tool the model writes no text block anyway. With an agent (reply_form::agent) text is
  /// text in every mode, and tool_use blocks are tool pieces: the block's start gives its index,
  /// id and name, each input_json_delta the next piece of its input at that index. Thinking,
  /// signature and citation deltas are not reply text. Never throws; data that is not JSON, or an
  /// event of an unknown type or shape, is `malformed` (the transport ignores it).
  [[nodiscard]] wire_event parse_event(std::string_view type, std::string_view data,
                                       const reply_form& form) const override {
    wire_event out;
    try {
      boost::system::error_code ec;
      json::value v = json::parse(data, ec);
      const json::object* root = ec ? nullptr : v.if_object();
      if (root == nullptr) {
        out.malformed = true;
        return out;
      }
      const std::string own_type = wire::string_or_empty(*root, "type");
      if (type.empty()) type = own_type;
      const bool tools = form.mode == output_mode::tools && !form.agent;  // tool input is the reply text

      if (type == "message_start") {
        const json::object* message = object_at(*root, "message");
        if (message == nullptr) {
          out.malformed = true;
          return out;
        }
        out.model = wire::string_or_empty(*message, "model");
        out.id = wire::string_or_empty(*message, "id");
        if (const json::object* u = object_at(*message, "usage")) out.usage = read_usage(*u);
      } else if (type == "content_block_start") {
        // A tool_use block starts with "input": {} and its input follows as input_json_delta; a
        // text block starts with "text": "" (an initial text, if any, is its first piece).
        const json::object* block = object_at(*root, "content_block");
        if (block == nullptr) {
          out.malformed = true;
          return out;
        }
        const std::string block_type = wire::string_or_empty(*block, "type");
        if (!tools && block_type == "text") out.text = wire::string_or_empty(*block, "text");
        if (block_type == "thinking") out.reasoning = wire::string_or_empty(*block, "thinking");
        if (form.agent && block_type == "tool_use")
          out.tools.push_back(
              {block_index(*root), wire::string_or_empty(*block, "id"), wire::string_or_empty(*block, "name"), {}});
      } else if (type == "content_block_delta") {
        const json::object* delta = object_at(*root, "delta");
        if (delta == nullptr) {
          out.malformed = true;
          return out;
        }
        const std::string delta_type = wire::string_or_empty(*delta, "type");
        if (delta_type == "text_delta" && !tools) out.text = wire::string_or_empty(*delta, "text");
        if (delta_type == "input_json_delta" && tools) out.text = wire::string_or_empty(*delta, "partial_json");
        if (delta_type == "input_json_delta" && form.agent)
          out.tools.push_back({block_index(*root), {}, {}, wire::string_or_empty(*delta, "partial_json")});
        if (delta_type == "thinking_delta") out.reasoning = wire::string_or_empty(*delta, "thinking");
      } else if (type == "message_delta") {
        // Its usage is cumulative: output_tokens is the reply's total so far.
        if (const json::object* delta = object_at(*root, "delta")) {
          if (const json::value* r = delta->if_contains("stop_reason"); r != nullptr && r->is_string())
            out.finish_reason = finish_reason_of(r->as_string());
        }
        if (const json::object* u = object_at(*root, "usage")) out.usage = read_usage(*u);
      } else if (type == "message_stop") {
        out.done = true;
      } else if (type == "error") {
        out.error = error_text(root->if_contains("error"));
      } else if (type != "content_block_stop" && type != "ping") {
        out.malformed = true;
      }
    } catch (...) {  // only allocation failures can get here
      out = wire_event{};
      out.malformed = true;
    }
    return out;
  }

 private:
  /// The token counts a usage object reports (a missing count is not reported as 0). Anthropic's
  /// input_tokens leaves out the input read from and written to the prompt cache; covenant's
  /// input_tokens counts all input, so the three are added.
  static usage_report read_usage(const json::object& u) {
    usage_report out;
    out.cached_input = wire::reported_count(u, "cache_read_input_tokens");
    out.cache_write = wire::reported_count(u, "cache_creation_input_tokens");
    if (const auto fresh = wire::reported_count(u, "input_tokens")) {
      std::uint64_t all = *fresh;  // (saturating: a hostile body's counts do not wrap round)
      for (const std::uint64_t part : {out.cached_input.value_or(0), out.cache_write.value_or(0)})
        all = part > std::numeric_limits<std::uint64_t>::max() - all ? std::numeric_limits<std::uint64_t>::max() : all + part;
      out.input = all;
    }
    out.output = wire::reported_count(u, "output_tokens");
    return out;
  }
};

}  // namespace

std::unique_ptr<wire_dialect> anthropic_dialect() { return std::make_unique<anthropic_wire>(); }

}  // namespace covenant::detail
