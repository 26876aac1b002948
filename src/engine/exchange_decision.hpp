// What the HTTP engine does once an exchange with the server has ended: deliver the reply, hand
// over a cut stream, fail, retry after a wait, or send again in another output mode. A pure
// function of plain facts, so that every rule of the transport is in one table and tested as one
// (tests/engine/exchange_decision_test.cpp). Private to the library.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "covenant/types/config.hpp"

namespace covenant::detail {

/// How one exchange ended, as the HTTP call saw it.
struct exchange_facts {
  /// The body passed http_engine_options::max_response_bytes (`body_limit`).
  bool too_large = false;
  std::size_t body_limit = 0;
  /// libcurl completed the transfer; else `transport_reason` says why, and `transport_retryable`
  /// whether that failure is one to try again (a reset, a timeout, a name not resolved now...).
  bool transport_ok = true;
  bool transport_retryable = true;
  std::string transport_reason{};
  /// The stream went silent for longer than `idle_limit`.
  bool idle_timeout = false;
  std::chrono::milliseconds idle_limit{0};
  /// The HTTP status (0: no response).
  int status = 0;
  /// A streamed request answered with an event stream.
  bool event_stream = false;
  /// The stream said it was finished ([DONE] or a finish reason).
  bool stream_finished = false;
  /// A content byte was handed to the caller already: nothing can be retried any more.
  bool content_started = false;
  /// An error event of the stream (empty: none).
  std::string stream_error{};
  /// A 2xx whole body that is not the dialect's reply: why (nullopt: the body was read, or there was
  /// none to read).
  std::optional<std::string> body_error{};
  /// A non-2xx body's error message (safe to show; empty: none).
  std::string server_message{};
  /// The server refused the request's output mode and another mode is left to try.
  bool mode_refused = false;
  /// The status is one of http_engine_options::retry_statuses.
  bool status_retryable = false;
  /// This exchange's number (1-based) and the most the call may make.
  int attempt = 1;
  int attempts = 1;
};

enum class exchange_next : std::uint8_t {
  deliver,      ///< the reply (a whole body read, or a finished stream)
  deliver_cut,  ///< a stream cut after its first content: what arrived, marked cut off
  fail,         ///< a failure that is not retried
  give_up,      ///< a transient failure with no retry left
  retry,        ///< a transient failure: wait, then send again
  fall_back,    ///< send again at once in the next output mode
};

struct exchange_decision {
  exchange_next next = exchange_next::deliver;
  /// What happened, in words (the engine error's text after "<engine>: POST <url>: "; for
  /// deliver_cut, why the stream ended early; for retry and fall_back, what failed).
  std::string reason{};
  /// The HTTP status the error carries (0: none).
  int status = 0;
};

/// The one decision after an exchange (see exchange_facts).
COVENANT_API exchange_decision decide_exchange(const exchange_facts& f);

}  // namespace covenant::detail
