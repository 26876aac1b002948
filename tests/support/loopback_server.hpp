// An event-driven HTTP/1.1 server on 127.0.0.1 for the tests and benchmarks (Boost.Beast on one
// Asio thread): each request is answered as a plan says - after a delay, with a status and
// headers, a whole body, or a chunked stream written piece by piece with delays between pieces,
// a hang, or a connection closed mid-stream - and everything is counted: requests, their arrival
// times, connections, pieces sent, and whether the client went away before the end.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace covenant_test {

/// How to answer one request.
struct response_plan {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  ///< extra headers (Retry-After, ...)
  std::string body;                                          ///< the whole body (when `chunks` is empty)
  std::chrono::milliseconds delay{0};                        ///< before anything is sent
  std::vector<std::string> chunks;                           ///< a chunked body, written piece by piece
  std::chrono::milliseconds chunk_delay{0};                  ///< between two pieces
  bool close_mid_stream = false;  ///< after the pieces, close the connection without ending the body
  bool hang = false;              ///< never answer (until the client goes away)
  bool close_at_once = false;     ///< close the connection without any answer
  /// A whole body: the head announces all of it (Content-Length), only its first `cut_after`
  /// bytes are sent, then the connection is closed (npos: send it all).
  std::size_t cut_after = static_cast<std::size_t>(-1);
  /// A whole body written `trickle` bytes at a time, `chunk_delay` apart (0: at once).
  std::size_t trickle = 0;
  /// A chunked body: after the pieces, `keep_alive` (an SSE comment) every `chunk_delay`, until
  /// the client goes away.
  std::string keep_alive;
  /// A chunked body: after the pieces, nothing more, the connection left open (until the client
  /// goes away).
  bool stall = false;
};

/// A request as the server saw it.
struct received_request {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  ///< names in lower case; a repeated one's values joined by ", "
  std::string body;
  std::chrono::steady_clock::time_point at;
  std::size_t on_connection = 0;  ///< requests its connection carried before it (0: a new connection)
};

/// A whole body (JSON by default).
inline response_plan whole_reply(std::string body) {
  response_plan p;
  p.body = std::move(body);
  return p;
}

/// A Server-Sent Events body, one piece per element.
inline response_plan streamed_reply(std::vector<std::string> events) {
  response_plan p;
  p.content_type = "text/event-stream";
  p.chunks = std::move(events);
  return p;
}

/// An SSE body in the OpenAI chunk format, one piece per event: the role-only first delta, each
/// piece of `text` as a content delta, the finish reason, a usage-only chunk and [DONE].
std::vector<std::string> openai_stream(const std::vector<std::string>& pieces, const std::string& finish = "stop",
                                       int prompt_tokens = 10, int completion_tokens = 5);
/// A non-streamed chat completion with `content`.
std::string openai_completion(const std::string& content, int prompt_tokens = 10, int completion_tokens = 5,
                              const std::string& finish = "stop");

class loopback_server {
 public:
  using handler = std::function<response_plan(const received_request&, std::size_t index)>;

  /// Listens on 127.0.0.1 (a free port) and answers each request with `h(request, index)`,
  /// called on the server's thread. With `keep_requests` false, request() returns only the
  /// arrival time of each request (benchmarks of many requests keep their memory flat).
  explicit loopback_server(handler h, bool keep_requests = true);
  ~loopback_server();
  loopback_server(const loopback_server&) = delete;
  loopback_server& operator=(const loopback_server&) = delete;

  [[nodiscard]] unsigned short port() const noexcept;
  /// http://127.0.0.1:<port>/v1
  [[nodiscard]] std::string base_url() const;

  [[nodiscard]] std::size_t requests() const;
  [[nodiscard]] received_request request(std::size_t i) const;
  [[nodiscard]] std::size_t connections() const;
  /// Pieces of the i-th request's chunked body written so far.
  [[nodiscard]] std::size_t chunks_sent(std::size_t i) const;
  /// Bytes of the i-th request's body written so far.
  [[nodiscard]] std::size_t bytes_sent(std::size_t i) const;
  /// The client closed the i-th request's connection before its answer was complete.
  [[nodiscard]] bool client_left_early(std::size_t i) const;
  /// Waits until `n` requests arrived or `timeout` passed; returns whether they did.
  bool wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) const;
  /// CPU time the server's own thread has used so far, in seconds (to tell it apart from the
  /// client's in a benchmark that runs both in one process).
  [[nodiscard]] double cpu_seconds() const;
  /// When each piece of the i-th request's chunked body was written (steady clock).
  [[nodiscard]] std::vector<std::chrono::steady_clock::time_point> chunk_times(std::size_t i) const;

  struct impl;

 private:
  std::unique_ptr<impl> impl_;
};

}  // namespace covenant_test
