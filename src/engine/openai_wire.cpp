// The OpenAI Chat Completions wire format (also spoken by vLLM, llama.cpp, Ollama, LM Studio and
// most gateways): request bodies in each output mode, whole replies, streamed chunks.
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/serializer.hpp>

#include <algorithm>
#include <array>

#include "covenant/engine/http_engine.hpp"
#include "covenant/types/json_schema.hpp"
#include "types/media_codec.hpp"
#include "wire_dialect.hpp"
#include "wire_text.hpp"

namespace covenant {

namespace json = boost::json;
using detail::wire::bad_body;
using detail::wire::one_line;
using detail::wire::string_or_empty;

namespace {

// A usage object: Chat Completions spelling (prompt_tokens, prompt_tokens_details.cached_tokens,
// completion_tokens_details.reasoning_tokens), or the Responses API's (input_tokens, ...).
detail::usage_report read_usage(const json::object& u) {
  detail::usage_report out;
  out.input = detail::wire::reported_count(u, "prompt_tokens", "input_tokens");
  out.output = detail::wire::reported_count(u, "completion_tokens", "output_tokens");
  if (const json::object* d = detail::wire::object_under(u, "prompt_tokens_details", "input_tokens_details"))
    out.cached_input = detail::wire::reported_count(*d, "cached_tokens");
  if (const json::object* d = detail::wire::object_under(u, "completion_tokens_details", "output_tokens_details"))
    out.reasoning = detail::wire::reported_count(*d, "reasoning_tokens");
  return out;
}

/// The reasoning a message (or delta) carries apart from its content: reasoning_content (DeepSeek,
/// vLLM, llama.cpp), or reasoning (OpenRouter, newer vLLM); "" when none.
std::string reasoning_text(const json::object& m) {
  for (const std::string_view key : {"reasoning_content", "reasoning"})
    if (const json::value* r = m.if_contains(key); r != nullptr && r->is_string()) return std::string(r->as_string());
  return {};
}

/// The text of a message's (or delta's) "content": a string, or content parts
/// [{"type": "text", "text": ...}]. nullopt when there is none.
std::optional<std::string> content_text(const json::object& m) {
  const json::value* content = m.if_contains("content");
  if (content == nullptr) return std::nullopt;
  if (content->is_string()) return std::string(content->as_string());
  if (!content->is_array()) return std::nullopt;
  std::string out;
  for (const json::value& part : content->as_array())
    if (const auto* p = part.if_object())
      if (const auto* t = p->if_contains("text"); t != nullptr && t->is_string()) out += t->as_string();
  return out;
}

/// A call's function.arguments as text: a string as it is; an object (a server that sends the
/// arguments as one) as JSON text, its numbers as short as they read back; "" when null or missing.
std::string arguments_text(const json::value* args) {
  if (args == nullptr || args->is_null()) return {};
  if (args->is_string()) return std::string(args->as_string());
  return detail::wire::json_text(*args);
}

/// tool_calls[0].function.arguments of a message or delta: the arguments text (a streamed delta
/// holds the next piece of it). nullopt when there is no tool call.
std::optional<std::string> tool_arguments(const json::object& m) {
  const json::value* calls = m.if_contains("tool_calls");
  if (calls == nullptr || !calls->is_array() || calls->as_array().empty()) return std::nullopt;
  const json::object* first = calls->as_array().front().if_object();
  if (first == nullptr) return std::nullopt;
  if (const auto* index = first->if_contains("index"); index != nullptr && index->is_number() && index->to_number<double>() != 0)
    return std::nullopt;  // a later parallel call; only the first is the reply
  const json::value* fn = first->if_contains("function");
  if (fn == nullptr || !fn->is_object()) return std::nullopt;
  return arguments_text(fn->as_object().if_contains("arguments"));
}

/// The tool_calls array of a message or delta, or null.
const json::array* tool_call_list(const json::object& m) {
  const json::value* calls = m.if_contains("tool_calls");
  return calls != nullptr ? calls->if_array() : nullptr;
}

/// Every function call of a whole message, in order: id, function.name and function.arguments
/// (entries that are no function call are skipped).
std::vector<tool_call> message_calls(const json::object& m) {
  std::vector<tool_call> out;
  const json::array* calls = tool_call_list(m);
  if (calls == nullptr) return out;
  for (const json::value& entry : *calls) {
    const json::object* c = entry.if_object();
    const json::object* fn = c != nullptr ? detail::wire::object_under(*c, "function") : nullptr;
    if (fn == nullptr) continue;
    out.push_back({string_or_empty(*c, "id"), string_or_empty(*fn, "name"), arguments_text(fn->if_contains("arguments"))});
  }
  return out;
}

/// Every entry of a streamed delta's tool_calls, in order: its "index" (its place in the array
/// when it has none), and what it carries of id, function.name and function.arguments.
std::vector<detail::tool_piece> delta_calls(const json::object& delta) {
  std::vector<detail::tool_piece> out;
  const json::array* calls = tool_call_list(delta);
  if (calls == nullptr) return out;
  out.reserve(calls->size());
  for (std::size_t i = 0; i < calls->size(); ++i) {
    const json::object* c = (*calls)[i].if_object();
    if (c == nullptr) continue;
    detail::tool_piece piece;
    piece.index = i;
    if (const json::value* index = c->if_contains("index")) {
      if (index->is_uint64()) piece.index = static_cast<std::size_t>(index->get_uint64());
      else if (index->is_int64() && index->get_int64() >= 0) piece.index = static_cast<std::size_t>(index->get_int64());
    }
    piece.id = string_or_empty(*c, "id");
    if (const json::object* fn = detail::wire::object_under(*c, "function")) {
      piece.name = string_or_empty(*fn, "name");
      piece.arguments = arguments_text(fn->if_contains("arguments"));
    }
    out.push_back(std::move(piece));
  }
  return out;
}

}  // namespace

namespace detail {

namespace {

/// A Chat Completions response body read as parse_reply() reads it in `form` (chat_response::mode
/// left as it is).
chat_response read_completion(std::string_view body, const reply_form& form) {
  if (wire::trim(body).empty()) bad_body("the response body is empty");
  boost::system::error_code ec;
  // The document lives only while its fields are copied out: its nodes come from a buffer on the
  // stack (then from a few large blocks), not from one heap allocation each.
  unsigned char buffer[4096];
  json::monotonic_resource nodes(buffer, sizeof buffer);
  json::value v = json::parse(body, ec, &nodes);
  if (ec) bad_body("the response body is not JSON (" + ec.message() + ")");
  if (!v.is_object()) bad_body("the response body is not a JSON object");
  const json::object& root = v.as_object();
  const json::value* choices = root.if_contains("choices");
  if (choices == nullptr) {
    if (root.contains("error")) bad_body("the server reported an error: " + server_error_message(body));
    bad_body("the response has no \"choices\"");
  }
  if (!choices->is_array() || choices->as_array().empty()) bad_body("the response's \"choices\" is empty or not an array");
  const json::value& first = choices->as_array().front();
  if (!first.is_object()) bad_body("choices[0] is not an object");
  const json::value* msg = first.as_object().if_contains("message");
  if (msg == nullptr || !msg->is_object()) bad_body("choices[0].message is missing or not an object");
  const json::object& m = msg->as_object();

  chat_response out;
  std::optional<std::string> text = content_text(m);
  if (form.agent) {
    // The calls apart from the content; in tools mode the first call of the answer tool is the
    // answer. A reply that only calls tools is whole without content.
    bool answered = false;
    for (tool_call& call : message_calls(m)) {
      if (!answered && form.mode == output_mode::tools && !form.answer_tool.empty() && call.name == form.answer_tool) {
        text = std::move(call.arguments);
        answered = true;
      } else {
        out.tool_calls.push_back(std::move(call));
      }
    }
    if (!text && !out.tool_calls.empty()) text.emplace();
  } else if (std::optional<std::string> args = tool_arguments(m); args && (!text || text->empty())) {
    // A tool call is the reply when there is one and no content beside it (output_mode::tools).
    text = std::move(args);
  }
  if (!text) {
    if (const auto* refusal = m.if_contains("refusal"); refusal != nullptr && refusal->is_string())
      bad_body("the model refused: " + one_line(refusal->as_string(), 300));
    bad_body("choices[0].message.content is missing or not a string");
  }
  out.text = std::move(*text);
  out.reasoning = reasoning_text(m);
  out.finish_reason = string_or_empty(first.as_object(), "finish_reason");
  out.model = string_or_empty(root, "model");
  out.id = string_or_empty(root, "id");
  if (const auto* u = root.if_contains("usage"); u != nullptr && u->is_object()) read_usage(u->as_object()).apply(out.usage);
  return out;
}

}  // namespace

chat_response parse_chat_completion(std::string_view body) { return read_completion(body, output_mode::json_schema); }

std::string server_error_message(std::string_view body, std::size_t max_chars) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (!ec) {
    if (const auto* o = v.if_object()) {
      const json::value* e = o->if_contains("error");
      if (e == nullptr) e = o->if_contains("detail");  // FastAPI-style servers
      if (e == nullptr) e = o->if_contains("message");
      if (e != nullptr) {
        if (e->is_string()) return one_line(e->as_string(), max_chars);
        if (const auto* eo = e->if_object()) {
          if (const auto* m = eo->if_contains("message"); m != nullptr && m->is_string())
            return one_line(m->as_string(), max_chars);
        }
        return one_line(json::serialize(*e), max_chars);
      }
    }
  }
  return one_line(body, max_chars);
}

stream_chunk parse_stream_chunk(std::string_view data) {
  stream_chunk out;
  boost::system::error_code ec;
  unsigned char buffer[2048];  // as in parse_chat_completion
  json::monotonic_resource nodes(buffer, sizeof buffer);
  json::value v = json::parse(data, ec, &nodes);
  if (ec || !v.is_object()) {
    out.malformed = true;
    return out;
  }
  const json::object& root = v.as_object();
  if (const json::value* e = root.if_contains("error"); e != nullptr && !e->is_null()) {
    out.error = server_error_message(data);
    return out;
  }
  out.model = string_or_empty(root, "model");
  out.id = string_or_empty(root, "id");
  if (const auto* u = root.if_contains("usage"); u != nullptr && u->is_object()) out.usage = read_usage(u->as_object());
  const json::value* choices = root.if_contains("choices");
  if (choices == nullptr || !choices->is_array() || choices->as_array().empty()) return out;
  const json::object* first = choices->as_array().front().if_object();
  if (first == nullptr) return out;
  if (const auto* fr = first->if_contains("finish_reason"); fr != nullptr && fr->is_string())
    out.finish_reason = std::string(fr->as_string());
  const json::value* delta = first->if_contains("delta");
  if (delta == nullptr) delta = first->if_contains("message");  // servers that send whole messages
  if (delta == nullptr || !delta->is_object()) return out;
  if (std::optional<std::string> text = content_text(delta->as_object())) out.content = std::move(*text);
  if (std::optional<std::string> args = tool_arguments(delta->as_object())) out.tool_arguments = std::move(*args);
  out.tools = delta_calls(delta->as_object());
  out.reasoning = reasoning_text(delta->as_object());
  return out;
}

namespace {

// The forced function's description in tools mode.
constexpr std::string_view tool_description = "Reply with the result as this function's arguments.";

/// What Chat Completions takes (OpenAI platform documentation, "Images and vision" and "File
/// inputs", as read in November 2026): PNG, JPEG, WebP and non-animated GIF images, as data URLs or
/// URLs, at most 500 in one request and 50 MB of payload in all; PDFs as data (file_data) up to
/// 32 MB; audio (input_audio) as WAV or MP3 data.
const media_limits& openai_limits() {
  static const media_limits limits{
      .provider = "OpenAI Chat Completions",
      .image_types = {"image/png", "image/jpeg", "image/webp", "image/gif"},
      .audio_types = {"audio/wav", "audio/mpeg"},
      .pdf = true,
      .image_urls = true,
      .pdf_urls = false,
      .max_image_bytes = 0,
      .max_pdf_bytes = 32u * 1024u * 1024u,
      .max_audio_bytes = 0,
      .max_images = 500,
      .max_total_bytes = 50u * 1024u * 1024u,
  };
  return limits;
}

/// A message's "content" as JSON text: its text alone as a string; with media, content parts:
/// the text, then for each media a text part with its reference ("<image 1>") and the media's part.
void write_content(std::string& out, const message& m, const http_engine_options& o);

/// A function tool: {"type": "function", "function": {"name", "description", "parameters", "strict": true}}.
json::object function_tool(std::string_view name, std::string_view description, const json::value& parameters) {
  json::object fn;
  fn["name"] = name;
  fn["description"] = description;
  fn["parameters"] = parameters;
  fn["strict"] = true;
  json::object tool;
  tool["type"] = "function";
  tool["function"] = std::move(fn);
  return tool;
}

/// The parameters of a tool that has no schema: an object without properties (strict form).
const json::value& no_parameters() {
  static const json::value empty =
      json::parse(R"({"type":"object","properties":{},"required":[],"additionalProperties":false})");
  return empty;
}

/// Whether a request has tools (an agent's turn).
bool has_tools(const chat_request& request) noexcept { return request.tools && !request.tools->empty(); }

/// Whether the request has tools, or a message that carries tool calls or a tool's result.
bool has_tool_parts(const chat_request& request) noexcept {
  return has_tools(request) || std::any_of(request.messages.begin(), request.messages.end(), [](const message& m) {
           return m.role == role::tool || !m.tool_calls.empty();
         });
}

// The `json_schema` name of a response format: the request's schema name, else the schema's
// title, as an API name.
std::string json_schema_name(const json::value& schema, std::string_view schema_name) {
  if (schema_name.empty()) {
    const json::value* title = schema.as_object().if_contains("title");
    if (title != nullptr && title->is_string()) schema_name = title->as_string();
  }
  return wire::api_name(schema_name);
}

class openai final : public wire_dialect {
 public:
  [[nodiscard]] std::string_view name() const noexcept override { return "openai"; }

