// The OpenTelemetry tracer: contract calls' events into GenAI spans and metrics (semantic
// conventions v1.41.0), a bounded queue, and batched OTLP/HTTP exports off the calls' path.
//
// Where things run: the observer callbacks (on the calls' threads) record times and build a call's
// spans in a record of their own (a map of records, locked only to find one); on_finished puts the
// call's spans on the queue (one lock, no allocation beyond the queue's). An export is started by
// the schedule timer (runtime::schedule: a timer on the I/O loop, the callback on a worker) or by a
// full batch (runtime::post): the worker takes a batch, encodes it and hands it to the poster,
// whose transfer runs on the I/O loop (otlp_http.cpp). One span export and one metric export are
// in flight at most.
#include "covenant/telemetry/otel.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "covenant/engine/runtime.hpp"
#include "covenant/telemetry/metrics_text.hpp"
#include "covenant/types/version.hpp"
#include "engine/log.hpp"
#include "engine/redaction.hpp"
#include "otlp.hpp"
#include "otlp_http.hpp"

namespace covenant {

namespace {

namespace json = boost::json;

constexpr const char* schema_url = "https://opentelemetry.io/schemas/1.41.0";
constexpr std::size_t max_events_per_span = 128;
constexpr std::size_t max_calls_recorded = 100000;  // records of calls in flight, at most

std::uint64_t unix_now() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

std::uint64_t unix_of(std::chrono::system_clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return ns < 0 ? 0 : static_cast<std::uint64_t>(ns);
}

std::uint64_t ns_of(std::chrono::nanoseconds d) { return d.count() < 0 ? 0 : static_cast<std::uint64_t>(d.count()); }

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

std::uint64_t key_of(const std::array<std::uint8_t, 8>& id) {
  std::uint64_t k = 0;
  for (std::uint8_t b : id) k = (k << 8) | b;
  return k;
}

/// The W3C `sampled` decision of the TraceIdRatioBased sampler: the trace id's last 8 bytes, read
/// as a big-endian number, under ratio * 2^64.
bool ratio_sampled(const std::array<std::uint8_t, 16>& trace_id, double ratio) {
  if (ratio >= 1.0) return true;
  if (ratio <= 0.0) return false;
  std::uint64_t x = 0;
  for (std::size_t i = 8; i < 16; ++i) x = (x << 8) | trace_id[i];
  return static_cast<double>(x) < ratio * 18446744073709551616.0;
}

void add_event(otlp::span& s, otlp::event e) {
  if (s.events.size() >= max_events_per_span) {
    ++s.dropped_events;
    return;
  }
  s.events.push_back(std::move(e));
}

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

// ---- metrics ------------------------------------------------------------------------------------

/// One histogram of the conventions, its series keyed by their attributes.
struct histogram_metric {
  const char* name;
  const char* description;
  const char* unit;
  std::vector<double> bounds;

  struct series {
    otlp::attributes attributes;
    prometheus::histogram h;
    explicit series(std::vector<double> b) : h(std::move(b)) {}
  };
  mutable std::shared_mutex mutex;
  std::map<std::string, std::unique_ptr<series>, std::less<>> all;

  histogram_metric(const char* n, const char* d, const char* u, std::vector<double> b)
      : name(n), description(d), unit(u), bounds(std::move(b)) {}

  /// Adds `v` to the series `key` when it exists (a shared lock); false when it does not.
  bool observe_existing(std::string_view key, double v) {
    std::shared_lock lock(mutex);
    auto it = all.find(key);
    if (it == all.end()) return false;
    it->second->h.observe(v);
    return true;
  }

  /// Adds `v` to the series of `attrs` (whose key is `key`), made when it is new.
  void observe(std::string_view key, const otlp::attributes& attrs, double v) {
    if (observe_existing(key, v)) return;
    std::unique_lock lock(mutex);
    auto it = all.find(key);
    if (it == all.end()) {
      if (all.size() >= 1000) return;  // cardinality bound (models, servers, error types)
      auto s = std::make_unique<series>(bounds);
      s->attributes = attrs;
      it = all.emplace(std::string(key), std::move(s)).first;
    }
    it->second->h.observe(v);
  }

