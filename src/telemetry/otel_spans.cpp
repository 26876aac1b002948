// The spans, attributes and metrics of a contract call, built from the observer's events: the
// GenAI semantic conventions' chat spans and their attributes, the captured content (redacted, media
// never as bytes) and the client histograms.
#include <boost/json/array.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "otel_state.hpp"

namespace covenant {

using namespace otel_detail;

namespace json = boost::json;

namespace otel_detail {

std::vector<std::string> issue_paths(const issue_list& issues) {
  std::vector<std::string> out;
  out.reserve(issues.size());
  for (const issue& i : issues) out.push_back(i.path.to_string());
  return out;
}

std::vector<std::string> issue_codes(const issue_list& issues) {
  std::vector<std::string> out;
  out.reserve(issues.size());
  for (const issue& i : issues) out.emplace_back(to_string(i.code));
  return out;
}

/// error.type of a failed model call: the HTTP status, else the kind of failure.
std::string engine_error_type(const attempt& a) {
  if (a.issues.empty()) return "_OTHER";
  const issue& i = a.issues.front();
  if (i.code == issue_code::cancelled) return "cancelled";
  if (i.code == issue_code::deadline) return "deadline";
  const std::string& m = i.message;
  if (const auto at = m.find("(HTTP "); at != std::string::npos) {
    const auto end = m.find(')', at);
    if (end != std::string::npos) return m.substr(at + 6, end - at - 6);
  }
  if (m.find("timed out") != std::string::npos) return "timeout";
  if (m.find("connection failed") != std::string::npos) return "connection_failed";
  return "_OTHER";
}

}  // namespace otel_detail

// ---- attributes

/// What every span and metric of a model request says about where it went.
void otel_tracer::impl::server_attributes(otlp::attributes& a, const call_info& info, bool with_model) const {
  const engine_info* e = info.engine;
  a.str("gen_ai.operation.name", "chat");
  const std::string provider = e != nullptr && !e->provider.empty() ? e->provider : "unknown";
  a.str("gen_ai.provider.name", provider);
  if (!o.latest_semconv_only) a.str("gen_ai.system", provider);
  if (with_model && e != nullptr && !e->model.empty()) a.str("gen_ai.request.model", e->model);
  if (e != nullptr && !e->server_address.empty()) {
    a.str("server.address", e->server_address);
    if (e->server_port > 0) a.integer("server.port", e->server_port);
  }
}

/// The metrics of one model call (an answer attempt or an agent step): recorded for every call,
/// sampled or not.
void otel_tracer::impl::record_metrics(const call_info& info, const usage& u, const std::string& response_model,
                    std::chrono::nanoseconds engine_time, std::chrono::nanoseconds first, const std::string& error) {
  thread_local std::string key;
  key.clear();
  const engine_info* e = info.engine;
  if (e != nullptr) {
    key += e->provider;
    key.push_back('\x1f');
    key += e->model;
    key.push_back('\x1f');
    key += e->server_address;
    key.push_back('\x1f');
    key += std::to_string(e->server_port);
  }
  key.push_back('\x1f');
  key += response_model;
  key.push_back('\x1f');
  key += error;
  otlp::attributes a;
  auto attrs = [&]() -> const otlp::attributes& {
    if (a.list.empty()) {
      server_attributes(a, info, true);
      if (!response_model.empty()) a.str("gen_ai.response.model", response_model);
      if (!error.empty()) a.str("error.type", error);
    }
    return a;
  };
  // The attributes are built only when a series is new.
  auto observe = [&](histogram_metric& m, std::string_view k, double v, const char* token_type) {
    if (m.observe_existing(k, v)) return;
    otlp::attributes with = attrs();
    if (token_type != nullptr) with.str("gen_ai.token.type", token_type);
    m.observe(k, with, v);
  };
  observe(duration, key, seconds(engine_time), nullptr);
  if (first.count() > 0) observe(first_chunk, key, seconds(first), nullptr);
  if (error.empty() || u.total() > 0) {
    const std::size_t n = key.size();
    key += "\x1finput";
    observe(token_usage, key, static_cast<double>(u.input_tokens), "input");
    key.resize(n);
    key += "\x1foutput";
    observe(token_usage, key, static_cast<double>(u.output_tokens), "output");
  }
}

// ---- content (capture_content)

json::object otel_tracer::impl::text_part(const std::string& text) const {
  return json::object{{"type", "text"}, {"content", redacted(text)}};
}

/// A tool call's arguments as the conventions want them: an object when they read as JSON.
json::value otel_tracer::impl::arguments_value(const std::string& text) const {
  const std::string r = redacted(text);
  boost::system::error_code ec;
  json::value v = json::parse(r, ec);
  if (!ec) return v;
  return json::value(r);
}

void otel_tracer::impl::capture_request(pending_request& p, const chat_request& r) const {
  json::array system;
  json::array input;
  for (const message& m : r.messages) {
    if (m.role == role::system) {
      system.push_back(text_part(m.content));
      continue;
    }
    json::array parts;
    if (m.role == role::tool) {
      parts.push_back(json::object{{"type", "tool_call_response"}, {"id", m.tool_call_id}, {"response", redacted(m.content)}});
    } else {
      if (!m.content.empty()) parts.push_back(text_part(m.content));
      for (const covenant::media& x : m.media) {  // what was sent, never its bytes
        const char* modality = x.kind() == media_kind::image ? "image" : x.kind() == media_kind::audio ? "audio" : "";
        if (x.is_url()) {
          json::object u{{"type", "uri"}, {"mime_type", x.media_type()}, {"uri", redacted(x.url())}};
          if (*modality != '\0') u["modality"] = modality;
          parts.push_back(std::move(u));
        } else {
          json::object b{{"type", "media"}, {"mime_type", x.media_type()}, {"size", x.size()}};
          if (*modality != '\0') b["modality"] = modality;
          parts.push_back(std::move(b));
        }
      }
      for (const tool_call& c : m.tool_calls)
        parts.push_back(json::object{{"type", "tool_call"}, {"id", c.id}, {"name", c.name}, {"arguments", arguments_value(c.arguments)}});
    }
    input.push_back(json::object{{"role", std::string(to_string(m.role))}, {"parts", std::move(parts)}});
  }
  if (!system.empty()) p.system_instructions = json::serialize(system);
  p.input_messages = json::serialize(input);
}

std::string otel_tracer::impl::output_messages(const std::string& text, const std::vector<tool_call>& calls,
                                                 const std::string& finish) const {
  json::array parts;
  if (!text.empty()) parts.push_back(text_part(text));
  for (const tool_call& c : calls)
    parts.push_back(json::object{{"type", "tool_call"}, {"id", c.id}, {"name", c.name}, {"arguments", arguments_value(c.arguments)}});
  json::array out;
  out.push_back(json::object{{"role", "assistant"}, {"parts", std::move(parts)}, {"finish_reason", finish.empty() ? "stop" : finish}});
  return json::serialize(out);
}

// ---- spans

/// The chat span of a model request, from what the request and its reply said.
otlp::span otel_tracer::impl::chat_span(const call_record& r, const pending_request& p, const call_info& info) const {
  otlp::span s;
  s.trace_id = r.context.trace_id;
  s.span_id = p.span_id;
  s.parent_span_id = r.context.span_id;
  s.has_parent = true;
  s.trace_flags = r.context.flags;
  s.trace_state = r.context.tracestate;
  s.kind = otlp::span_kind::client;
  s.start = p.start;
  const engine_info* e = info.engine;
  s.name = e != nullptr && !e->model.empty() ? "chat " + e->model : std::string("chat");
  s.attributes.list.reserve(24);
  server_attributes(s.attributes, info, true);
  if (p.json_output) s.attributes.str("gen_ai.output.type", "json");
  if (p.temperature) s.attributes.floating("gen_ai.request.temperature", *p.temperature);
  if (p.max_tokens) s.attributes.integer("gen_ai.request.max_tokens", *p.max_tokens);
  if (p.stream) s.attributes.boolean("gen_ai.request.stream", true);
  if (!p.system_instructions.empty()) s.attributes.str("gen_ai.system_instructions", p.system_instructions);
  if (!p.input_messages.empty()) s.attributes.str("gen_ai.input.messages", p.input_messages);
  return s;
}

void otel_tracer::impl::response_attributes(otlp::span& s, const std::string& id, const std::string& model,
                                                  const std::string& finish, const usage& u) {
  if (!id.empty()) s.attributes.str("gen_ai.response.id", id);
  if (!model.empty()) s.attributes.str("gen_ai.response.model", model);
  if (!finish.empty()) s.attributes.strings("gen_ai.response.finish_reasons", {finish});
  s.attributes.integer("gen_ai.usage.input_tokens", static_cast<std::int64_t>(u.input_tokens));
  s.attributes.integer("gen_ai.usage.output_tokens", static_cast<std::int64_t>(u.output_tokens));
  if (u.cached_input_tokens > 0)
    s.attributes.integer("gen_ai.usage.cache_read.input_tokens", static_cast<std::int64_t>(u.cached_input_tokens));
  if (u.cache_write_tokens > 0)
    s.attributes.integer("gen_ai.usage.cache_creation.input_tokens", static_cast<std::int64_t>(u.cache_write_tokens));
  if (u.reasoning_tokens > 0)
    s.attributes.integer("gen_ai.usage.reasoning.output_tokens", static_cast<std::int64_t>(u.reasoning_tokens));
}

void otel_tracer::impl::retry_events(otlp::span& s, const std::vector<transport_retry>& retries) {
  for (const transport_retry& t : retries) {
    otlp::event e;
    e.time = unix_of(t.at);
    if (e.time == 0) e.time = s.start;
    e.name = t.status == 429 ? "covenant.rate_limit.wait" : "covenant.transport.retry";
    e.attributes.integer("covenant.retry.number", t.retry);
    if (t.status > 0) e.attributes.integer("http.response.status_code", t.status);
    e.attributes.floating("covenant.retry.wait", seconds(t.wait));
    e.attributes.str("covenant.retry.reason", t.reason);
    add_event(s, std::move(e));
  }
}

/// Ends the chat span of an agent step.
void otel_tracer::impl::end_step(call_record& r, const pending_request& p, const agent_step& st, const call_info& info) {
  otlp::span s = chat_span(r, p, info);
  s.end = p.start + ns_of(st.queued + st.latency);
  response_attributes(s, st.response_id, st.model, st.finish_reason, st.usage);
  s.attributes.integer("covenant.agent.step", st.number);
  s.attributes.integer("covenant.agent.tool_calls", static_cast<std::int64_t>(st.tools.size()));
  if (o.capture_content) {
    std::vector<tool_call> calls;
    calls.reserve(st.tools.size());
    for (const tool_run& t : st.tools) calls.push_back(t.call);
    s.attributes.str("gen_ai.output.messages", output_messages(st.text, calls, st.finish_reason));
  }
  retry_events(s, st.transport_retries);
  r.spans.push_back(std::move(s));
}

}  // namespace covenant