  [[nodiscard]] std::string endpoint(std::string_view base) const override {
    constexpr std::string_view suffix = "/chat/completions";
    if (wire::iends_with(base, suffix)) return std::string(base);
    return std::string(base) + std::string(suffix);
  }

  /// GET {root}/models, the model list (also served by vLLM, llama.cpp, Ollama, LiteLLM).
  [[nodiscard]] std::string probe_url(std::string_view base) const override {
    constexpr std::string_view suffix = "/chat/completions";
    if (wire::iends_with(base, suffix)) base.remove_suffix(suffix.size());
    return std::string(base) + "/models";
  }

  [[nodiscard]] std::string_view auth_header_name() const noexcept override { return "authorization"; }

  [[nodiscard]] std::vector<std::string> auth_headers(const http_engine_options& o, bool own_auth) const override {
    if (o.api_key.empty() || own_auth) return {};
    return {"Authorization: Bearer " + o.api_key};
  }

  [[nodiscard]] std::vector<output_mode> modes() const override {
    return {output_mode::json_schema, output_mode::tools, output_mode::json_object, output_mode::prompt};
  }

  [[nodiscard]] output_mode nearest(output_mode asked) const noexcept override {
    return asked == output_mode::automatic ? output_mode::json_schema : asked;
  }

  [[nodiscard]] const media_limits& accepted_media() const noexcept override { return openai_limits(); }

