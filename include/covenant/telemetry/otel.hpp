// covenant/telemetry/otel.hpp - OpenTelemetry traces and metrics of contract calls, exported over
// OTLP/HTTP, built on the observer interface.
//
//     auto tracer = std::make_shared<covenant::otel_tracer>(covenant::otel_options::from_env());
//     covenant::contract_options o;
//     o.observers.push_back(tracer);                 // every call of the contract is traced
//     covenant::call_options call;
//     call.trace = *covenant::trace_context::parse(incoming_traceparent);   // optional parent
//
// Spans follow the OpenTelemetry semantic conventions for generative AI (v1.41.0, Development):
// one span per contract call (named after the Expression), under it a `chat {model}` CLIENT span
// per model request (gen_ai.* request, response and usage attributes, server.address/port,
// error.type) and an `execute_tool {name}` span per tool call of an agent; transport retries, 429
// waits, early stops and each rejected reply's issues are span events; the call's outcome and
// stage times are on its span. Metrics: the histograms gen_ai.client.token.usage,
// gen_ai.client.operation.duration and gen_ai.client.operation.time_to_first_chunk with the
// conventions' bucket boundaries. The list of spans, attributes and environment variables is in
// docs/telemetry.md ("OpenTelemetry").
//
// What runs where: the observer callbacks run on the call's threads and only record times and
// values (no I/O, no lock held while anything waits); a call's spans are put on a bounded queue
// when it ends. Encoding and sending happen off the calls' path: the export is started by a timer
// or a full batch on the runtime's workers (options.runtime), and the HTTP transfer runs on the
// runtime's I/O loop through libcurl's multi interface - no thread of its own. One export is in
// flight at a time; a collector that is down, slow or refusing costs dropped spans (counted in
// stats() and exported as otel.sdk.* metrics), never a wait of a call or memory past the queue.
// Content (messages, system instructions, tool arguments and results) is recorded only with
// capture_content, after redaction; media never as bytes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/contract/observer.hpp"
#include "covenant/engine/trace_context.hpp"
#include "covenant/engine/retry.hpp"
#include "covenant/types/config.hpp"

