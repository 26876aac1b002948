// What the HTTP engine and its calls share (src/engine/http_engine.cpp, http_call.cpp): the
// engine's settings made once, its I/O loop and the table of its calls in flight. Private to the
// library.
#pragma once

#include <curl/curl.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "covenant/engine/http_engine.hpp"
#include "covenant/engine/retry.hpp"
#include "curl_handles.hpp"
#include "http_transport.hpp"
#include "wire_dialect.hpp"
#include "wire_text.hpp"

namespace covenant::detail::http {

class http_call;

/// A transport failure worth another attempt (a reset, a timeout, a name not resolved now...).
bool retryable_curl_code(CURLcode code) noexcept;
/// Seconds (a server's Retry-After) as nanoseconds, clamped to [0, 1e9 s].
std::chrono::nanoseconds seconds_to_ns(double seconds);

/// What an engine shares with its calls in flight (they may outlive the engine object).
struct http_shared {
  http_engine_options options;
  std::unique_ptr<detail::wire_dialect> dialect;
  /// output_mode::automatic: the dialect's modes, best first, and the first one this endpoint has
  /// not refused (a server's refusal moves it on for every later call).
  std::vector<output_mode> modes;
  std::atomic<std::size_t> auto_from{0};
  std::string endpoint;   // the real URL
  std::string shown_url;  // the URL as logged and put into messages
  std::string user_agent;
  covenant::engine_info info;  // provider, model, host and port (telemetry)
  detail::curl_url_ptr url;  // the endpoint parsed once (else curl parses the URL text for every transfer)
  detail::curl_header_list headers;         // for whole replies
  detail::curl_header_list stream_headers;  // for streams
  bool user_agent_header = false;  // the user agent is a line of the lists (not CURLOPT_USERAGENT)
  std::string proxy;     // "" : none
  std::string no_proxy;
  bool h2c_reuse = true;  // libcurl can reuse HTTP/2 prior-knowledge connections (7.89 and later)
  runtime* rt = nullptr;
  std::shared_ptr<detail::multi_loop> loop;
  // On the strand only:
  /// The calls in flight, owned here until they end. Between two exchanges of a call (the wait
  /// before a transport retry, its turn under the rate limiter) nothing else holds it: its timer
  /// and the limiter's grant hold weak pointers, so a call must not depend on them to stay alive.
  std::unordered_map<std::uint64_t, std::shared_ptr<http_call>> calls;
  /// calls.size(), readable from any thread (http_engine::calls_in_flight).
  std::atomic<std::size_t> in_table{0};
  void table_changed() noexcept { in_table.store(calls.size(), std::memory_order_relaxed); }
  std::uint64_t next_call = 1;
  bool closed = false;

  /// Text from the server or curl, safe for logs and messages.
  [[nodiscard]] std::string safe(std::string text) const { return wire::redact(std::move(text), options.api_key); }

  [[nodiscard]] std::string curl_reason(CURLcode code, const char* error_buffer) const {
    std::string text = error_buffer[0] != '\0' ? std::string(error_buffer) : std::string(curl_easy_strerror(code));
    std::string kind = code == CURLE_OPERATION_TIMEDOUT ? "timed out"
                       : (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
                          code == CURLE_COULDNT_RESOLVE_PROXY)
                           ? "connection failed"
                           : "transport error";
    return kind + ": " + safe(wire::one_line(text, 300));
  }

  [[nodiscard]] std::chrono::nanoseconds wait_before(int retry, const std::optional<std::string>& retry_after,
                                                     const std::optional<std::string>& retry_after_ms) const {
    const auto cap = std::chrono::duration_cast<std::chrono::nanoseconds>(options.retry.max_delay);
    if (options.honour_retry_after) {
      std::optional<std::chrono::nanoseconds> asked;
      if (retry_after_ms) {
        if (const auto ms = wire::parse_number(*retry_after_ms); ms && *ms >= 0) asked = seconds_to_ns(*ms / 1000.0);
      }
      if (!asked && retry_after) asked = detail::parse_retry_after(*retry_after, std::chrono::system_clock::now());
      if (asked) return std::min(*asked, cap);
    }
    const double u = options.random ? options.random() : detail::default_random();
    return options.retry.delay_before(retry, std::clamp(u, 0.0, 1.0));
  }
};

/// The connection settings of every transfer of the engine (proxy, TLS, HTTP version, limits).
void set_connection_options(CURL* h, const http_shared& s);
/// The mode a request goes out in, and its index in the engine's modes.
std::pair<output_mode, std::size_t> resolve_mode(const http_shared& s, const chat_request& request);
/// Starts one call of the engine (http_engine::start).
void start_call(const std::shared_ptr<http_shared>& s, const chat_request& request,
                std::shared_ptr<reply_receiver> receiver, std::stop_token stop);
/// The engine is going: every call in flight ends with a cancellation (on the strand).
void abort_calls(http_shared& s);

}  // namespace covenant::detail::http
