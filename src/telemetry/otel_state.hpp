// Internal: the OpenTelemetry tracer's state, shared by its four files: otel_tracer.cpp (the tracer
// and its observer callbacks), otel_spans.cpp (the spans, attributes and metrics of a call),
// otel_export.cpp (the bounded queue and the batched OTLP/HTTP exports) and otel_span.cpp (the
// application's own spans).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "covenant/engine/runtime.hpp"
#include "covenant/telemetry/metrics_text.hpp"
#include "covenant/telemetry/otel.hpp"
#include "engine/redaction.hpp"
#include "otlp.hpp"
#include "otlp_http.hpp"

namespace covenant {

namespace otel_detail {

inline constexpr const char* schema_url = "https://opentelemetry.io/schemas/1.41.0";
inline constexpr std::size_t max_events_per_span = 128;
inline constexpr std::size_t max_calls_recorded = 100000;  // records of calls in flight, at most

inline std::uint64_t unix_now() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

inline std::uint64_t unix_of(std::chrono::system_clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return ns < 0 ? 0 : static_cast<std::uint64_t>(ns);
}

inline std::uint64_t ns_of(std::chrono::nanoseconds d) { return d.count() < 0 ? 0 : static_cast<std::uint64_t>(d.count()); }

inline double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

inline std::uint64_t key_of(const std::array<std::uint8_t, 8>& id) {
  std::uint64_t k = 0;
  for (std::uint8_t b : id) k = (k << 8) | b;
  return k;
}

/// The W3C `sampled` decision of the TraceIdRatioBased sampler: the trace id's last 8 bytes, read
/// as a big-endian number, under ratio * 2^64.
inline bool ratio_sampled(const std::array<std::uint8_t, 16>& trace_id, double ratio) {
  if (ratio >= 1.0) return true;
  if (ratio <= 0.0) return false;
  std::uint64_t x = 0;
  for (std::size_t i = 8; i < 16; ++i) x = (x << 8) | trace_id[i];
  return static_cast<double>(x) < ratio * 18446744073709551616.0;
}

inline void add_event(otlp::span& s, otlp::event e) {
  if (s.events.size() >= max_events_per_span) {
    ++s.dropped_events;
    return;
  }
  s.events.push_back(std::move(e));
}

/// The paths of a rejected reply's issues, as span event attributes.
std::vector<std::string> issue_paths(const issue_list& issues);
/// Their codes.
std::vector<std::string> issue_codes(const issue_list& issues);
/// error.type of a failed model call: the HTTP status, else the kind of failure.
std::string engine_error_type(const attempt& a);

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

  /// The series as OTLP points (cumulative since `start`).
  [[nodiscard]] otlp::metric collect(std::uint64_t start, std::uint64_t now) const;

};


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

}  // namespace otel_detail

struct otel_tracer::impl : std::enable_shared_from_this<impl> {
  otel_options o;
  runtime* rt = nullptr;
  otlp::origin origin;
  std::unique_ptr<otlp::poster> span_poster;
  std::unique_ptr<otlp::poster> metric_poster;
  std::vector<std::string> secrets;
  std::uint64_t started_unix = otel_detail::unix_now();

  // Calls in flight that are recorded.
  std::mutex calls_mutex;
  std::unordered_map<std::uint64_t, std::unique_ptr<otel_detail::call_record>> calls;

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
  otel_detail::histogram_metric token_usage{"gen_ai.client.token.usage", "Number of input and output tokens used.", "{token}",
                               {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216,
                                67108864}};
  otel_detail::histogram_metric duration{"gen_ai.client.operation.duration", "GenAI operation duration.", "s",
                            {0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}};
  otel_detail::histogram_metric first_chunk{"gen_ai.client.operation.time_to_first_chunk",
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
      case otel_sampler::traceidratio: return otel_detail::ratio_sampled(trace_id, o.sampler_ratio);
      case otel_sampler::parentbased_always_on: return parent != nullptr ? parent->sampled() : true;
      case otel_sampler::parentbased_always_off: return parent != nullptr ? parent->sampled() : false;
      case otel_sampler::parentbased_traceidratio:
        return parent != nullptr ? parent->sampled() : otel_detail::ratio_sampled(trace_id, o.sampler_ratio);
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
  otel_detail::call_record* find(const call_info& info) {
    if (info.trace == nullptr) return nullptr;
    std::lock_guard lock(calls_mutex);
    auto it = calls.find(otel_detail::key_of(info.trace->span_id));
    if (it == calls.end() || it->second->context.trace_id != info.trace->trace_id) return nullptr;
    return it->second.get();
  }

  std::unique_ptr<otel_detail::call_record> take(const call_info& info) {
    if (info.trace == nullptr) return nullptr;
    std::lock_guard lock(calls_mutex);
    auto it = calls.find(otel_detail::key_of(info.trace->span_id));
    if (it == calls.end() || it->second->context.trace_id != info.trace->trace_id) return nullptr;
    std::unique_ptr<otel_detail::call_record> r = std::move(it->second);
    calls.erase(it);
    return r;
  }

  // ---- attributes, content and spans (otel_spans.cpp)

  /// What every span and metric of a model request says about where it went.
  void server_attributes(otlp::attributes& a, const call_info& info, bool with_model) const;
  /// The metrics of one model call (an answer attempt or an agent step): recorded for every call,
  /// sampled or not.
  void record_metrics(const call_info& info, const usage& u, const std::string& response_model,
                      std::chrono::nanoseconds engine_time, std::chrono::nanoseconds first, const std::string& error);
  [[nodiscard]] boost::json::object text_part(const std::string& text) const;
  /// A tool call's arguments as the conventions want them: an object when they read as JSON.
  [[nodiscard]] boost::json::value arguments_value(const std::string& text) const;
  void capture_request(otel_detail::pending_request& p, const chat_request& r) const;
  [[nodiscard]] std::string output_messages(const std::string& text, const std::vector<tool_call>& calls,
                                            const std::string& finish) const;
  /// The chat span of a model request, from what the request and its reply said.
  otlp::span chat_span(const otel_detail::call_record& r, const otel_detail::pending_request& p, const call_info& info) const;
  static void response_attributes(otlp::span& s, const std::string& id, const std::string& model,
                                  const std::string& finish, const usage& u);
  static void retry_events(otlp::span& s, const std::vector<transport_retry>& retries);
  /// Ends the chat span of an agent step.
  void end_step(otel_detail::call_record& r, const otel_detail::pending_request& p, const agent_step& st,
                const call_info& info);

  // ---- the queue and the exports (otel_export.cpp)

  void push(std::vector<otlp::span>&& spans);
  void start_span_export();
  void export_spans();
  void export_metrics();
  void arm_span_timer();
  void arm_metric_timer();
  std::vector<otlp::metric> collect_metrics();
};

// ---- otel_span ---------------------------------------------------------------------------------

struct otel_span::state {
  std::weak_ptr<otel_tracer::impl> tracer;
  trace_context context;  // the span's own (recording) or the parent's (not recording)
  bool recording = false;
  bool ended = false;
  otlp::span span;
};

}  // namespace covenant