  /// The field of the token limit: max_completion_tokens for a reasoning model (reasoning_effort
  /// set) unless the options name another field than max_tokens.
  static std::string_view token_field(const http_engine_options& o) noexcept {
    return !o.reasoning_effort.empty() && o.max_tokens_field == "max_tokens" ? std::string_view("max_completion_tokens")
                                                                             : std::string_view(o.max_tokens_field);
  }

  [[nodiscard]] json::object body(const chat_request& request, output_mode mode,
                                  const http_engine_options& o) const override {
    json::object body = o.extra_body;
    if (!o.model.empty()) body["model"] = o.model;
    json::array messages;
    messages.reserve(request.messages.size());
    for (const message& m : request.messages) {
      // A tool's result names its call; an assistant message with tool calls lists them (its
      // content null when it has no text).
      const bool calls = m.role == role::assistant && !m.tool_calls.empty();
      json::object jm;
      jm["role"] = to_string(m.role);
      if (m.role == role::tool) jm["tool_call_id"] = m.tool_call_id;
      if (!m.media.empty()) {
        std::string parts;
        write_content(parts, m, o);
        jm["content"] = json::parse(parts);
      } else if (calls && m.content.empty()) {
        jm["content"] = nullptr;
      } else {
        jm["content"] = m.content;
      }
      if (calls) {
        json::array list;
        list.reserve(m.tool_calls.size());
        for (const tool_call& c : m.tool_calls)
          list.emplace_back(json::object{{"id", c.id},
                                         {"type", "function"},
                                         {"function", json::object{{"name", c.name}, {"arguments", c.arguments}}}});
        jm["tool_calls"] = std::move(list);
      }
      messages.emplace_back(std::move(jm));
    }
    body["messages"] = std::move(messages);
    if (request.temperature && o.reasoning_effort.empty()) body["temperature"] = *request.temperature;
    if (request.max_tokens) body[token_field(o)] = *request.max_tokens;
    if (!o.reasoning_effort.empty()) body["reasoning_effort"] = o.reasoning_effort;
    const bool schema = request.response_schema && request.response_schema->is_object();
    // The request's tools, then in tools mode the answer function.
    json::array tools;
    if (has_tools(request)) {
      tools.reserve(request.tools->size() + 1);
      for (const tool_spec& t : *request.tools)
        tools.emplace_back(function_tool(t.name, t.description, t.parameters ? *t.parameters : no_parameters()));
    }
    std::string answer;
    switch (mode) {
      case output_mode::json_schema:
        if (schema && o.structured_outputs) {
          const json::value& schema_value = *request.response_schema;
          body["response_format"] =
              detail::response_format(schema_value, json_schema_name(schema_value, request.schema_name));
        }
        break;
      case output_mode::json_object: {
        json::object rf;
        rf["type"] = "json_object";
        body["response_format"] = std::move(rf);
        break;
      }
      case output_mode::tools:
        if (schema) {
          answer = wire::api_name(request.schema_name);
          tools.emplace_back(function_tool(answer, tool_description, *request.response_schema));
        }
        break;
      case output_mode::prompt:
      case output_mode::automatic:
        break;
    }
    if (!tools.empty()) body["tools"] = std::move(tools);
    if (!answer.empty()) {
      // With the request's tools the model must call one of them or the answer function, and
      // chooses which; alone, the answer function is forced.
      if (has_tools(request)) {
        body["tool_choice"] = "required";
      } else {
        json::object choice_fn;
        choice_fn["name"] = answer;
        json::object choice;
        choice["type"] = "function";
        choice["function"] = std::move(choice_fn);
        body["tool_choice"] = std::move(choice);
      }
    }
    if (request.stream) {
      body["stream"] = true;
      json::object so;
      so["include_usage"] = true;
      body["stream_options"] = std::move(so);
    }
    return body;
  }

