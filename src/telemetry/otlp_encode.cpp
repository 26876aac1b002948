// OTLP requests written as JSON and as protobuf (otlp.hpp). The field names and numbers are those of
// opentelemetry-proto (trace/v1/trace.proto, metrics/v1/metrics.proto, common/v1/common.proto,
// resource/v1/resource.proto, collector/*/v1/*_service.proto).
#include "otlp.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

#include "covenant/types/detail/utf8.hpp"

namespace covenant::otlp {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

template <std::size_t N>
void append_hex(std::string& out, const std::array<std::uint8_t, N>& bytes) {
  out.push_back('"');
  for (std::uint8_t b : bytes) {
    out.push_back(hex_digits[b >> 4]);
    out.push_back(hex_digits[b & 15]);
  }
  out.push_back('"');
}

void append_uint_string(std::string& out, std::uint64_t v) {  // a 64-bit integer: a decimal string
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.push_back('"');
  out.append(buf, r.ptr);
  out.push_back('"');
}

void append_int_string(std::string& out, std::int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.push_back('"');
  out.append(buf, r.ptr);
  out.push_back('"');
}

void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) v = 0;  // JSON has no infinities (never produced here)
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_unsigned(std::string& out, std::uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// ---- JSON --------------------------------------------------------------------------------------

void json_any(std::string& out, const value& v) {
  switch (v.t) {
    case value::type::string:
      out += "{\"stringValue\":";
      append_json_string(out, v.s);
      break;
    case value::type::boolean: out += v.b ? "{\"boolValue\":true" : "{\"boolValue\":false"; break;
    case value::type::integer:
      out += "{\"intValue\":";
      append_int_string(out, v.i);
      break;
    case value::type::floating:
      out += "{\"doubleValue\":";
      append_number(out, v.d);
      break;
    case value::type::strings:
      out += "{\"arrayValue\":{\"values\":[";
      for (std::size_t k = 0; k < v.list.size(); ++k) {
        if (k) out.push_back(',');
        out += "{\"stringValue\":";
        append_json_string(out, v.list[k]);
        out.push_back('}');
      }
      out += "]}";
      break;
  }
  out.push_back('}');
}

void json_attributes(std::string& out, const attributes& list) {
  out += "\"attributes\":[";
  for (std::size_t k = 0; k < list.list.size(); ++k) {
    if (k) out.push_back(',');
    out += "{\"key\":";
    append_json_string(out, list.list[k].name());
    out += ",\"value\":";
    json_any(out, list.list[k].v);
    out.push_back('}');
  }
  out.push_back(']');
}

void json_resource_and_scope_open(std::string& out, const origin& o, const char* scope_list) {
  out += "{\"resource\":{";
  json_attributes(out, o.resource);
  out += "},\"";
  out += scope_list;
  out += "\":[{\"scope\":{\"name\":";
  append_json_string(out, o.scope_name);
  if (!o.scope_version.empty()) {
    out += ",\"version\":";
    append_json_string(out, o.scope_version);
  }
  out += "},";
}

void json_scope_close(std::string& out, const origin& o) {
  if (!o.schema_url.empty()) {
    out += ",\"schemaUrl\":";
    append_json_string(out, o.schema_url);
  }
  out += "}]";
  if (!o.schema_url.empty()) {
    out += ",\"schemaUrl\":";
    append_json_string(out, o.schema_url);
  }
  out.push_back('}');
}

std::uint32_t span_flags(const span& s) {
  // Bits 0-7: the W3C trace flags; bit 8: whether the parent is known to be local or remote (bit
  // 9). A parent handed in as a trace context (call_options::trace, a traceparent) may be either:
  // bit 8 stays clear for it.
  std::uint32_t f = s.trace_flags;
  if (!(s.has_parent && s.parent_remote)) f |= 0x100u;
  return f;
}

void json_span(std::string& out, const span& s) {
  out += "{\"traceId\":";
  append_hex(out, s.trace_id);
  out += ",\"spanId\":";
  append_hex(out, s.span_id);
  if (!s.trace_state.empty()) {
    out += ",\"traceState\":";
    append_json_string(out, s.trace_state);
  }
  if (s.has_parent) {
    out += ",\"parentSpanId\":";
    append_hex(out, s.parent_span_id);
  }
  out += ",\"flags\":";
  append_unsigned(out, span_flags(s));
  out += ",\"name\":";
  append_json_string(out, s.name);
  out += ",\"kind\":";
  append_unsigned(out, static_cast<unsigned>(s.kind));
  out += ",\"startTimeUnixNano\":";
  append_uint_string(out, s.start);
  out += ",\"endTimeUnixNano\":";
  append_uint_string(out, s.end);
  out.push_back(',');
  json_attributes(out, s.attributes);
  out += ",\"droppedAttributesCount\":0,\"events\":[";
  for (std::size_t k = 0; k < s.events.size(); ++k) {
    const event& e = s.events[k];
    if (k) out.push_back(',');
    out += "{\"timeUnixNano\":";
    append_uint_string(out, e.time);
    out += ",\"name\":";
    append_json_string(out, e.name);
    out.push_back(',');
    json_attributes(out, e.attributes);
    out += ",\"droppedAttributesCount\":0}";
  }
  out += "],\"droppedEventsCount\":";
  append_unsigned(out, s.dropped_events);
  out += ",\"links\":[],\"droppedLinksCount\":0,\"status\":{\"code\":";
  append_unsigned(out, static_cast<unsigned>(s.status));
  if (!s.status_message.empty()) {
    out += ",\"message\":";
    append_json_string(out, s.status_message);
  }
  out += "}}";
}

// ---- protobuf ----------------------------------------------------------------------------------

enum wire : std::uint8_t { varint = 0, fixed64 = 1, length = 2, fixed32 = 5 };

class pb {
 public:
  void tag(std::uint32_t field, wire w) { uvarint((static_cast<std::uint64_t>(field) << 3) | w); }
  void uvarint(std::uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  void f64(std::uint64_t v) {
    for (int k = 0; k < 8; ++k, v >>= 8) out.push_back(static_cast<char>(v & 0xff));
  }
  void f32(std::uint32_t v) {
    for (int k = 0; k < 4; ++k, v >>= 8) out.push_back(static_cast<char>(v & 0xff));
  }
  void dbl(double d) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    f64(bits);
  }
  /// A length-delimited field (a string, bytes or an embedded message).
  void bytes(std::uint32_t field, std::string_view b) {
    tag(field, length);
    uvarint(b.size());
    out.append(b);
  }
  /// A string field, left out when empty (proto3 defaults are not written).
  void string(std::uint32_t field, std::string_view s) {
    if (!s.empty()) bytes(field, s);
  }
  void uint(std::uint32_t field, std::uint64_t v) {
    if (v == 0) return;
    tag(field, varint);
    uvarint(v);
  }
  void fixed64_field(std::uint32_t field, std::uint64_t v) {
    if (v == 0) return;
    tag(field, fixed64);
    f64(v);
  }
  void message(std::uint32_t field, const pb& inner) { bytes(field, inner.out); }

  std::string out;
};

void pb_any(pb& w, const value& v) {  // AnyValue: every member of the oneof is written, even 0
  switch (v.t) {
    case value::type::string: w.bytes(1, v.s); break;
    case value::type::boolean:
      w.tag(2, varint);
      w.uvarint(v.b ? 1 : 0);
      break;
    case value::type::integer:
      w.tag(3, varint);
      w.uvarint(static_cast<std::uint64_t>(v.i));  // int64: two's complement, ten bytes when negative
      break;
    case value::type::floating:
      w.tag(4, fixed64);
      w.dbl(v.d);
      break;
    case value::type::strings: {
      pb array;
      for (const std::string& s : v.list) {
        pb item;
        item.bytes(1, s);
        array.message(1, item);
      }
      w.message(5, array);
      break;
    }
  }
}

void pb_attributes(pb& w, std::uint32_t field, const attributes& list) {
  for (const attribute& a : list.list) {
    pb kv;
    kv.string(1, a.name());
    pb any;
    pb_any(any, a.v);
    kv.message(2, any);
    w.message(field, kv);
  }
}

pb pb_resource(const origin& o) {
  pb r;
  pb_attributes(r, 1, o.resource);
  return r;
}

pb pb_scope(const origin& o) {
  pb s;
  s.string(1, o.scope_name);
  s.string(2, o.scope_version);
  return s;
}

template <std::size_t N>
std::string_view id_bytes(const std::array<std::uint8_t, N>& a) {
  return {reinterpret_cast<const char*>(a.data()), N};
}

void pb_span(pb& w, const span& s) {
  pb p;
  p.bytes(1, id_bytes(s.trace_id));
  p.bytes(2, id_bytes(s.span_id));
  p.string(3, s.trace_state);
  if (s.has_parent) p.bytes(4, id_bytes(s.parent_span_id));
  p.string(5, s.name);
  p.uint(6, static_cast<unsigned>(s.kind));
  p.fixed64_field(7, s.start);
  p.fixed64_field(8, s.end);
  pb_attributes(p, 9, s.attributes);
  for (const event& e : s.events) {
    pb ev;
    ev.fixed64_field(1, e.time);
    ev.string(2, e.name);
    pb_attributes(ev, 3, e.attributes);
    p.message(11, ev);
  }
  p.uint(12, s.dropped_events);
  pb status;
  status.string(2, s.status_message);
  status.uint(3, static_cast<unsigned>(s.status));
  p.message(15, status);
  p.tag(16, fixed32);
  p.f32(span_flags(s));
  w.message(2, p);
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  const char* p = text.data();
  const char* e = p + text.size();
  while (p < e) {
    const auto c = static_cast<unsigned char>(*p);
    if (c >= 0x80) {
      const std::size_t n = detail::utf8_sequence(p, e);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD for a byte that starts no valid sequence
        ++p;
      } else {
        out.append(p, n);
        p += n;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(hex_digits[c >> 4]);
          out.push_back(hex_digits[c & 15]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++p;
  }
  out.push_back('"');
}

std::string traces_json(const origin& o, std::span<const span> spans) {
  std::string out;
  out.reserve(512 + spans.size() * 1024);
  out += "{\"resourceSpans\":[";
  json_resource_and_scope_open(out, o, "scopeSpans");
  out += "\"spans\":[";
  for (std::size_t k = 0; k < spans.size(); ++k) {
    if (k) out.push_back(',');
    json_span(out, spans[k]);
  }
  out.push_back(']');
  json_scope_close(out, o);
  out += "]}";
  return out;
}

std::string traces_protobuf(const origin& o, std::span<const span> spans) {
  pb scope_spans;
  scope_spans.message(1, pb_scope(o));
  for (const span& s : spans) pb_span(scope_spans, s);
  scope_spans.string(3, o.schema_url);
  pb resource_spans;
  resource_spans.message(1, pb_resource(o));
  resource_spans.message(2, scope_spans);
  resource_spans.string(3, o.schema_url);
  pb request;
  request.message(1, resource_spans);
  return std::move(request.out);
}

std::string metrics_json(const origin& o, std::span<const metric> metrics) {
  std::string out;
  out += "{\"resourceMetrics\":[";
  json_resource_and_scope_open(out, o, "scopeMetrics");
  out += "\"metrics\":[";
  for (std::size_t k = 0; k < metrics.size(); ++k) {
    const metric& m = metrics[k];
    if (k) out.push_back(',');
    out += "{\"name\":";
    append_json_string(out, m.name);
    out += ",\"description\":";
    append_json_string(out, m.description);
    out += ",\"unit\":";
    append_json_string(out, m.unit);
    if (m.histogram) {
      out += ",\"histogram\":{\"dataPoints\":[";
      for (std::size_t i = 0; i < m.histogram_points.size(); ++i) {
        const histogram_point& p = m.histogram_points[i];
        if (i) out.push_back(',');
        out.push_back('{');
        json_attributes(out, p.attributes);
        out += ",\"startTimeUnixNano\":";
        append_uint_string(out, p.start);
        out += ",\"timeUnixNano\":";
        append_uint_string(out, p.time);
        out += ",\"count\":";
        append_uint_string(out, p.count);
        out += ",\"sum\":";
        append_number(out, p.sum);
        out += ",\"bucketCounts\":[";
        for (std::size_t b = 0; b < p.bucket_counts.size(); ++b) {
          if (b) out.push_back(',');
          append_uint_string(out, p.bucket_counts[b]);
        }
        out += "],\"explicitBounds\":[";
        for (std::size_t b = 0; b < p.bounds.size(); ++b) {
          if (b) out.push_back(',');
          append_number(out, p.bounds[b]);
        }
        out += "]}";
      }
      out += "],\"aggregationTemporality\":2}}";
    } else {
      out += ",\"sum\":{\"dataPoints\":[";
      for (std::size_t i = 0; i < m.sum_points.size(); ++i) {
        const sum_point& p = m.sum_points[i];
        if (i) out.push_back(',');
        out.push_back('{');
        json_attributes(out, p.attributes);
        out += ",\"startTimeUnixNano\":";
        append_uint_string(out, p.start);
        out += ",\"timeUnixNano\":";
        append_uint_string(out, p.time);
        out += ",\"asInt\":";
        append_int_string(out, p.value);
        out.push_back('}');
      }
      out += "],\"aggregationTemporality\":2,\"isMonotonic\":true}}";
    }
  }
  out.push_back(']');
  json_scope_close(out, o);
  out += "]}";
  return out;
}

std::string metrics_protobuf(const origin& o, std::span<const metric> metrics) {
  pb scope_metrics;
  scope_metrics.message(1, pb_scope(o));
  for (const metric& m : metrics) {
    pb pm;
    pm.string(1, m.name);
    pm.string(2, m.description);
    pm.string(3, m.unit);
    if (m.histogram) {
      pb h;
      for (const histogram_point& p : m.histogram_points) {
        pb dp;
        dp.fixed64_field(2, p.start);
        dp.fixed64_field(3, p.time);
        dp.tag(4, fixed64);
        dp.f64(p.count);
        dp.tag(5, fixed64);  // optional double sum: written when set, even 0
        dp.dbl(p.sum);
        pb counts;  // packed repeated fixed64
        for (std::uint64_t c : p.bucket_counts) counts.f64(c);
        dp.bytes(6, counts.out);
        pb bounds;  // packed repeated double
        for (double b : p.bounds) bounds.dbl(b);
        if (!p.bounds.empty()) dp.bytes(7, bounds.out);
        pb_attributes(dp, 9, p.attributes);
        h.message(1, dp);
      }
      h.uint(2, 2);  // AGGREGATION_TEMPORALITY_CUMULATIVE
      pm.message(9, h);
    } else {
      pb sum;
      for (const sum_point& p : m.sum_points) {
        pb dp;
        dp.fixed64_field(2, p.start);
        dp.fixed64_field(3, p.time);
        dp.tag(6, fixed64);  // sfixed64 as_int
        dp.f64(static_cast<std::uint64_t>(p.value));
        pb_attributes(dp, 7, p.attributes);
        sum.message(1, dp);
      }
      sum.uint(2, 2);
      sum.uint(3, 1);  // is_monotonic
      pm.message(7, sum);
    }
    scope_metrics.message(2, pm);
  }
  scope_metrics.string(3, o.schema_url);
  pb resource_metrics;
  resource_metrics.message(1, pb_resource(o));
  resource_metrics.message(2, scope_metrics);
  resource_metrics.string(3, o.schema_url);
  pb request;
  request.message(1, resource_metrics);
  return std::move(request.out);
}

}  // namespace covenant::otlp
