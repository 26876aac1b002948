// The tracer's bounded queue and its exports: a full batch or the schedule timer starts a span
// export on a worker (encode, then hand the body to the poster, whose transfer runs on the I/O
// loop); the metric timer collects and sends the histograms and the exporter's own counts. One span
// export and one metric export are in flight at most.
#include <algorithm>

#include "engine/log.hpp"
#include "otel_state.hpp"

namespace covenant {

using namespace otel_detail;

otlp::metric histogram_metric::collect(std::uint64_t start, std::uint64_t now) const {
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

}  // namespace covenant
