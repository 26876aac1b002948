// The HTTP engine's decision after an exchange (see exchange_decision.hpp).
#include "exchange_decision.hpp"

#include <string>

namespace covenant::detail {

namespace {

std::string no_data_for(const exchange_facts& f) {
  return "no data for " + std::to_string(f.idle_limit.count()) + " ms";
}

exchange_decision retry_or_give_up(const exchange_facts& f, std::string reason, int status) {
  if (f.attempt >= f.attempts)
    return {exchange_next::give_up,
            reason + " (gave up after " + std::to_string(f.attempts) + (f.attempts == 1 ? " attempt)" : " attempts)"),
            status};
  return {exchange_next::retry, std::move(reason), status};
}

// A streamed request answered with an event stream (or one that began its content).
exchange_decision stream_ended(const exchange_facts& f) {
  if (f.stream_finished) {
    if (f.stream_error.empty() || f.content_started) return {exchange_next::deliver, {}, f.status};
    return retry_or_give_up(f, "the server reported an error in the stream: " + f.stream_error, f.status);
  }
  // After the first content byte nothing is retried: what arrived goes to the caller.
  if (f.content_started) {
    std::string why = !f.stream_error.empty() ? "the server reported an error mid-stream: " + f.stream_error
                      : f.idle_timeout        ? no_data_for(f)
                      : !f.transport_ok       ? f.transport_reason
                                              : "the stream ended without [DONE] or a finish reason";
    return {exchange_next::deliver_cut, std::move(why), f.status};
  }
  if (!f.stream_error.empty())
    return retry_or_give_up(f, "the server reported an error in the stream: " + f.stream_error, f.status);
  if (f.idle_timeout) return retry_or_give_up(f, "timed out: " + no_data_for(f), f.status);
  if (!f.transport_ok) {
    if (!f.transport_retryable) return {exchange_next::fail, f.transport_reason, 0};
    return retry_or_give_up(f, f.transport_reason, f.status);
  }
  return retry_or_give_up(f, "the stream ended before any content", f.status);
}

}  // namespace

exchange_decision decide_exchange(const exchange_facts& f) {
  if (f.too_large)
    return {exchange_next::fail,
            "the response body exceeds max_response_bytes (" + std::to_string(f.body_limit) + ")", f.status};
  const bool ok_status = f.transport_ok && f.status >= 200 && f.status < 300;
  if (f.event_stream && (ok_status || f.content_started)) return stream_ended(f);
  if (!f.transport_ok) {
    if (f.idle_timeout) return retry_or_give_up(f, "timed out: " + no_data_for(f), 0);
    if (!f.transport_retryable) return {exchange_next::fail, f.transport_reason, 0};
    return retry_or_give_up(f, f.transport_reason, 0);
  }
  if (ok_status) {
    if (!f.body_error) return {exchange_next::deliver, {}, f.status};
    return {exchange_next::fail, "HTTP " + std::to_string(f.status) + ", but " + *f.body_error, f.status};
  }
  std::string reason = "HTTP " + std::to_string(f.status);
  if (!f.server_message.empty()) reason += ": " + f.server_message;
  if (f.mode_refused) return {exchange_next::fall_back, std::move(reason), f.status};
  if (!f.status_retryable) return {exchange_next::fail, std::move(reason), f.status};
  return retry_or_give_up(f, std::move(reason), f.status);
}

}  // namespace covenant::detail
