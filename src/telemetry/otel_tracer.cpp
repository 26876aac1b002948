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

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "covenant/types/version.hpp"
#include "engine/log.hpp"
#include "otel_state.hpp"

namespace covenant {

using namespace otel_detail;

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
