// An OTLP/HTTP collector on 127.0.0.1 for the tests, built on the loopback server: it answers each
// export as a plan says (200 by default; 503, a hang, ...) and decodes every request it received,
// JSON (OTLP/JSON: hex ids, integer enums, 64-bit integers as strings) or binary protobuf, into
// spans, histogram points and sums that tests can check.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loopback_server.hpp"

namespace covenant_test {

/// Attribute values by key, as OTLP/JSON writes an AnyValue ({"stringValue": ...}, {"intValue":
/// "5"}, ...); protobuf requests are decoded into the same form.
struct otlp_attributes {
  std::map<std::string, boost::json::value> values;

  [[nodiscard]] bool has(const std::string& key) const { return values.count(key) != 0; }
  /// The string value of `key` ("" when absent or not a string).
  [[nodiscard]] std::string str(const std::string& key) const;
  /// The int value of `key` (intValue, a decimal string or a number); nullopt when absent.
  [[nodiscard]] std::optional<std::int64_t> integer(const std::string& key) const;
  [[nodiscard]] std::optional<double> number(const std::string& key) const;
  [[nodiscard]] std::optional<bool> boolean(const std::string& key) const;
  [[nodiscard]] std::vector<std::string> strings(const std::string& key) const;
};

struct otlp_event {
  std::string name;
  std::uint64_t time = 0;
  otlp_attributes attributes;
};

struct otlp_span {
  std::string trace_id;  ///< as written in JSON (hex); protobuf bytes are turned into lower-case hex
  std::string span_id;
  std::string parent_span_id;  ///< "" when it has none
  std::string trace_state;
  std::uint32_t flags = 0;
  std::string name;
  int kind = 0;
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  otlp_attributes attributes;
  std::vector<otlp_event> events;
  int status_code = 0;
  std::string status_message;
  otlp_attributes resource;   ///< the request's resource
  std::string scope_name;
  std::string scope_version;

  /// The events named `name`, in order.
  [[nodiscard]] std::vector<const otlp_event*> events_named(const std::string& n) const;
};

struct otlp_histogram_point {
  otlp_attributes attributes;
  std::uint64_t count = 0;
  double sum = 0;
  std::vector<std::uint64_t> bucket_counts;
  std::vector<double> bounds;
};

struct otlp_metric {
  std::string name;
  std::string unit;
  bool histogram = false;
  int temporality = 0;
  std::vector<otlp_histogram_point> points;                        ///< histograms
  std::vector<std::pair<otlp_attributes, std::int64_t>> sums;      ///< sums
};

class otlp_receiver {
 public:
  /// Answers every export with `plan` (200 with an empty JSON object by default).
  explicit otlp_receiver(loopback_server::handler plan = {});

  /// http://127.0.0.1:<port> (OTEL_EXPORTER_OTLP_ENDPOINT's form).
  [[nodiscard]] std::string endpoint() const;
  [[nodiscard]] std::string traces_url() const { return endpoint() + "/v1/traces"; }
  [[nodiscard]] std::string metrics_url() const { return endpoint() + "/v1/metrics"; }
  [[nodiscard]] loopback_server& server() noexcept { return server_; }

  /// Every span of every request to /v1/traces so far, in the order received.
  [[nodiscard]] std::vector<otlp_span> spans() const;
  /// The metrics of the last request to /v1/metrics (empty when none came).
  [[nodiscard]] std::vector<otlp_metric> last_metrics() const;
  /// The requests to a path so far.
  [[nodiscard]] std::size_t requests_to(const std::string& path) const;
  /// Waits until `n` spans arrived, at most `timeout`.
  bool wait_for_spans(std::size_t n, std::chrono::milliseconds timeout) const;

 private:
  loopback_server server_;
};

/// Decodes an OTLP/JSON ExportTraceServiceRequest (throws on malformed input).
std::vector<otlp_span> decode_traces_json(const std::string& body);
/// Decodes a protobuf ExportTraceServiceRequest into the same form (throws on malformed input).
std::vector<otlp_span> decode_traces_protobuf(const std::string& body);
std::vector<otlp_metric> decode_metrics_json(const std::string& body);
std::vector<otlp_metric> decode_metrics_protobuf(const std::string& body);

/// Whether `s` is `n` lower-case hex digits.
bool is_hex(const std::string& s, std::size_t n);

}  // namespace covenant_test
