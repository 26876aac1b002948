// Internal: POSTs of OTLP request bodies to a collector, one at a time, on a runtime's I/O loop
// (libcurl's multi interface through engine/http_transport.hpp: no thread of its own), with the
// retries the OTLP specification asks for: 429, 502, 503 and 504 answers and failed connections
// are sent again after an exponential backoff with jitter, or the collector's Retry-After, within
// the export's timeout.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "covenant/engine/retry.hpp"

namespace covenant {
class runtime;
}

namespace covenant::otlp {

struct post_options {
  std::string url;
  std::string content_type;  ///< application/json or application/x-protobuf
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds timeout{10000};  ///< one export, its retries included
  /// The retries of a refused export (otel_options::retry).
  retry_options retry{.tries = 5, .delay = std::chrono::milliseconds(1000), .backoff = 2.0,
                      .max_delay = std::chrono::milliseconds(5000), .jitter = 0.2};
};

/// How one export ended.
struct post_result {
  bool ok = false;      ///< a 2xx answer
  int status = 0;       ///< the last HTTP status (0: no answer)
  int retries = 0;      ///< times it was sent again
  /// OTLP partial success: what the collector said it rejected of an accepted request (JSON
  /// answers only).
  std::int64_t rejected = 0;
  /// Why it failed, as a low-cardinality error.type: the status ("503"), "timeout",
  /// "connection_failed", "transport_error", "aborted".
  std::string error{};
};

/// One collector endpoint. Thread-safe: post() and abort() may be called from any thread.
class poster {
 public:
  /// Throws std::invalid_argument for a URL that is not http(s) or a header with a line break.
  poster(runtime& rt, post_options options);
  /// Aborts what is in flight and waits for the I/O loop to let go (not on the I/O thread).
  ~poster();
  poster(const poster&) = delete;
  poster& operator=(const poster&) = delete;

  /// Sends `body`; `done` runs once on the I/O loop's thread when the export ended.
  void post(std::string body, std::function<void(const post_result&)> done);
  /// Aborts the export in flight (its `done` says "aborted"), without waiting.
  void abort();

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace covenant::otlp
