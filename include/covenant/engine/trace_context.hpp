// covenant/engine/trace_context.hpp - a W3C Trace Context (the `traceparent` and `tracestate`
// headers): which trace a piece of work belongs to and which span is its parent.
//
//     auto parent = covenant::trace_context::parse(request.header("traceparent"), request.header("tracestate"));
//     covenant::call_options call;
//     if (parent) call.trace = *parent;      // covenant's spans of the call become its children
//
// A call given a trace context (call_options::trace) sends it on with each model request
// (chat_request::trace: the HTTP engine's `traceparent` / `tracestate` headers), so that a gateway
// or a self-hosted model server can join the trace. With a tracing observer
// (covenant/telemetry/otel.hpp) the call and each of its model requests get spans of their own in
// that trace. The format is https://www.w3.org/TR/trace-context/ (version 00).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "covenant/types/config.hpp"

namespace covenant {

/// A trace id (16 bytes) and span id (8 bytes) with the trace flags and the vendors' tracestate.
/// A default-constructed one is invalid: it stands for "no trace context".
struct trace_context {
  std::array<std::uint8_t, 16> trace_id{};
  std::array<std::uint8_t, 8> span_id{};
  /// The trace flags: bit 0 is `sampled` (the caller may have recorded this span).
  std::uint8_t flags = 0;
  /// The `tracestate` header as received (vendors' key=value list), passed on unchanged.
  std::string tracestate{};

  /// Both ids are not all zeros (what the W3C format requires of a context).
  [[nodiscard]] COVENANT_API bool valid() const noexcept;
  [[nodiscard]] bool sampled() const noexcept { return (flags & 1u) != 0; }
  /// "00-<trace id>-<span id>-<flags>", lower-case hex ("" when invalid).
  [[nodiscard]] COVENANT_API std::string traceparent() const;
  /// The trace id as 32 lower-case hex digits (OTLP/JSON writes ids so).
  [[nodiscard]] COVENANT_API std::string trace_id_hex() const;
  /// The span id as 16 lower-case hex digits.
  [[nodiscard]] COVENANT_API std::string span_id_hex() const;
  /// The same trace and flags with `span` as its span id (a child of this context's span).
  [[nodiscard]] COVENANT_API trace_context with_span(const std::array<std::uint8_t, 8>& span) const;

  /// Reads a `traceparent` header (and the `tracestate` that came with it). nullopt when it is not
  /// one: not 55 characters of version 00 (a later version is read by its first four fields, as
  /// the recommendation says), ids or flags not hex, an all-zero id, version ff.
  [[nodiscard]] COVENANT_API static std::optional<trace_context> parse(std::string_view traceparent,
                                                                       std::string_view tracestate = {});

  friend bool operator==(const trace_context&, const trace_context&) = default;
};

/// A random trace id, never all zeros (a per-thread generator seeded from std::random_device).
[[nodiscard]] COVENANT_API std::array<std::uint8_t, 16> new_trace_id();
/// A random span id, never all zeros.
[[nodiscard]] COVENANT_API std::array<std::uint8_t, 8> new_span_id();

}  // namespace covenant
