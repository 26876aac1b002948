// Internal: libcurl's multi interface driven by a runtime's Boost.Asio I/O loop.
//
// One multi_loop per HTTP engine holds one CURLM handle. Every call into libcurl happens on the
// runtime's I/O strand: sockets are watched with Asio (curl's socket callback says what to wait
// for; the sockets are opened and closed through curl's open/close-socket callbacks so Asio and
// curl agree on who owns them), curl's timer callback arms an Asio timer, and finished transfers
// are handed back to their owners. No thread per transfer, no polling thread.
#pragma once

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <curl/curl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "asio_runtime.hpp"

namespace covenant::detail {

/// One HTTP exchange run by a multi_loop. Its owner configures `easy()`; the loop calls
/// on_done() on the strand when the exchange ended (not after remove()).
class multi_loop;

class http_transfer {
 public:
  /// Takes an easy handle from `loop`'s pool (on the strand).
  explicit http_transfer(multi_loop& loop);
  virtual ~http_transfer();
  http_transfer(const http_transfer&) = delete;
  http_transfer& operator=(const http_transfer&) = delete;

  [[nodiscard]] CURL* easy() const noexcept { return easy_; }
  /// Whether easy() comes from the loop's pool with the options an earlier transfer of the same
  /// loop set (not reset): the owner then only sets what differs per transfer. A loop serves one
  /// owner kind (one engine), so what it sets the same way every time is still there.
  [[nodiscard]] bool configured() const noexcept { return configured_; }
  /// The exchange ended with `code` (CURLE_OK: a complete HTTP response arrived).
  virtual void on_done(CURLcode code) = 0;

 protected:
  /// The handle is freed at the end instead of going back to the pool: for a transfer that sets
  /// it up unlike the loop's usual owner (a health probe's GET on an engine's loop), so that no
  /// later transfer inherits its options.
  void keep_out_of_pool() noexcept { pooled_ = false; }

 private:
  CURL* easy_;
  bool configured_ = false;
  bool pooled_ = true;
  std::weak_ptr<multi_loop> loop_;
};

struct multi_options {
  long max_connections = 0;       ///< CURLMOPT_MAX_TOTAL_CONNECTIONS (0: no limit)
  long max_host_connections = 0;  ///< CURLMOPT_MAX_HOST_CONNECTIONS (0: no limit)
};

class multi_loop : public std::enable_shared_from_this<multi_loop> {
 public:
  multi_loop(runtime& rt, const multi_options& options);
  ~multi_loop();
  multi_loop(const multi_loop&) = delete;
  multi_loop& operator=(const multi_loop&) = delete;

  [[nodiscard]] io_strand& strand() noexcept { return *strand_; }
  [[nodiscard]] boost::asio::io_context& io() noexcept { return *io_; }

  // Everything below: on the strand only.

  /// Starts `t` (its easy handle gets the loop's socket callbacks); keeps it alive until it ends.
  void add(const std::shared_ptr<http_transfer>& t);
  /// Aborts `t` at once (its connection is closed unless it can be reused); on_done is not called.
  void remove(http_transfer& t);
  /// Aborts every transfer and releases the multi handle. Idempotent.
  void shutdown();
  [[nodiscard]] std::size_t active() const noexcept { return transfers_.size(); }
  /// An easy handle: a pooled one (its options as the last transfer left them; `configured` is
  /// set) or a new one. On the strand.
  CURL* take_handle(bool& configured);
  /// Back to the pool (options kept, the pointers to the ended transfer cleared), or freed when
  /// the pool is full. On the strand.
  void give_back(CURL* easy) noexcept;

 private:
  struct socket_state {
    /// The loop's own duplicate of curl's socket, present while curl wants to hear of it (from a
    /// CURL_POLL_IN/OUT to CURL_POLL_REMOVE or close_socket); see forget_sockets().
    std::unique_ptr<boost::asio::posix::stream_descriptor> descriptor;
    int wanted = 0;  // CURL_POLL_IN / CURL_POLL_OUT bits
    bool reading = false;
    bool writing = false;
    std::uint64_t generation = 0;
  };

  static curl_socket_t open_socket(void* clientp, curlsocktype purpose, curl_sockaddr* address);
  static int close_socket(void* clientp, curl_socket_t fd);
  static int on_socket(CURL* easy, curl_socket_t fd, int what, void* userp, void* socketp);
  static int on_timer(CURLM* multi, long timeout_ms, void* userp);

  void arm(curl_socket_t fd, socket_state& s);
  void forget_sockets() noexcept;
  void on_ready(curl_socket_t fd, std::uint64_t generation, int flag, const boost::system::error_code& ec);
  void set_timer(long timeout_ms);
  void on_timer_fired();
  void on_timeout();
  void check_done();


  boost::asio::io_context* io_;
  io_strand* strand_;
  CURLM* multi_ = nullptr;
  boost::asio::steady_timer timer_;
  bool timer_armed_ = false;
  std::chrono::steady_clock::time_point timer_due_{};
  std::unordered_map<curl_socket_t, socket_state> sockets_;
  std::unordered_map<CURL*, std::shared_ptr<http_transfer>> transfers_;
  std::uint64_t next_generation_ = 1;
  std::vector<CURL*> pool_;
  long max_cached_ = 0;  // CURLMOPT_MAXCONNECTS: the most transfers seen at once
};

}  // namespace covenant::detail