  [[nodiscard]] otlp::metric collect(std::uint64_t start, std::uint64_t now) const {
    otlp::metric m;
    m.name = name;
    m.description = description;
    m.unit = unit;
    std::shared_lock lock(mutex);
    for (const auto& [key, s] : all) {
      const prometheus::histogram_data d = s->h.collect();
      otlp::histogram_point p;
      p.attributes = s->attributes;
      p.start = start;
      p.time = now;
      p.count = d.count;
      p.sum = d.sum;
      p.bounds = d.upper_bounds;
      std::uint64_t below = 0;
      for (std::uint64_t c : d.cumulative_counts) {  // OTLP counts per bucket, not cumulative
        p.bucket_counts.push_back(c - below);
        below = c;
      }
      p.bucket_counts.push_back(d.count - below);
      m.histogram_points.push_back(std::move(p));
    }
    return m;
  }
};

}  // namespace

// ---- the tracer's state ------------------------------------------------------------------------

/// A model request of a recorded call whose span has not ended yet.
struct pending_request {
  std::array<std::uint8_t, 8> span_id{};
  std::uint64_t start = 0;
  bool stream = false;
  attempt_kind kind = attempt_kind::output;
  int attempt = 1;
  std::optional<double> temperature;
  std::optional<std::uint32_t> max_tokens;
  bool json_output = false;
  std::string system_instructions;  // captured content (JSON), or empty
  std::string input_messages;
};

/// A recorded call: its context, its requests and tools in flight, its ended child spans.
struct call_record {
  trace_context context;
  std::array<std::uint8_t, 8> parent{};
  bool has_parent = false;
  std::uint64_t start = 0;
  std::deque<pending_request> requests;
  std::vector<std::pair<std::string, std::uint64_t>> tools;  // tool call id, start
  std::vector<otlp::span> spans;
  std::vector<otlp::event> events;
};

struct otel_tracer::impl : std::enable_shared_from_this<impl> {
  otel_options o;
  runtime* rt = nullptr;
  otlp::origin origin;
  std::unique_ptr<otlp::poster> span_poster;
  std::unique_ptr<otlp::poster> metric_poster;
  std::vector<std::string> secrets;
  std::uint64_t started_unix = unix_now();

  // Calls in flight that are recorded.
  std::mutex calls_mutex;
  std::unordered_map<std::uint64_t, std::unique_ptr<call_record>> calls;

  // The queue and the exports.
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::deque<otlp::span> queue;
  bool span_export_running = false;
  bool metric_export_running = false;
  bool stopped = false;
  int flushing = 0;  // flush() calls waiting: exports go on with partial batches
  otel_stats stats;
  timer span_timer;
  timer metric_timer;

  // Metrics.
  histogram_metric token_usage{"gen_ai.client.token.usage", "Number of input and output tokens used.", "{token}",
                               {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216,
                                67108864}};
  histogram_metric duration{"gen_ai.client.operation.duration", "GenAI operation duration.", "s",
                            {0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}};
  histogram_metric first_chunk{"gen_ai.client.operation.time_to_first_chunk",
                               "Time to receive the first chunk, measured from when the client issues the generation "
                               "request to when the first chunk is received in the response stream.",
                               "s",
                               {0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}};

  [[nodiscard]] std::string redacted(const std::string& text) const {
    return cassette_impl::redact_text(text, secrets);
  }

  // ---- sampling and records

  [[nodiscard]] bool sample(const trace_context* parent, const std::array<std::uint8_t, 16>& trace_id) const {
    switch (o.sampler) {
      case otel_sampler::always_on: return true;
      case otel_sampler::always_off: return false;
      case otel_sampler::traceidratio: return ratio_sampled(trace_id, o.sampler_ratio);
      case otel_sampler::parentbased_always_on: return parent != nullptr ? parent->sampled() : true;
      case otel_sampler::parentbased_always_off: return parent != nullptr ? parent->sampled() : false;
      case otel_sampler::parentbased_traceidratio:
        return parent != nullptr ? parent->sampled() : ratio_sampled(trace_id, o.sampler_ratio);
    }
    return true;
  }

  /// A new span's context under `parent` (or a new trace), when sampled.
  [[nodiscard]] std::optional<trace_context> new_context(const trace_context* parent) const {
    trace_context c;
    c.trace_id = parent != nullptr ? parent->trace_id : new_trace_id();
    if (!sample(parent, c.trace_id)) return std::nullopt;
    c.span_id = new_span_id();
    c.flags = 1;
    if (parent != nullptr) c.tracestate = parent->tracestate;
    return c;
  }

  /// The record of the call `info` belongs to, or null when it is not recorded here.
  call_record* find(const call_info& info) {
    if (info.trace == nullptr) return nullptr;
    std::lock_guard lock(calls_mutex);
    auto it = calls.find(key_of(info.trace->span_id));
    if (it == calls.end() || it->second->context.trace_id != info.trace->trace_id) return nullptr;
    return it->second.get();
  }

  std::unique_ptr<call_record> take(const call_info& info) {
    if (info.trace == nullptr) return nullptr;
    std::lock_guard lock(calls_mutex);
    auto it = calls.find(key_of(info.trace->span_id));
    if (it == calls.end() || it->second->context.trace_id != info.trace->trace_id) return nullptr;
    std::unique_ptr<call_record> r = std::move(it->second);
    calls.erase(it);
    return r;
  }

  // ---- attributes