  [[nodiscard]] std::string body_text(const chat_request& request, output_mode mode,
                                      const http_engine_options& o) const override;

  /// The answer function's name: the schema name as an API name.
  [[nodiscard]] std::string answer_tool_name(std::string_view schema_name) const override {
    return wire::api_name(schema_name);
  }

  [[nodiscard]] chat_response parse_reply(std::string_view body, const reply_form& form) const override {
    chat_response r = read_completion(body, form);
    r.mode = form.mode;
    return r;
  }

  [[nodiscard]] wire_event parse_event(std::string_view type, std::string_view data,
                                       const reply_form& form) const override {
    wire_event out;
    if (!type.empty() && type != "message") return out;  // only unnamed events carry chunks
    if (data == "[DONE]") {
      out.done = true;
      return out;
    }
    stream_chunk c = parse_stream_chunk(data);
    out.malformed = c.malformed;
    out.error = std::move(c.error);
    out.model = std::move(c.model);
    out.id = std::move(c.id);
    out.finish_reason = std::move(c.finish_reason);
    out.usage = c.usage;
    out.reasoning = std::move(c.reasoning);
    if (form.agent) {  // the content, and every call's pieces apart
      out.text = std::move(c.content);
      out.tools = std::move(c.tools);
      return out;
    }
    // In tools mode the reply is the forced call's arguments; otherwise the content (a server that
    // answers with a tool call anyway still gets read).
    out.text = form.mode == output_mode::tools
                   ? (c.tool_arguments.empty() ? std::move(c.content) : std::move(c.tool_arguments))
                   : (c.content.empty() ? std::move(c.tool_arguments) : std::move(c.content));
    return out;
  }
};

// Writes JSON text for openai::body_text: each value through one Boost.JSON serializer, so
// strings and numbers come out exactly as json::serialize writes them.
class json_text {
 public:
  explicit json_text(std::string& out) : out_(out) {}
  json_text& raw(std::string_view s) {
    out_.append(s);
    return *this;
  }
  json_text& str(std::string_view s) {
    sr_.reset(json::string_view(s.data(), s.size()));
    drain();
    return *this;
  }
  json_text& value(const json::value& v) {
    sr_.reset(&v);
    drain();
    return *this;
  }

