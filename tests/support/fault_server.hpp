// A model server on 127.0.0.1 that answers with faults drawn from a seed, for the fault-injection
// tests and the soak benchmark: 429s (Retry-After in seconds, as an HTTP-date, retry-after-ms, or
// none), 5xx with an HTML or an empty body, a connection closed before any byte, a body cut short,
// a request held past the client's timeout, a good body trickled a few bytes at a time, a 200 that
// is not JSON or has no choices, a stream cut mid-event, a stream of keep-alive comments only, a
// stream that goes silent after its first content. It
// speaks the OpenAI Chat Completions or the Anthropic Messages dialect, whole or streamed, and
// answers in the output mode the request asked for (text, JSON, or the forced tool).
//
// Deterministic: the requests about one record (its key: the text of the request's first user
// message) draw their faults from hash(seed, key, n) for the record's n-th request, whatever
// order requests arrive in, so a failing run reruns the same. Every fault served is recorded per
// key, so a test can tell exactly what each call went through.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loopback_server.hpp"

namespace covenant_test {

enum class fault : std::uint8_t {
  none,               ///< a good answer
  rate_limited,       ///< 429, Retry-After in seconds
  rate_limited_date,  ///< 429, Retry-After as an HTTP-date
  rate_limited_ms,    ///< 429, retry-after-ms
  rate_limited_bare,  ///< 429 without a Retry-After
  server_error_html,  ///< 500, 502, 503 or 529 with an HTML body
  server_error_empty, ///< 500, 502, 503 or 529 with an empty body
  close_at_once,      ///< the connection accepted, then closed before any byte
  cut_body,           ///< the head, then part of the body (Content-Length larger than sent), closed
  hold,               ///< no answer until the client gives up
  trickle,            ///< a good answer a few bytes at a time
  not_json,           ///< 200 whose body is not JSON
  empty_choices,      ///< 200 with "choices": [] (Anthropic: "content": [])
  stream_cut,         ///< a stream cut in the middle of an event, after some content
  stream_comments,    ///< a stream of keep-alive comments only, until the client gives up
  stream_stall,       ///< a stream that goes silent after some content, the connection left open
  /// close_at_once on a connection that carried a request before: libcurl sends the request again
  /// on a new connection by itself (recorded, never drawn: the client sees no failure).
  close_reused,
};

std::string_view to_string(fault f) noexcept;
/// Every fault kind that can be drawn, none first.
std::vector<fault> all_faults();
/// Faults only a streamed request can get.
bool stream_only(fault f) noexcept;

enum class dialect : std::uint8_t { openai, anthropic };
std::string_view to_string(dialect d) noexcept;

struct fault_options {
  std::uint64_t seed = 1;
  covenant_test::dialect dialect = covenant_test::dialect::openai;
  /// Chance that a request gets a fault (drawn per request); the fault is then drawn from `mix`.
  double fault_rate = 0.3;
  /// The faults drawn, with their weights (default: every fault, equally; stream-only faults are
  /// left out for requests that do not stream).
  std::vector<std::pair<fault, double>> mix{};
  /// A fixed script instead of drawing: the n-th request of every key gets script[n] (none after
  /// its end).
  std::vector<fault> script{};
  /// The model's good answer (the reply text, or the forced tool's input as JSON text) to a request
  /// whose first user message is `key`. Default: {"label": "ok"}.
  std::function<std::string(const std::string& key)> answer{};
  /// Bytes per piece and the pause between pieces of a trickled body or stream.
  std::size_t trickle_bytes = 16;
  std::chrono::milliseconds trickle_delay{2};
  /// Pause between two keep-alive comments of `stream_comments`.
  std::chrono::milliseconds comment_every{20};
  /// Retry-After of `rate_limited` ("0.02": seconds, fractions allowed) and of `rate_limited_ms`.
  std::string retry_after = "0.02";
  std::string retry_after_ms = "20";
  /// Keep the requests' bodies (memory grows with the run; off for the soak benchmark).
  bool keep_requests = false;
};

class fault_server {
 public:
  explicit fault_server(fault_options o);
  ~fault_server();
  fault_server(const fault_server&) = delete;
  fault_server& operator=(const fault_server&) = delete;

  /// What an engine of the dialect takes as base_url (OpenAI: http://127.0.0.1:<port>/v1; Anthropic:
  /// http://127.0.0.1:<port>).
  [[nodiscard]] std::string base_url() const;
  [[nodiscard]] unsigned short port() const noexcept;
  [[nodiscard]] std::size_t requests() const;
  /// The faults served to `key`'s requests, in order (none for a good answer).
  [[nodiscard]] std::vector<fault> served(const std::string& key) const;
  /// Every key seen, with the faults it was served.
  [[nodiscard]] std::map<std::string, std::vector<fault>> served() const;
  /// How many requests got each fault.
  [[nodiscard]] std::map<fault, std::size_t> counts() const;
  [[nodiscard]] const loopback_server& server() const noexcept;

  /// The key of a request: the text of its first user message (either dialect).
  static std::string key_of(std::string_view body);

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

/// A loopback port that nothing listens on (connections to it are refused).
unsigned short refused_port();

}  // namespace covenant_test
