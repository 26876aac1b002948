// src/engine/sse.hpp - an incremental parser of Server-Sent Events (the WHATWG HTML
// "event stream" format), as streaming chat APIs send them.
//
// Bytes are fed as they arrive, split anywhere (inside a line, inside a UTF-8 character, between
// the CR and the LF of a CRLF). Lines end with CRLF, LF or CR; a leading byte-order mark is
// dropped; a line that starts with ':' is a comment; `field: value` lines set a field (one space
// after the colon is removed; a line without a colon is a field with an empty value); `data`
// lines are joined with "\n"; `event`, `id` and `retry` are kept; other fields are ignored; an
// empty line dispatches the event, unless its data is empty. At the end of the stream an event
// not closed by an empty line is not dispatched (incomplete() tells whether there was one).
// Hand-written: no library in Debian parses this format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "covenant/types/config.hpp"

namespace covenant::detail {

/// One dispatched event.
struct sse_event {
  std::string_view type;  ///< the `event` field, "message" when none was given
  std::string_view data;  ///< the `data` lines joined with "\n"
  std::string_view id;    ///< the last event id seen so far
};

class COVENANT_API sse_parser {
 public:
  /// `on_event` is called for each dispatched event, in order; returning false stops the parser
  /// (the rest of that feed() and every later one is ignored).
  explicit sse_parser(std::function<bool(const sse_event&)> on_event) : on_event_(std::move(on_event)) {}

  /// Feeds the next bytes of the stream.
  void feed(std::string_view bytes);
  /// The stream ended. Returns whether an event was left incomplete (not dispatched); its data
  /// (an unfinished last line included) stays readable through unfinished_data().
  bool finish();
  /// The data of the event the stream ended in without dispatching it (after finish()): some
  /// servers end with "data: [DONE]" and no empty line after it.
  [[nodiscard]] const std::string& unfinished_data() const noexcept { return unfinished_; }

  /// An event was started but not yet dispatched (or the last line is not finished).
  [[nodiscard]] bool incomplete() const noexcept { return !line_.empty() || has_data_ || saw_field_; }
  /// The reconnection time the stream asked for (`retry: <ms>`), if any.
  [[nodiscard]] std::optional<std::uint64_t> retry_ms() const noexcept { return retry_; }
  /// Events dispatched so far.
  [[nodiscard]] std::size_t events() const noexcept { return dispatched_; }
  /// Whether the callback stopped the parser.
  [[nodiscard]] bool stopped() const noexcept { return stopped_; }

 private:
  void line(std::string_view l);
  void dispatch();

  std::function<bool(const sse_event&)> on_event_;
  std::string line_;        // the unfinished line so far
  std::string data_;
  std::string type_;
  std::string last_id_;
  std::string unfinished_;
  std::optional<std::uint64_t> retry_;
  bool has_data_ = false;   // a data field was seen in the current event
  bool saw_field_ = false;  // any field was seen in the current event
  bool pending_cr_ = false; // the previous chunk ended with CR: skip one LF
  bool at_start_ = true;    // a BOM may still come
  bool stopped_ = false;
  std::size_t dispatched_ = 0;
};

}  // namespace covenant::detail