 private:
  void drain() {
    char buf[1024];
    while (!sr_.done()) {
      const json::string_view part = sr_.read(buf, sizeof buf);
      out_.append(part.data(), part.size());
    }
  }
  std::string& out_;
  json::serializer sr_;
};

// The base64 of `bytes` after `prefix` as one JSON string (base64 needs no escaping).
void append_data(std::string& out, std::string_view prefix, std::string_view bytes) {
  out.push_back('"');
  out.append(prefix);
  detail::append_base64(out, bytes);
  out.push_back('"');
}

void write_content(std::string& out, const message& m, const http_engine_options& o) {
  json_text w(out);
  if (m.media.empty()) {
    w.str(m.content);
    return;
  }
  w.raw("[{\"type\":\"text\",\"text\":").str(m.content).raw("}");
  media_numbering numbering;
  for (const covenant::media& part : m.media) {
    const std::size_t n = numbering.next(part.kind());
    w.raw(",{\"type\":\"text\",\"text\":").str(media_reference(part.kind(), n)).raw("},");
    const std::string data_prefix = "data:" + part.media_type() + ";base64,";
    switch (part.kind()) {
      case media_kind::image:
        if (!part.is_url() && part.data().empty()) throw engine_error("an image part has no data and no URL");
        w.raw("{\"type\":\"image_url\",\"image_url\":{\"url\":");
        if (part.is_url()) w.str(part.url());
        else append_data(out, data_prefix, part.data());
        if (!o.image_detail.empty()) w.raw(",\"detail\":").str(o.image_detail);
        w.raw("}}");
        break;
      case media_kind::pdf:
        if (part.is_url() || part.data().empty())
          throw engine_error("Chat Completions takes a PDF as data only, not as a URL or a reference");
        w.raw("{\"type\":\"file\",\"file\":{\"filename\":").str(part.file_name(n)).raw(",\"file_data\":");
        append_data(out, data_prefix, part.data());
        w.raw("}}");
        break;
      case media_kind::audio:
        if (part.is_url() || part.data().empty())
          throw engine_error("Chat Completions takes audio as data only, not as a URL or a reference");
        w.raw("{\"type\":\"input_audio\",\"input_audio\":{\"data\":");
        append_data(out, {}, part.data());
        w.raw(",\"format\":").str(part.media_type() == "audio/mpeg" ? "mp3" : "wav").raw("}}");
        break;
    }
  }
  w.raw("]");
}

}  // namespace

std::string openai::body_text(const chat_request& request, output_mode mode, const http_engine_options& o) const {
  // Extra fields, or a token-limit field that could also be one of the body's own keys, change
  // where the body's fields go: built as a document then; so is a body with tools, tool calls or
  // tools' results.
  if (!o.extra_body.empty() || (o.max_tokens_field != "max_tokens" && o.max_tokens_field != "max_completion_tokens") ||
      has_tool_parts(request))
    return wire_dialect::body_text(request, mode, o);
  const json::value* schema =
      request.response_schema && request.response_schema->is_object() ? request.response_schema.get() : nullptr;
  std::size_t size = 160;
  for (const message& m : request.messages) {
    size += m.content.size() + 32;
    for (const covenant::media& part : m.media) size += detail::base64_length(part.size()) + part.url().size() + 160;
  }
  std::string out;
  out.reserve(size + (schema != nullptr ? 1024 : 0));
  json_text w(out);
  // The fields in the order body() adds them.
  w.raw("{");
  if (!o.model.empty()) w.raw("\"model\":").str(o.model).raw(",");
  w.raw("\"messages\":[");
  for (std::size_t i = 0; i < request.messages.size(); ++i) {
    const message& m = request.messages[i];
    w.raw(i == 0 ? "{\"role\":" : ",{\"role\":").str(to_string(m.role)).raw(",\"content\":");
    write_content(out, m, o);
    w.raw("}");
  }
  w.raw("]");
  if (request.temperature && o.reasoning_effort.empty())
    w.raw(",\"temperature\":").value(json::value(*request.temperature));
  if (request.max_tokens) w.raw(",\"").raw(token_field(o)).raw("\":").value(json::value(*request.max_tokens));
  if (!o.reasoning_effort.empty()) w.raw(",\"reasoning_effort\":").str(o.reasoning_effort);
  switch (mode) {
    case output_mode::json_schema:
      if (schema != nullptr && o.structured_outputs) {
        w.raw(",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":")
            .str(json_schema_name(*schema, request.schema_name))
            .raw(",\"strict\":true,\"schema\":")
            .value(*schema)
            .raw("}}");
      }
      break;
    case output_mode::json_object: w.raw(",\"response_format\":{\"type\":\"json_object\"}"); break;
    case output_mode::tools:
      if (schema != nullptr) {
        const std::string name = wire::api_name(request.schema_name);
        w.raw(",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":")
            .str(name)
            .raw(",\"description\":")
            .str(tool_description)
            .raw(",\"parameters\":")
            .value(*schema)
            .raw(",\"strict\":true}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":")
            .str(name)
            .raw("}}");
      }
      break;
    case output_mode::prompt:
    case output_mode::automatic: break;
  }
  if (request.stream) w.raw(",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
  w.raw("}");
  return out;
}

std::unique_ptr<wire_dialect> openai_dialect() { return std::make_unique<openai>(); }

bool is_mode_refusal(int status, std::string_view error_text) noexcept {
  if (status != 400 && status != 422) return false;
  std::string lower;
  try {
    lower.reserve(error_text.size());
    for (char c : error_text) lower.push_back((c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c);
  } catch (...) {
    return false;
  }
  static constexpr std::array<std::string_view, 7> words{"response_format", "json_schema", "json_object", "tool_choice",
                                                         "tools", "functions", "structured output"};
  return std::any_of(words.begin(), words.end(), [&](std::string_view w) { return lower.find(w) != std::string::npos; });
}

}  // namespace detail

}  // namespace covenant