namespace covenant {

class runtime;

/// The OTLP/HTTP encoding of the exports (OTEL_EXPORTER_OTLP_PROTOCOL).
enum class otlp_protocol : std::uint8_t {
  http_json,      ///< "http/json": Content-Type application/json (the default)
  http_protobuf,  ///< "http/protobuf": Content-Type application/x-protobuf
};

/// Which calls are recorded (OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG).
enum class otel_sampler : std::uint8_t {
  always_on,
  always_off,
  traceidratio,              ///< a call whose trace id falls under `sampler_ratio`
  parentbased_always_on,     ///< the parent's decision; without a parent, always_on (the default)
  parentbased_always_off,    ///< the parent's decision; without a parent, always_off
  parentbased_traceidratio,  ///< the parent's decision; without a parent, traceidratio
};

/// "always_on", "traceidratio", ... (the OTEL_TRACES_SAMPLER spellings).
COVENANT_API std::string_view to_string(otel_sampler s) noexcept;

struct otel_options {
  /// Record and export anything at all (OTEL_SDK_DISABLED=true turns it off). A disabled tracer is
  /// an observer that does nothing: no queue, no timers, no transfers.
  bool enabled = true;
  /// The URL spans are POSTed to (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
  /// OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/traces"; default http://localhost:4318/v1/traces).
  std::string traces_endpoint = "http://localhost:4318/v1/traces";
  /// The URL metrics are POSTed to (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, else
  /// OTEL_EXPORTER_OTLP_ENDPOINT + "/v1/metrics"); empty: metrics are not exported.
  std::string metrics_endpoint = "http://localhost:4318/v1/metrics";
  /// Extra request headers of every export (OTEL_EXPORTER_OTLP_HEADERS, e.g. an API key). Never logged.
  std::vector<std::pair<std::string, std::string>> headers{};
  otlp_protocol protocol = otlp_protocol::http_json;
  /// The resource's service.name (OTEL_SERVICE_NAME; empty: "unknown_service:covenant").
  std::string service_name{};
  /// More resource attributes (OTEL_RESOURCE_ATTRIBUTES: "key=value,..."). telemetry.sdk.* are
  /// covenant's own.
  std::vector<std::pair<std::string, std::string>> resource{};
  otel_sampler sampler = otel_sampler::parentbased_always_on;
  /// traceidratio: the share of traces recorded, in [0, 1] (OTEL_TRACES_SAMPLER_ARG).
  double sampler_ratio = 1.0;
  /// Record the prompts and replies (gen_ai.system_instructions, gen_ai.input.messages,
  /// gen_ai.output.messages) and tools' arguments and results, after redaction
  /// (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true). Off by default: they may hold
  /// personal data.
  bool capture_content = false;
  /// Texts never exported, replaced by "[redacted]" in captured content (as the cassettes' and
  /// the audit log's redact lists).
  std::vector<std::string> redact{};
  /// Also redact the values of COVENANT_API_KEY, OPENAI_API_KEY and ANTHROPIC_API_KEY.
  bool redact_env_keys = true;
  /// OTEL_SEMCONV_STABILITY_OPT_IN has gen_ai_latest_experimental: only the conventions' latest
  /// names. Otherwise the span and metric attributes also carry gen_ai.system, the name of
  /// gen_ai.provider.name before v1.37, for backends that read the older conventions.
  bool latest_semconv_only = false;
  /// Spans waiting to be exported, at most (OTEL_BSP_MAX_QUEUE_SIZE); a call's spans that do not fit
  /// are dropped, all of them, and counted.
  std::size_t max_queue_size = 2048;
  /// Spans in one export, at most (OTEL_BSP_MAX_EXPORT_BATCH_SIZE); a full batch is sent at once.
  std::size_t max_export_batch_size = 512;
  /// The longest spans wait before they are sent (OTEL_BSP_SCHEDULE_DELAY).
  std::chrono::milliseconds schedule_delay{5000};
  /// One export's time, its retries included (OTEL_EXPORTER_OTLP_TIMEOUT); past it the batch is
  /// dropped.
  std::chrono::milliseconds export_timeout{10000};
  /// Between two metric exports (OTEL_METRIC_EXPORT_INTERVAL).
  std::chrono::milliseconds metric_interval{60000};
  /// Retries of an export the collector refused as overloaded (429, 502, 503, 504) or that did not
  /// reach it, within export_timeout, on the library's one retry schedule (retry_options): waits
  /// of retry.delay, growing by retry.backoff up to retry.max_delay, with a jitter of ±20 %, or the
  /// collector's Retry-After (capped at retry.max_delay).
  retry_options retry{.tries = 5, .delay = std::chrono::milliseconds(1000), .backoff = 2.0,
                      .max_delay = std::chrono::milliseconds(5000), .jitter = 0.2};
  /// What shutdown() (and the destructor) waits at most for the spans still queued to go out.
  std::chrono::milliseconds shutdown_timeout{5000};
  /// The runtime whose workers encode the exports and whose I/O loop sends them (null:
  /// runtime::shared()). It must outlive the tracer.
  covenant::runtime* runtime = nullptr;

  /// `defaults` with what the standard environment variables set (see the members). Throws
  /// std::invalid_argument naming the variable when one is malformed (an unknown protocol or
  /// sampler, a ratio outside [0, 1], a header or attribute without "=", a URL that is not
  /// http(s)).
  [[nodiscard]] COVENANT_API static otel_options from_env(otel_options defaults);
  /// from_env(otel_options{}).
  [[nodiscard]] COVENANT_API static otel_options from_env();
};

/// What a tracer did so far. Spans dropped are never sent: the queue was full, the tracer was shut
/// down, or their export failed for good (refused, timed out, retries spent).
struct otel_stats {
  std::uint64_t spans_recorded = 0;   ///< spans of recorded calls (and start_span) that ended
  std::uint64_t spans_exported = 0;   ///< accepted by the collector
  std::uint64_t spans_dropped = 0;    ///< never sent or refused for good (queue full, export failed)
  std::uint64_t spans_dropped_queue_full = 0;  ///< of spans_dropped: the queue was full
  std::uint64_t spans_queued = 0;     ///< waiting now
  std::uint64_t max_spans_queued = 0; ///< the most that ever waited at once (at most max_queue_size)
  std::uint64_t exports = 0;          ///< span exports that ended (accepted or not)
  std::uint64_t export_failures = 0;  ///< of them, those that failed for good
  std::uint64_t export_retries = 0;   ///< exports sent again (429, 502, 503, 504, no connection)
  std::uint64_t exports_in_flight = 0;  ///< span exports sent and not answered yet (0 or 1)
  std::uint64_t metric_exports = 0;   ///< metric exports that ended
  std::uint64_t metric_export_failures = 0;
};

class otel_tracer;

/// A span an application (or `covenant run`) starts itself, e.g. the span of one record of a batch:
/// give its context() to a call (call_options::trace) and the call's spans become its children.
/// Ends when end() is called or it is destroyed. Move-only. A span of an unsampled trace records
/// nothing; its context() is then its parent's (or invalid).
class COVENANT_API otel_span {
 public:
  otel_span() noexcept;
  ~otel_span();
  otel_span(otel_span&&) noexcept;
  otel_span& operator=(otel_span&&) noexcept;
  otel_span(const otel_span&) = delete;
  otel_span& operator=(const otel_span&) = delete;

