// The HTTP engine's decision after each exchange with the server, as one table: how the exchange
// ended (its facts) and what the engine does (deliver, hand over a cut stream, fail, give up,
// retry, fall back to another output mode), with the words of the error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/exchange_decision.hpp"

namespace {

using covenant::detail::decide_exchange;
using covenant::detail::exchange_decision;
using covenant::detail::exchange_facts;
using covenant::detail::exchange_next;

struct row {
  std::string what;
  exchange_facts facts;
  exchange_next next;
  std::string reason;
  int status;
};

exchange_facts http(int status, int attempt = 1, int attempts = 3) {
  exchange_facts f;
  f.status = status;
  f.attempt = attempt;
  f.attempts = attempts;
  return f;
}

exchange_facts with(exchange_facts f, void (*set)(exchange_facts&)) {
  set(f);
  return f;
}

exchange_facts stream(int status = 200) {
  exchange_facts f = http(status);
  f.event_stream = true;
  f.idle_limit = std::chrono::milliseconds(60'000);
  return f;
}

const std::vector<row>& table() {
  static const std::vector<row> rows = {
      {"a whole 2xx body read", http(200), exchange_next::deliver, "", 200},
      {"a whole 2xx body that is not the dialect's reply",
       with(http(200), [](exchange_facts& f) { f.body_error = "the response body is not JSON: \"<html>\""; }),
       exchange_next::fail, "HTTP 200, but the response body is not JSON: \"<html>\"", 200},
      {"a retryable status", with(http(429), [](exchange_facts& f) {
         f.status_retryable = true;
         f.server_message = "slow down";
       }),
       exchange_next::retry, "HTTP 429: slow down", 429},
      {"a retryable status at the last attempt", with(http(503, 3, 3), [](exchange_facts& f) { f.status_retryable = true; }),
       exchange_next::give_up, "HTTP 503 (gave up after 3 attempts)", 503},
      {"a retryable status with one attempt in all", with(http(503, 1, 1), [](exchange_facts& f) { f.status_retryable = true; }),
       exchange_next::give_up, "HTTP 503 (gave up after 1 attempt)", 503},
      {"a status that is not retried", with(http(400), [](exchange_facts& f) { f.server_message = "bad request"; }),
       exchange_next::fail, "HTTP 400: bad request", 400},
      {"the output mode refused, another left", with(http(400), [](exchange_facts& f) {
         f.server_message = "response_format is not supported";
         f.mode_refused = true;
       }),
       exchange_next::fall_back, "HTTP 400: response_format is not supported", 400},
      {"a transport failure to retry", with(http(0), [](exchange_facts& f) {
         f.transport_ok = false;
         f.transport_reason = "Connection reset by peer";
       }),
       exchange_next::retry, "Connection reset by peer", 0},
      {"a transport failure not to retry", with(http(0), [](exchange_facts& f) {
         f.transport_ok = false;
         f.transport_retryable = false;
         f.transport_reason = "URL using bad/illegal format";
       }),
       exchange_next::fail, "URL using bad/illegal format", 0},
      {"silence past the idle limit", with(http(0), [](exchange_facts& f) {
         f.transport_ok = false;
         f.idle_timeout = true;
         f.idle_limit = std::chrono::milliseconds(250);
       }),
       exchange_next::retry, "timed out: no data for 250 ms", 0},
      {"a body past the limit", with(http(200), [](exchange_facts& f) {
         f.too_large = true;
         f.body_limit = 10;
       }),
       exchange_next::fail, "the response body exceeds max_response_bytes (10)", 200},
      {"a finished stream", with(stream(), [](exchange_facts& f) { f.stream_finished = true; }), exchange_next::deliver,
       "", 200},
      {"a finished stream that reported an error before any content", with(stream(), [](exchange_facts& f) {
         f.stream_finished = true;
         f.stream_error = "overloaded";
       }),
       exchange_next::retry, "the server reported an error in the stream: overloaded", 200},
      {"a finished stream with an error after its content", with(stream(), [](exchange_facts& f) {
         f.stream_finished = true;
         f.content_started = true;
         f.stream_error = "overloaded";
       }),
       exchange_next::deliver, "", 200},
      {"a stream cut after its first content", with(stream(), [](exchange_facts& f) {
         f.content_started = true;
         f.transport_ok = false;
         f.transport_reason = "Transferred a partial file";
       }),
       exchange_next::deliver_cut, "Transferred a partial file", 200},
      {"a stream silent after its first content", with(stream(), [](exchange_facts& f) {
         f.content_started = true;
         f.idle_timeout = true;
       }),
       exchange_next::deliver_cut, "no data for 60000 ms", 200},
      {"a stream that reported an error after its first content", with(stream(), [](exchange_facts& f) {
         f.content_started = true;
         f.stream_error = "internal";
       }),
       exchange_next::deliver_cut, "the server reported an error mid-stream: internal", 200},
      {"a stream that ended without a finish after its content",
       with(stream(), [](exchange_facts& f) { f.content_started = true; }), exchange_next::deliver_cut,
       "the stream ended without [DONE] or a finish reason", 200},
      {"a stream that ended before any content", stream(), exchange_next::retry, "the stream ended before any content",
       200},
      {"a stream silent before any content", with(stream(), [](exchange_facts& f) { f.idle_timeout = true; }),
       exchange_next::retry, "timed out: no data for 60000 ms", 200},
      {"a stream cut before any content, not to retry", with(stream(), [](exchange_facts& f) {
         f.transport_ok = false;
         f.transport_retryable = false;
         f.transport_reason = "SSL peer certificate was not OK";
       }),
       exchange_next::fail, "SSL peer certificate was not OK", 0},
      {"a stream asked for, answered with an error status", with(stream(500), [](exchange_facts& f) {
         f.status_retryable = true;
       }),
       exchange_next::retry, "HTTP 500", 500},
  };
  return rows;
}

TEST(ExchangeDecision, EachWayAnExchangeEndsHasItsOneDecision) {
  for (const row& r : table()) {
    SCOPED_TRACE(r.what);
    const exchange_decision d = decide_exchange(r.facts);
    EXPECT_EQ(static_cast<int>(d.next), static_cast<int>(r.next));
    EXPECT_EQ(d.reason, r.reason);
    EXPECT_EQ(d.status, r.status);
  }
}

}  // namespace