  /// What every span and metric of a model request says about where it went.
  void server_attributes(otlp::attributes& a, const call_info& info, bool with_model) const {
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
  void record_metrics(const call_info& info, const usage& u, const std::string& response_model,
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

  [[nodiscard]] json::object text_part(const std::string& text) const {
    return json::object{{"type", "text"}, {"content", redacted(text)}};
  }

  /// A tool call's arguments as the conventions want them: an object when they read as JSON.
  [[nodiscard]] json::value arguments_value(const std::string& text) const {
    const std::string r = redacted(text);
    boost::system::error_code ec;
    json::value v = json::parse(r, ec);
    if (!ec) return v;
    return json::value(r);
  }

  void capture_request(pending_request& p, const chat_request& r) const {
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

  [[nodiscard]] std::string output_messages(const std::string& text, const std::vector<tool_call>& calls,
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
  otlp::span chat_span(const call_record& r, const pending_request& p, const call_info& info) const {
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

  static void response_attributes(otlp::span& s, const std::string& id, const std::string& model,
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

  static void retry_events(otlp::span& s, const std::vector<transport_retry>& retries) {
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
  void end_step(call_record& r, const pending_request& p, const agent_step& st, const call_info& info) {
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

  void push(std::vector<otlp::span>&& spans);
  void start_span_export();
  void export_spans();
  void export_metrics();
  void arm_span_timer();
  void arm_metric_timer();
  std::vector<otlp::metric> collect_metrics();
};

// ---- the queue and the exports -----------------------------------------------------------------

void otel_tracer::impl::push(std::vector<otlp::span>&& spans) {
  if (spans.empty()) return;
  const std::uint64_t n = spans.size();
  bool start = false;
  {
    std::lock_guard lock(mutex);
    stats.spans_recorded += n;
    if (stopped || !span_poster || queue.size() + spans.size() > o.max_queue_size) {
      stats.spans_dropped += n;
      if (!stopped && span_poster) stats.spans_dropped_queue_full += n;
      return;
    }
    for (otlp::span& s : spans) queue.push_back(std::move(s));
    stats.spans_queued = queue.size();
    stats.max_spans_queued = std::max<std::uint64_t>(stats.max_spans_queued, queue.size());
    if (queue.size() >= o.max_export_batch_size && !span_export_running) {
      span_export_running = true;
      start = true;
    }
  }
  if (start) start_span_export();
}

void otel_tracer::impl::start_span_export() {
  std::weak_ptr<impl> self = weak_from_this();
  rt->post([self] {
    if (auto p = self.lock()) p->export_spans();
  });
}

/// On a worker, with span_export_running set: takes a batch, encodes it and sends it.
void otel_tracer::impl::export_spans() {
  std::vector<otlp::span> batch;
  {
    std::lock_guard lock(mutex);
    const std::size_t n = std::min(queue.size(), o.max_export_batch_size);
    batch.reserve(n);
    for (std::size_t k = 0; k < n; ++k) {
      batch.push_back(std::move(queue.front()));
      queue.pop_front();
    }
    stats.spans_queued = queue.size();
    if (batch.empty()) {
      span_export_running = false;
      changed.notify_all();
      return;
    }
    ++stats.exports_in_flight;
  }
  std::string body;
  try {
    body = o.protocol == otlp_protocol::http_protobuf ? otlp::traces_protobuf(origin, batch) : otlp::traces_json(origin, batch);
  } catch (...) {
    std::lock_guard lock(mutex);
    stats.spans_dropped += batch.size();
    ++stats.export_failures;
    ++stats.exports;
    --stats.exports_in_flight;
    span_export_running = false;
    changed.notify_all();
    return;
  }
  const std::uint64_t n = batch.size();
  batch.clear();
  std::weak_ptr<impl> self = weak_from_this();
  span_poster->post(std::move(body), [self, n](const otlp::post_result& r) {
    auto p = self.lock();
    if (!p) return;
    bool again = false;
    {
      std::lock_guard lock(p->mutex);
      ++p->stats.exports;
      --p->stats.exports_in_flight;
      p->stats.export_retries += static_cast<std::uint64_t>(r.retries);
      if (r.ok) {
        const std::uint64_t rejected = std::min<std::uint64_t>(n, static_cast<std::uint64_t>(std::max<std::int64_t>(0, r.rejected)));
        p->stats.spans_exported += n - rejected;
        p->stats.spans_dropped += rejected;
      } else {
        p->stats.spans_dropped += n;
        ++p->stats.export_failures;
      }
      again = !p->queue.empty() && (p->queue.size() >= p->o.max_export_batch_size || p->flushing > 0 || p->stopped);
      p->span_export_running = again;
      p->changed.notify_all();
    }
    if (!r.ok) detail::log_warn("otel: a span export to the collector failed ({}); its {} spans are dropped", r.error, n);
    if (again) p->start_span_export();
  });
}

std::vector<otlp::metric> otel_tracer::impl::collect_metrics() {
  const std::uint64_t now = unix_now();
  std::vector<otlp::metric> out;
  for (histogram_metric* m : {&token_usage, &duration, &first_chunk}) {
    otlp::metric x = m->collect(started_unix, now);
    if (!x.histogram_points.empty()) out.push_back(std::move(x));
  }
  // The exporter's own counts (semantic conventions, "OTel SDK metrics").
  otel_stats st;
  {
    std::lock_guard lock(mutex);
    st = stats;
  }
  otlp::metric processed;
  processed.name = "otel.sdk.processor.span.processed";
  processed.description = "The number of spans for which the processing has finished, either successful or failed.";
  processed.unit = "{span}";
  processed.histogram = false;
  auto point = [&](std::int64_t value, const char* type, const char* error) {
    otlp::sum_point p;
    p.start = started_unix;
    p.time = now;
    p.value = value;
    p.attributes.str("otel.component.type", type);
    if (error != nullptr) p.attributes.str("error.type", error);
    return p;
  };
  const auto queue_full = static_cast<std::int64_t>(st.spans_dropped_queue_full);
  processed.sum_points.push_back(point(static_cast<std::int64_t>(st.spans_recorded) - queue_full, "batching_span_processor", nullptr));
  processed.sum_points.push_back(point(queue_full, "batching_span_processor", "queue_full"));
  out.push_back(std::move(processed));
  otlp::metric exported;
  exported.name = "otel.sdk.exporter.span.exported";
  exported.description = "The number of spans for which the export has finished, either successful or failed.";
  exported.unit = "{span}";
  exported.histogram = false;
  const char* exporter = o.protocol == otlp_protocol::http_protobuf ? "otlp_http_span_exporter" : "otlp_http_json_span_exporter";
  exported.sum_points.push_back(point(static_cast<std::int64_t>(st.spans_exported), exporter, nullptr));
  exported.sum_points.push_back(
      point(static_cast<std::int64_t>(st.spans_dropped - st.spans_dropped_queue_full), exporter, "rejected"));
  out.push_back(std::move(exported));
  return out;
}

/// On a worker: the metrics' state now, sent (one metric export at a time).
void otel_tracer::impl::export_metrics() {
  {
    std::lock_guard lock(mutex);
    if (metric_export_running || !metric_poster) return;
    metric_export_running = true;
  }
  std::string body;
  try {
    const std::vector<otlp::metric> m = collect_metrics();
    body = o.protocol == otlp_protocol::http_protobuf ? otlp::metrics_protobuf(origin, m) : otlp::metrics_json(origin, m);
  } catch (...) {
    std::lock_guard lock(mutex);
    metric_export_running = false;
    ++stats.metric_exports;
    ++stats.metric_export_failures;
    changed.notify_all();
    return;
  }
  std::weak_ptr<impl> self = weak_from_this();
  metric_poster->post(std::move(body), [self](const otlp::post_result& r) {
    auto p = self.lock();
    if (!p) return;
    std::lock_guard lock(p->mutex);
    ++p->stats.metric_exports;
    if (!r.ok) ++p->stats.metric_export_failures;
    p->metric_export_running = false;
    p->changed.notify_all();
  });
}

void otel_tracer::impl::arm_span_timer() {
  std::weak_ptr<impl> self = weak_from_this();
  span_timer = rt->schedule(o.schedule_delay, [self] {
    auto p = self.lock();
    if (!p) return;
    bool start = false;
    {
      std::lock_guard lock(p->mutex);
      if (p->stopped) return;
      if (!p->queue.empty() && !p->span_export_running) {
        p->span_export_running = true;
        start = true;
      }
    }
    if (start) p->export_spans();
    p->arm_span_timer();
  });
}

void otel_tracer::impl::arm_metric_timer() {
  std::weak_ptr<impl> self = weak_from_this();
  metric_timer = rt->schedule(o.metric_interval, [self] {
    auto p = self.lock();
    if (!p) return;
    {
      std::lock_guard lock(p->mutex);
      if (p->stopped) return;
    }
    p->export_metrics();
    p->arm_metric_timer();
  });
}

// ---- otel_span ---------------------------------------------------------------------------------

struct otel_span::state {
  std::weak_ptr<otel_tracer::impl> tracer;
  trace_context context;  // the span's own (recording) or the parent's (not recording)
  bool recording = false;
  bool ended = false;
  otlp::span span;
};

otel_span::otel_span() noexcept = default;
otel_span::otel_span(std::unique_ptr<state> s) noexcept : s_(std::move(s)) {}
otel_span::~otel_span() {
  try {
    end();
  } catch (...) {
  }
}
otel_span::otel_span(otel_span&&) noexcept = default;
otel_span& otel_span::operator=(otel_span&& other) noexcept {
  if (this != &other) {
    try {
      end();
    } catch (...) {
    }
    s_ = std::move(other.s_);
  }
  return *this;
}

const trace_context& otel_span::context() const noexcept {
  static const trace_context none;
  return s_ ? s_->context : none;
}
bool otel_span::recording() const noexcept { return s_ && s_->recording && !s_->ended; }

namespace {
otlp::attribute& keyed(otlp::span& s, std::string_view key) {
  for (otlp::attribute& a : s.attributes.list)
    if (a.name() == key) return a;
  otlp::attribute& a = s.attributes.list.emplace_back();
  a.own_key = std::string(key);
  return a;
}
}  // namespace

void otel_span::set(std::string_view key, std::string_view value) {
  if (!recording()) return;
  otlp::attribute& a = keyed(s_->span, key);
  a.v = otlp::value{};
  a.v.s = std::string(value);
}
void otel_span::set(std::string_view key, std::int64_t value) {
  if (!recording()) return;
  otlp::attribute& a = keyed(s_->span, key);
  a.v = otlp::value{};
  a.v.t = otlp::value::type::integer;
  a.v.i = value;
}
void otel_span::set(std::string_view key, double value) {
  if (!recording()) return;
  otlp::attribute& a = keyed(s_->span, key);
  a.v = otlp::value{};
  a.v.t = otlp::value::type::floating;
  a.v.d = value;
}
void otel_span::set(std::string_view key, bool value) {
  if (!recording()) return;
  otlp::attribute& a = keyed(s_->span, key);
  a.v = otlp::value{};
  a.v.t = otlp::value::type::boolean;
  a.v.b = value;
}
void otel_span::fail(std::string_view message, std::string_view error_type) {
  if (!recording()) return;
  s_->span.status = otlp::status_code::error;
  s_->span.status_message = std::string(message);
  if (!error_type.empty()) set("error.type", error_type);
}
void otel_span::end() {
  if (!s_ || s_->ended) return;
  s_->ended = true;
  if (!s_->recording) return;
  s_->span.end = unix_now();
  if (auto t = s_->tracer.lock()) {
    std::vector<otlp::span> one;
    one.push_back(std::move(s_->span));
    t->push(std::move(one));
  }
}

// ---- otel_tracer -------------------------------------------------------------------------------

otel_tracer::otel_tracer(otel_options options) : impl_(std::make_shared<impl>()) {
  impl& p = *impl_;
  if (options.max_queue_size == 0) throw std::invalid_argument("covenant::otel_tracer: max_queue_size must be positive");
  if (options.max_export_batch_size == 0)
    throw std::invalid_argument("covenant::otel_tracer: max_export_batch_size must be positive");
  if (!(options.sampler_ratio >= 0.0 && options.sampler_ratio <= 1.0))
    throw std::invalid_argument("covenant::otel_tracer: sampler_ratio must be in [0, 1]");
  if (options.schedule_delay.count() <= 0 || options.metric_interval.count() <= 0 || options.export_timeout.count() <= 0)
    throw std::invalid_argument("covenant::otel_tracer: schedule_delay, metric_interval and export_timeout must be positive");
  p.rt = options.runtime != nullptr ? options.runtime : &runtime::shared();
  std::vector<std::string> secrets = options.redact;
  if (options.redact_env_keys) {
    for (const char* name : {"COVENANT_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"}) {
      const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
      if (v != nullptr && *v != '\0') secrets.emplace_back(v);
    }
  }
  p.secrets = cassette_impl::prepare_secrets(secrets);
  p.origin.scope_version = std::string(version());
  p.origin.schema_url = schema_url;
  p.origin.resource.str("service.name", options.service_name.empty() ? "unknown_service:covenant" : options.service_name);
  p.origin.resource.str("telemetry.sdk.name", "covenant");
  p.origin.resource.str("telemetry.sdk.language", "cpp");
  p.origin.resource.str("telemetry.sdk.version", std::string(version()));
  for (const auto& [key, value] : options.resource) {
    if (key == "service.name" || key.starts_with("telemetry.sdk.")) continue;
    otlp::attribute& a = p.origin.resource.list.emplace_back();
    a.own_key = key;
    a.v.s = value;
  }
  if (options.enabled) {
    const std::string type = options.protocol == otlp_protocol::http_protobuf ? "application/x-protobuf" : "application/json";
    auto post = [&](const std::string& url) {
      otlp::post_options po;
      po.url = url;
      po.content_type = type;
      po.headers = options.headers;
      po.timeout = options.export_timeout;
      po.retry = options.retry;
      return std::make_unique<otlp::poster>(*p.rt, std::move(po));
    };
    if (!options.traces_endpoint.empty()) p.span_poster = post(options.traces_endpoint);
    if (!options.metrics_endpoint.empty()) p.metric_poster = post(options.metrics_endpoint);
  }
  p.o = std::move(options);
  if (p.span_poster) p.arm_span_timer();
  if (p.metric_poster) p.arm_metric_timer();
}

otel_tracer::~otel_tracer() {
  try {
    shutdown(impl_->o.shutdown_timeout);
  } catch (...) {
  }
}

const otel_options& otel_tracer::options() const noexcept { return impl_->o; }

otel_stats otel_tracer::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

otel_span otel_tracer::start_span(std::string_view name, const trace_context* parent) {
  auto s = std::make_unique<otel_span::state>();
  s->tracer = impl_;
  std::optional<trace_context> c;
  if (impl_->o.enabled && impl_->span_poster) c = impl_->new_context(parent);
  if (!c) {
    if (parent != nullptr) s->context = *parent;
    return otel_span(std::move(s));
  }
  s->recording = true;
  s->context = *c;
  otlp::span& sp = s->span;
  sp.trace_id = c->trace_id;
  sp.span_id = c->span_id;
  sp.trace_flags = c->flags;
  sp.trace_state = c->tracestate;
  if (parent != nullptr) {
    sp.parent_span_id = parent->span_id;
    sp.has_parent = true;
    sp.parent_remote = true;
  }
  sp.name = std::string(name);
  sp.kind = otlp::span_kind::internal;
  sp.start = unix_now();
  return otel_span(std::move(s));
}

void otel_tracer::flush_async(bool metrics) {
  impl& p = *impl_;
  bool start = false;
  {
    std::lock_guard lock(p.mutex);
    if (!p.queue.empty() && !p.span_export_running && p.span_poster) {
      p.span_export_running = true;
      start = true;
    }
  }
  if (start) p.start_span_export();
  if (metrics && p.metric_poster) {
    std::weak_ptr<impl> self = impl_;
    p.rt->post([self] {
      if (auto q = self.lock()) q->export_metrics();
    });
  }
}

bool otel_tracer::flush(std::chrono::milliseconds timeout) {
  impl& p = *impl_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::uint64_t failures = 0;
  std::uint64_t metric_exports = 0;
  {
    std::lock_guard lock(p.mutex);
    ++p.flushing;
    failures = p.stats.export_failures + p.stats.metric_export_failures + p.stats.spans_dropped;
    metric_exports = p.stats.metric_exports;
  }
  flush_async(false);
  // The metrics once the spans are out (their counts then include this flush's spans).
  std::unique_lock lock(p.mutex);
  p.changed.wait_until(lock, deadline, [&] { return p.queue.empty() && !p.span_export_running; });
  bool metrics_sent = !p.metric_poster;
  if (p.metric_poster) {
    lock.unlock();
    p.export_metrics();
    lock.lock();
    p.changed.wait_until(lock, deadline, [&] { return p.stats.metric_exports > metric_exports && !p.metric_export_running; });
    metrics_sent = p.stats.metric_exports > metric_exports;
  }
  --p.flushing;
  const bool done = p.queue.empty() && !p.span_export_running && metrics_sent;
  return done && failures == p.stats.export_failures + p.stats.metric_export_failures + p.stats.spans_dropped;
}

void otel_tracer::shutdown(std::chrono::milliseconds timeout) {
  impl& p = *impl_;
  {
    std::lock_guard lock(p.mutex);
    if (p.stopped) return;
  }
  p.span_timer.cancel();
  p.metric_timer.cancel();
  (void)flush(timeout);
  {
    std::lock_guard lock(p.mutex);
    p.stopped = true;
    p.stats.spans_dropped += p.queue.size();
    p.queue.clear();
    p.stats.spans_queued = 0;
  }
  // A transfer still running at the deadline is aborted; the posters wait for the I/O loop.
  if (p.span_poster) p.span_poster->abort();
  if (p.metric_poster) p.metric_poster->abort();
  {
    std::unique_lock lock(p.mutex);
    p.changed.wait_for(lock, std::chrono::seconds(5), [&] { return !p.span_export_running && !p.metric_export_running; });
  }
  p.span_poster.reset();
  p.metric_poster.reset();
}

std::string otel_tracer::render_prometheus() const {
  const otel_stats s = stats();
  std::string out;
  prometheus::family_data exported{"covenant_otel_spans_exported_total", "Spans the OTLP collector accepted.",
                                   prometheus::metric_type::counter, {}, {}};
  exported.children.push_back({{}, static_cast<double>(s.spans_exported), {}});
  prometheus::append_family(out, exported);
  prometheus::family_data dropped{"covenant_otel_spans_dropped_total",
                                  "Spans never exported: the queue was full, or their export failed for good.",
                                  prometheus::metric_type::counter, {"reason"}, {}};
  dropped.children.push_back({{"export_failed"}, static_cast<double>(s.spans_dropped - s.spans_dropped_queue_full), {}});
  dropped.children.push_back({{"queue_full"}, static_cast<double>(s.spans_dropped_queue_full), {}});
  prometheus::append_family(out, dropped);
  prometheus::family_data exports{"covenant_otel_exports_total", "OTLP span exports that ended.",
                                  prometheus::metric_type::counter, {"result"}, {}};
  exports.children.push_back({{"failed"}, static_cast<double>(s.export_failures), {}});
  exports.children.push_back({{"ok"}, static_cast<double>(s.exports - s.export_failures), {}});
  prometheus::append_family(out, exports);
  prometheus::family_data queued{"covenant_otel_spans_queued", "Spans waiting to be exported.",
                                 prometheus::metric_type::gauge, {}, {}};
  queued.children.push_back({{}, static_cast<double>(s.spans_queued), {}});
  prometheus::append_family(out, queued);
  return out;
}

// ---- the observer ------------------------------------------------------------------------------

std::optional<trace_context> otel_tracer::on_start(const start_event& e) {
  impl& p = *impl_;
  if (!p.o.enabled || !p.span_poster) return std::nullopt;
  std::optional<trace_context> c = p.new_context(e.parent);
  if (!c) return std::nullopt;
  auto r = std::make_unique<call_record>();
  r->context = *c;
  r->start = unix_now();
  if (e.parent != nullptr) {
    r->parent = e.parent->span_id;
    r->has_parent = true;
  }
  {
    std::lock_guard lock(p.calls_mutex);
    if (p.calls.size() >= max_calls_recorded) return std::nullopt;
    p.calls[key_of(c->span_id)] = std::move(r);
  }
  return c;
}

void otel_tracer::on_request(const request_event& e) {
  impl& p = *impl_;
  call_record* r = p.find(e.call);
  if (r == nullptr) return;
  pending_request q;
  q.span_id = e.request.trace.valid() && e.request.trace.trace_id == r->context.trace_id ? e.request.trace.span_id
                                                                                          : new_span_id();
  q.start = unix_now();
  q.stream = e.request.stream;
  q.kind = e.kind;
  q.attempt = e.attempt;
  q.temperature = e.request.temperature;
  q.max_tokens = e.request.max_tokens;
  q.json_output = e.request.mode != output_mode::prompt && e.request.response_schema != nullptr;
  if (p.o.capture_content) p.capture_request(q, e.request);
  r->requests.push_back(std::move(q));
}

void otel_tracer::on_attempt(const attempt_event& e) {
  impl& p = *impl_;
  const attempt& a = e.a;
  // The metrics of the steps that led to the attempt and of the attempt itself (every call).
  for (const agent_step& st : e.steps)
    p.record_metrics(e.call, st.usage, st.model, st.queued + st.latency, {}, {});
  const bool answered = !a.engine_failed;
  if (answered || !a.issues.empty())
    p.record_metrics(e.call, a.usage, a.model, a.queued + a.latency, a.first_chunk,
                     a.engine_failed ? engine_error_type(a) : std::string());
  call_record* r = p.find(e.call);
  if (r == nullptr) return;
  for (const agent_step& st : e.steps) {
    if (r->requests.empty()) break;
    const pending_request q = std::move(r->requests.front());
    r->requests.pop_front();
    p.end_step(*r, q, st, e.call);
  }
  if (r->requests.empty()) return;
  const pending_request q = std::move(r->requests.front());
  r->requests.pop_front();
  otlp::span s = p.chat_span(*r, q, e.call);
  s.end = q.start + ns_of(a.queued + a.latency);
  if (!a.engine_failed || !a.text.empty()) impl::response_attributes(s, a.response_id, a.model, a.finish_reason, a.usage);
  if (a.first_chunk.count() > 0) s.attributes.floating("gen_ai.response.time_to_first_chunk", seconds(a.first_chunk));
  s.attributes.integer("covenant.attempt.number", a.number);
  s.attributes.str("covenant.attempt.kind", a.kind == attempt_kind::input_repair ? "input_repair" : "output");
  s.attributes.str("covenant.attempt.verdict", std::string(to_string(e.verdict)));
  if (a.queued.count() > 0) s.attributes.floating("covenant.attempt.queue_time", seconds(a.queued));
  if (a.engine_failed) {
    s.attributes.str("error.type", engine_error_type(a));
    s.status = otlp::status_code::error;
    s.status_message = a.issues.empty() ? std::string("the model call failed") : a.issues.front().message;
  }
  if (p.o.capture_content && !a.engine_failed) s.attributes.str("gen_ai.output.messages", p.output_messages(a.text, {}, a.finish_reason));
  impl::retry_events(s, a.transport_retries);
  const bool stopped_early =
      std::any_of(a.notes.begin(), a.notes.end(), [](const note& n) { return n.kind == note_kind::stopped_early; });
  if (stopped_early) {
    otlp::event ev;
    ev.time = s.end;
    ev.name = "covenant.stream.early_stop";
    ev.attributes.integer("covenant.stream.bytes_kept", static_cast<std::int64_t>(a.text.size()));
    if (!a.issues.empty()) {
      ev.attributes.str("covenant.issue.path", a.issues.front().path.to_string());
      ev.attributes.str("covenant.issue.code", std::string(to_string(a.issues.front().code)));
    }
    add_event(s, std::move(ev));
  }
  if (!a.engine_failed && !a.issues.empty()) {
    otlp::event ev;
    ev.time = s.end;
    ev.name = "covenant.reply.rejected";
    ev.attributes.integer("covenant.issue.count", static_cast<std::int64_t>(a.issues.size()));
    ev.attributes.strings("covenant.issue.paths", issue_paths(a.issues));
    ev.attributes.strings("covenant.issue.codes", issue_codes(a.issues));
    add_event(s, std::move(ev));
  }
  r->spans.push_back(std::move(s));
}

void otel_tracer::on_retry(const retry_event& e) {
  call_record* r = impl_->find(e.call);
  if (r == nullptr) return;
  otlp::event ev;
  ev.time = unix_now();
  ev.name = "covenant.remedy.retry";
  ev.attributes.integer("covenant.attempt.next", e.next_attempt);
  ev.attributes.floating("covenant.retry.wait", seconds(e.wait));
  ev.attributes.integer("covenant.issue.count", static_cast<std::int64_t>(e.issues.size()));
  if (r->events.size() < max_events_per_span) r->events.push_back(std::move(ev));
}

void otel_tracer::on_tool_start(const tool_start_event& e) {
  call_record* r = impl_->find(e.call);
  if (r == nullptr) return;
  r->tools.emplace_back(e.tool.id, unix_now());
}

void otel_tracer::on_tool_end(const tool_end_event& e) {
  impl& p = *impl_;
  call_record* r = p.find(e.call);
  if (r == nullptr) return;
  const tool_run& run = e.run;
  otlp::span s;
  s.trace_id = r->context.trace_id;
  s.span_id = new_span_id();
  s.parent_span_id = r->context.span_id;
  s.has_parent = true;
  s.trace_flags = r->context.flags;
  s.trace_state = r->context.tracestate;
  s.kind = otlp::span_kind::internal;
  s.name = "execute_tool " + run.call.name;
  std::uint64_t start = 0;
  for (auto it = r->tools.begin(); it != r->tools.end(); ++it) {
    if (it->first != run.call.id) continue;
    start = it->second;
    r->tools.erase(it);
    break;
  }
  s.start = start != 0 ? start : unix_now();  // a call that never ran (unknown, refused) has no start of its own
  s.end = s.start + ns_of(run.elapsed);
  s.attributes.str("gen_ai.operation.name", "execute_tool");
  s.attributes.str("gen_ai.tool.name", run.call.name);
  if (!run.call.id.empty()) s.attributes.str("gen_ai.tool.call.id", run.call.id);
  s.attributes.str("gen_ai.tool.type", "function");
  s.attributes.integer("covenant.agent.step", e.step);
  s.attributes.str("covenant.tool.status", std::string(to_string(run.status)));
  if (!run.ok()) {
    s.attributes.str("error.type", std::string(to_string(run.status)));
    s.status = otlp::status_code::error;
    s.status_message = run.issues.empty() ? std::string(to_string(run.status)) : run.issues.front().to_string();
  }
  if (p.o.capture_content) {
    s.attributes.str("gen_ai.tool.call.arguments", p.redacted(run.arguments.empty() ? run.call.arguments : run.arguments));
    if (run.ok()) s.attributes.str("gen_ai.tool.call.result", p.redacted(run.result));
  }
  r->spans.push_back(std::move(s));
}

void otel_tracer::on_finished(const finished_event& e) {
  impl& p = *impl_;
  const outcome_base& o = e.outcome;
  // The steps that no attempt followed (a call its tool loop ended): their metrics here.
  int answers = 0;
  for (const attempt& a : o.attempts) answers += a.kind == attempt_kind::output ? 1 : 0;
  std::size_t from = o.steps.size();
  while (from > 0 && o.steps[from - 1].attempt > answers) --from;
  for (std::size_t k = from; k < o.steps.size(); ++k)
    p.record_metrics(e.call, o.steps[k].usage, o.steps[k].model, o.steps[k].queued + o.steps[k].latency, {}, {});

  std::unique_ptr<call_record> r = p.take(e.call);
  if (!r) return;
  const std::uint64_t now = unix_now();
  for (std::size_t k = from; k < o.steps.size() && !r->requests.empty(); ++k) {
    const pending_request q = std::move(r->requests.front());
    r->requests.pop_front();
    p.end_step(*r, q, o.steps[k], e.call);
  }
  for (const pending_request& q : r->requests) {  // requests that got no reply (none expected)
    otlp::span s = p.chat_span(*r, q, e.call);
    s.end = now;
    s.status = otlp::status_code::error;
    s.status_message = "no reply";
    s.attributes.str("error.type", "_OTHER");
    r->spans.push_back(std::move(s));
  }

  otlp::span s;
  s.trace_id = r->context.trace_id;
  s.span_id = r->context.span_id;
  s.has_parent = r->has_parent;
  s.parent_span_id = r->parent;
  s.parent_remote = r->has_parent;
  s.trace_flags = r->context.flags;
  s.trace_state = r->context.tracestate;
  s.kind = otlp::span_kind::internal;
  s.name = std::string(e.call.contract);
  s.start = r->start;
  s.end = now;
  s.attributes.list.reserve(20);
  s.attributes.str("covenant.contract", std::string(e.call.contract));
  s.attributes.str("covenant.query_id", o.query_id);
  if (!e.call.schema_version.empty()) s.attributes.str("covenant.schema_version", std::string(e.call.schema_version));
  s.attributes.boolean("covenant.outcome.success", o.success);
  if (!o.success) s.attributes.str("covenant.outcome.stage", std::string(to_string(o.failed_stage)));
  if (!o.reason.empty()) s.attributes.str("covenant.outcome.reason", o.reason);
  s.attributes.integer("covenant.outcome.attempts", static_cast<std::int64_t>(o.attempts.size()));
  s.attributes.integer("covenant.outcome.model_calls", static_cast<std::int64_t>(o.calls()));
  if (!o.steps.empty()) s.attributes.integer("covenant.outcome.agent_steps", static_cast<std::int64_t>(o.steps.size()));
  if (o.truncated) s.attributes.boolean("covenant.outcome.truncated", true);
  if (o.cost_usd) s.attributes.floating("covenant.outcome.cost_usd", *o.cost_usd);
  s.attributes.integer("covenant.usage.input_tokens", static_cast<std::int64_t>(o.usage.input_tokens));
  s.attributes.integer("covenant.usage.output_tokens", static_cast<std::int64_t>(o.usage.output_tokens));
  if (!o.success) {
    s.status = otlp::status_code::error;
    s.status_message = o.summary();
    s.attributes.str("error.type", std::string(to_string(o.failed_stage)));
  }
  s.events = std::move(r->events);
  // The stage times, in stage order from the call's start (engine, parse, validate and post are
  // summed over the attempts).
  std::uint64_t at = s.start;
  for (std::size_t k = 0; k < perf_stage_count; ++k) {
    const auto stage = static_cast<perf_stage>(k);
    if (stage == perf_stage::total || stage == perf_stage::overhead) continue;
    const std::int64_t ns = e.timings.ns[k];
    if (ns < 0) continue;
    otlp::event ev;
    ev.time = at;
    ev.name = "covenant.stage";
    ev.attributes.str("covenant.stage.name", std::string(to_string(stage)));
    ev.attributes.floating("covenant.stage.duration", static_cast<double>(ns) / 1e9);
    add_event(s, std::move(ev));
    at += static_cast<std::uint64_t>(ns);
  }
  std::stable_sort(s.events.begin(), s.events.end(), [](const otlp::event& a, const otlp::event& b) { return a.time < b.time; });
  std::vector<otlp::span> spans = std::move(r->spans);
  spans.push_back(std::move(s));
  p.push(std::move(spans));
}

}  // namespace covenant