  /// The context to hand to children (call_options::trace, a traceparent header).
  [[nodiscard]] const trace_context& context() const noexcept;
  /// Whether the span is recorded (sampled).
  [[nodiscard]] bool recording() const noexcept;
  void set(std::string_view key, std::string_view value);
  void set(std::string_view key, const char* value) { set(key, std::string_view(value)); }
  void set(std::string_view key, std::int64_t value);
  void set(std::string_view key, int value) { set(key, static_cast<std::int64_t>(value)); }
  void set(std::string_view key, double value);
  void set(std::string_view key, bool value);
  /// Marks the span failed: status ERROR with `message`, and `error.type` (when not empty).
  void fail(std::string_view message, std::string_view error_type = {});
  /// Ends the span (once; later calls do nothing) and queues it for export.
  void end();

  struct state;

 private:
  friend class otel_tracer;
  explicit otel_span(std::unique_ptr<state> s) noexcept;
  std::unique_ptr<state> s_;
};

/// Records contract calls as OpenTelemetry spans and metrics and exports them over OTLP/HTTP.
/// Thread-safe: one instance may observe many contracts.
class COVENANT_API otel_tracer final : public observer {
 public:
  /// Throws std::invalid_argument for options that cannot work (an endpoint that is not an
  /// http(s) URL, a queue or batch of 0, a header with a line break).
  explicit otel_tracer(otel_options options);
  /// shutdown() with options().shutdown_timeout.
  ~otel_tracer() override;
  otel_tracer(const otel_tracer&) = delete;
  otel_tracer& operator=(const otel_tracer&) = delete;

  [[nodiscard]] const otel_options& options() const noexcept;

  /// Starts a span of the application's (kind INTERNAL), a child of `parent` when given; sampled as
  /// a call would be.
  [[nodiscard]] otel_span start_span(std::string_view name, const trace_context* parent = nullptr);

  /// Starts exporting what is queued now, without waiting (the spans and, when `metrics`, the
  /// metrics).
  void flush_async(bool metrics = false);
  /// Exports what is queued and the metrics, and waits for the exports to end, at most `timeout`;
  /// true when all of them were accepted in time.
  bool flush(std::chrono::milliseconds timeout);
  /// Exports what is queued and the metrics a last time within `timeout`, then stops: later spans
  /// are dropped; a transfer still running at the deadline is aborted. Idempotent.
  void shutdown(std::chrono::milliseconds timeout);

  [[nodiscard]] otel_stats stats() const;
  /// The tracer's own counters in the Prometheus text format (covenant_otel_spans_exported_total,
  /// covenant_otel_spans_dropped_total{reason}, covenant_otel_exports_total{result}), to serve
  /// beside covenant::metrics::render().
  [[nodiscard]] std::string render_prometheus() const;

  std::optional<trace_context> on_start(const start_event& e) override;
  void on_request(const request_event& e) override;
  void on_attempt(const attempt_event& e) override;
  void on_retry(const retry_event& e) override;
  void on_tool_start(const tool_start_event& e) override;
  void on_tool_end(const tool_end_event& e) override;
  void on_finished(const finished_event& e) override;

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace covenant
