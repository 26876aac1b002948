// Internal: what OTLP carries (spans, histograms and counters with their resource and scope) and
// its two encodings for OTLP/HTTP: JSON (the protobuf JSON mapping with OTLP's deviations: hex ids,
// integer enums, 64-bit integers as decimal strings) and binary protobuf (the wire format of
// opentelemetry-proto's messages, written field by field). Hand-written: Debian 12 packages no
// OpenTelemetry C++ SDK and no generated OTLP classes (docs/architecture.md).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/types/config.hpp"

namespace covenant::otlp {

/// An attribute's value: a string, a boolean, an integer, a double or a list of strings.
struct value {
  enum class type : std::uint8_t { string, boolean, integer, floating, strings };
  type t = type::string;
  bool b = false;
  std::int64_t i = 0;
  double d = 0;
  std::string s{};
  std::vector<std::string> list{};
};

/// A key and its value. Keys are string literals (`key`) or, for the application's, owned (`own_key`).
struct attribute {
  const char* key = "";
  std::string own_key{};
  otlp::value v{};
  [[nodiscard]] std::string_view name() const noexcept { return own_key.empty() ? std::string_view(key) : own_key; }
};

/// A list of attributes with helpers to add one of each type.
struct attributes {
  std::vector<attribute> list;
  void str(const char* key, std::string v) {
    attribute& a = list.emplace_back();
    a.key = key;
    a.v.s = std::move(v);
  }
  void integer(const char* key, std::int64_t v) {
    attribute& a = list.emplace_back();
    a.key = key;
    a.v.t = value::type::integer;
    a.v.i = v;
  }
  void floating(const char* key, double v) {
    attribute& a = list.emplace_back();
    a.key = key;
    a.v.t = value::type::floating;
    a.v.d = v;
  }
  void boolean(const char* key, bool v) {
    attribute& a = list.emplace_back();
    a.key = key;
    a.v.t = value::type::boolean;
    a.v.b = v;
  }
  void strings(const char* key, std::vector<std::string> v) {
    attribute& a = list.emplace_back();
    a.key = key;
    a.v.t = value::type::strings;
    a.v.list = std::move(v);
  }
};

enum class span_kind : std::uint8_t { unspecified = 0, internal = 1, server = 2, client = 3, producer = 4, consumer = 5 };
enum class status_code : std::uint8_t { unset = 0, ok = 1, error = 2 };

struct event {
  std::uint64_t time = 0;  ///< Unix nanoseconds
  const char* name = "";
  otlp::attributes attributes{};
};

struct span {
  std::array<std::uint8_t, 16> trace_id{};
  std::array<std::uint8_t, 8> span_id{};
  std::array<std::uint8_t, 8> parent_span_id{};
  bool has_parent = false;
  /// The parent came from outside (a trace context handed in): whether it is remote is not known,
  /// so Span.flags bit 8 stays clear; otherwise the parent is local (bit 8 set, bit 9 clear).
  bool parent_remote = false;
  std::uint8_t trace_flags = 0;
  std::string trace_state{};
  std::string name{};
  span_kind kind = span_kind::internal;
  std::uint64_t start = 0;  ///< Unix nanoseconds
  std::uint64_t end = 0;
  otlp::attributes attributes{};
  std::vector<event> events{};
  std::uint32_t dropped_events = 0;
  status_code status = status_code::unset;
  std::string status_message{};
};

/// The resource (service.name, telemetry.sdk.*, OTEL_RESOURCE_ATTRIBUTES) and the instrumentation
/// scope every export names.
struct origin {
  otlp::attributes resource{};
  std::string scope_name = "covenant";
  std::string scope_version{};
  std::string schema_url{};  ///< the semantic conventions' schema URL
};

/// One histogram data point (cumulative): its attributes, counts per bucket and bounds.
struct histogram_point {
  otlp::attributes attributes{};
  std::uint64_t start = 0;
  std::uint64_t time = 0;
  std::uint64_t count = 0;
  double sum = 0;
  std::vector<std::uint64_t> bucket_counts{};  ///< bounds.size() + 1 counts, not cumulative
  std::vector<double> bounds{};
};

/// One point of a cumulative, monotonic sum (a counter).
struct sum_point {
  otlp::attributes attributes{};
  std::uint64_t start = 0;
  std::uint64_t time = 0;
  std::int64_t value = 0;
};

struct metric {
  std::string name{};
  std::string description{};
  std::string unit{};
  bool histogram = true;  ///< else a monotonic cumulative sum
  std::vector<histogram_point> histogram_points{};
  std::vector<sum_point> sum_points{};
};

/// An ExportTraceServiceRequest as OTLP/JSON.
COVENANT_API std::string traces_json(const origin& o, std::span<const span> spans);
/// An ExportTraceServiceRequest in the protobuf wire format.
COVENANT_API std::string traces_protobuf(const origin& o, std::span<const span> spans);
/// An ExportMetricsServiceRequest as OTLP/JSON.
COVENANT_API std::string metrics_json(const origin& o, std::span<const metric> metrics);
/// An ExportMetricsServiceRequest in the protobuf wire format.
COVENANT_API std::string metrics_protobuf(const origin& o, std::span<const metric> metrics);

/// Appends `text` as a JSON string (quotes included): escapes quote, backslash and control
/// characters; bytes that are not UTF-8 become U+FFFD, so the document is always valid.
COVENANT_API void append_json_string(std::string& out, std::string_view text);

}  // namespace covenant::otlp
