// libcurl's multi interface on a runtime's Boost.Asio loop (socket and timer callbacks).
#include "http_transport.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <new>
#include <vector>

#include "log.hpp"

namespace covenant::detail {

namespace asio = boost::asio;

http_transfer::http_transfer(multi_loop& loop) : easy_(loop.take_handle(configured_)), loop_(loop.weak_from_this()) {}

http_transfer::~http_transfer() {
  if (auto loop = loop_.lock(); pooled_ && loop && loop->strand().running_in_this_thread()) loop->give_back(easy_);
  else curl_easy_cleanup(easy_);
}

CURL* multi_loop::take_handle(bool& configured) {
  if (!pool_.empty()) {
    CURL* h = pool_.back();
    pool_.pop_back();
    configured = true;
    return h;
  }
  configured = false;
  CURL* h = curl_easy_init();
  if (h == nullptr) throw std::bad_alloc();
  return h;
}

void multi_loop::give_back(CURL* easy) noexcept {
  constexpr std::size_t max_pooled = 256;
  if (pool_.size() >= max_pooled || multi_ == nullptr) {
    curl_easy_cleanup(easy);
    return;
  }
  // Not curl_easy_reset(): the next transfer of this loop sets the same options again, and
  // resetting then setting them again (strings copied, the protocol list parsed) costs more than
  // the transfer's own setup. Only the pointers into the ended transfer are cleared.
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, static_cast<char*>(nullptr));
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, static_cast<void*>(nullptr));
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, static_cast<void*>(nullptr));
  curl_easy_setopt(easy, CURLOPT_POSTFIELDS, static_cast<const char*>(nullptr));
  try {
    pool_.push_back(easy);
  } catch (...) {
    curl_easy_cleanup(easy);
  }
}

multi_loop::multi_loop(runtime& rt, const multi_options& options)
    : io_(&rt.io_context()),
      strand_(&runtime_access::strand(rt)),
      multi_(curl_multi_init()),
      timer_(rt.io_context()) {
  if (multi_ == nullptr) throw std::bad_alloc();
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &multi_loop::on_socket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &multi_loop::on_timer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_PIPELINING, static_cast<long>(CURLPIPE_MULTIPLEX));
  if (options.max_connections > 0) curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, options.max_connections);
  if (options.max_host_connections > 0)
    curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, options.max_host_connections);
}

multi_loop::~multi_loop() {
  // shutdown() ran on the strand before the last owner let go; nothing may call curl here.
  if (multi_ != nullptr) {
    for (auto& [easy, t] : transfers_) curl_multi_remove_handle(multi_, easy);
    transfers_.clear();
    curl_multi_cleanup(multi_);
    multi_ = nullptr;
  }
  for (CURL* h : pool_) curl_easy_cleanup(h);
  forget_sockets();
}

void multi_loop::add(const std::shared_ptr<http_transfer>& t) {
  if (multi_ == nullptr) {
    t->on_done(CURLE_ABORTED_BY_CALLBACK);
    return;
  }
  CURL* e = t->easy();
  curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &multi_loop::open_socket);
  curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, this);
  curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, &multi_loop::close_socket);
  curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, this);
  transfers_[e] = t;
  // Keep as many idle connections as transfers ever ran at once: libcurl's default (four per
  // easy handle in the multi handle) closes connections when a wave of transfers ends together,
  // and the next wave would connect again.
  if (const auto n = static_cast<long>(transfers_.size()); n > max_cached_) {
    max_cached_ = n;
    curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, max_cached_);
  }
  const CURLMcode rc = curl_multi_add_handle(multi_, e);
  if (rc != CURLM_OK) {
    transfers_.erase(e);
    log_error("http_engine: curl_multi_add_handle failed: {}", curl_multi_strerror(rc));
    t->on_done(CURLE_FAILED_INIT);
  }
}

void multi_loop::remove(http_transfer& t) {
  auto it = transfers_.find(t.easy());
  if (it == transfers_.end()) return;
  std::shared_ptr<http_transfer> keep = it->second;  // alive until curl is done with its handle
  transfers_.erase(it);
  if (multi_ != nullptr) curl_multi_remove_handle(multi_, t.easy());
}

void multi_loop::shutdown() {
  if (multi_ == nullptr) return;
  std::vector<std::shared_ptr<http_transfer>> keep;
  for (auto& [easy, t] : transfers_) {
    curl_multi_remove_handle(multi_, easy);
    keep.push_back(t);
  }
  transfers_.clear();
  timer_.cancel();
  curl_multi_cleanup(multi_);  // closes the cached connections through close_socket
  multi_ = nullptr;
  for (CURL* h : pool_) curl_easy_cleanup(h);
  pool_.clear();
  forget_sockets();
}

// How sockets are watched: curl's socket numbers are curl's, and libcurl 7.88 closes some of them
// (the connections of transfers it aborts) without calling close_socket, sometimes before it says
// CURL_POLL_REMOVE. So the I/O loop never waits on, deregisters or closes curl's number: while curl
// wants to hear of a socket, the loop watches a duplicate of its own (taken when curl asks, when the
// number is surely curl's) and closes that duplicate when curl loses interest, when curl closes the
// socket, and at shutdown. A connection curl closed behind our back is then really closed as soon
// as curl says CURL_POLL_REMOVE for it, or at the latest when the loop shuts down.
void multi_loop::forget_sockets() noexcept {
  for (auto& [fd, s] : sockets_) {
    if (!s.descriptor) continue;
    boost::system::error_code ignored;
    s.descriptor->close(ignored);  // the loop's own duplicate
  }
  sockets_.clear();
}

curl_socket_t multi_loop::open_socket(void* clientp, curlsocktype purpose, curl_sockaddr* address) {
  auto* self = static_cast<multi_loop*>(clientp);
  if (purpose != CURLSOCKTYPE_IPCXN) return CURL_SOCKET_BAD;
  const int fd = ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
  if (fd < 0) return CURL_SOCKET_BAD;
  try {
    // A number listed already was closed by curl without close_socket: its entry is stale.
    socket_state& s = self->sockets_[fd];
    if (s.descriptor) {
      boost::system::error_code ignored;
      s.descriptor->close(ignored);
    }
    s = socket_state{};
  } catch (...) {
    ::close(fd);
    return CURL_SOCKET_BAD;
  }
  return fd;
}

int multi_loop::close_socket(void* clientp, curl_socket_t fd) {
  auto* self = static_cast<multi_loop*>(clientp);
  auto it = self->sockets_.find(fd);
  if (it != self->sockets_.end()) {
    if (it->second.descriptor) {
      boost::system::error_code ignored;
      it->second.descriptor->close(ignored);  // pending waits complete as aborted and find no socket
    }
    self->sockets_.erase(it);
  }
  return ::close(fd);
}

int multi_loop::on_socket(CURL*, curl_socket_t fd, int what, void* userp, void*) {
  auto* self = static_cast<multi_loop*>(userp);
  auto it = self->sockets_.find(fd);
  if (it == self->sockets_.end()) return 0;  // not one of ours (never opened through open_socket)
  socket_state& s = it->second;
  if (what == CURL_POLL_REMOVE) {
    // Pending waits complete as aborted and find another generation, or no descriptor.
    s.wanted = 0;
    if (s.descriptor) {
      boost::system::error_code ignored;
      s.descriptor->close(ignored);
      s.descriptor.reset();
    }
    return 0;
  }
  s.wanted = what;
  if (!s.descriptor) {
    const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) return -1;  // curl fails the transfer
    try {
      s.descriptor = std::make_unique<asio::posix::stream_descriptor>(*self->io_, own);
    } catch (...) {
      ::close(own);
      return -1;
    }
    s.generation = self->next_generation_++;
    s.reading = false;
    s.writing = false;
  }
  self->arm(fd, s);
  return 0;
}

void multi_loop::arm(curl_socket_t fd, socket_state& s) {
  if (!s.descriptor) return;  // curl lost interest (CURL_POLL_REMOVE)
  std::weak_ptr<multi_loop> weak = weak_from_this();
  const std::uint64_t gen = s.generation;
  if ((s.wanted & CURL_POLL_IN) != 0 && !s.reading) {
    s.reading = true;
    s.descriptor->async_wait(asio::posix::stream_descriptor::wait_read,
                             asio::bind_executor(*strand_, [weak, fd, gen](const boost::system::error_code& ec) {
                               if (auto self = weak.lock()) self->on_ready(fd, gen, CURL_CSELECT_IN, ec);
                             }));
  }
  if ((s.wanted & CURL_POLL_OUT) != 0 && !s.writing) {
    s.writing = true;
    s.descriptor->async_wait(asio::posix::stream_descriptor::wait_write,
                             asio::bind_executor(*strand_, [weak, fd, gen](const boost::system::error_code& ec) {
                               if (auto self = weak.lock()) self->on_ready(fd, gen, CURL_CSELECT_OUT, ec);
                             }));
  }
}

void multi_loop::on_ready(curl_socket_t fd, std::uint64_t generation, int flag, const boost::system::error_code& ec) {
  auto it = sockets_.find(fd);
  if (it == sockets_.end() || it->second.generation != generation) return;  // closed (and maybe reused)
  (flag == CURL_CSELECT_IN ? it->second.reading : it->second.writing) = false;
  if (ec || multi_ == nullptr) return;
  const int wanted = flag == CURL_CSELECT_IN ? CURL_POLL_IN : CURL_POLL_OUT;
  if ((it->second.wanted & wanted) == 0) return;  // curl lost interest meanwhile
  int running = 0;
  curl_multi_socket_action(multi_, fd, flag, &running);
  check_done();
  it = sockets_.find(fd);
  if (it != sockets_.end() && it->second.generation == generation) arm(fd, it->second);
}

int multi_loop::on_timer(CURLM*, long timeout_ms, void* userp) {
  static_cast<multi_loop*>(userp)->set_timer(timeout_ms);
  return 0;
}

void multi_loop::set_timer(long timeout_ms) {
  if (timeout_ms < 0) {
    timer_.cancel();
    timer_armed_ = false;
    return;
  }
  std::weak_ptr<multi_loop> weak = weak_from_this();
  if (timeout_ms == 0) {
    // "Call me back at once": a posted callback, not a timer (no timerfd system call). A timer
    // already armed stays: cancelling it would cost a timerfd system call now and arming it again
    // another one in a moment, and when it fires early on_timer_fired() asks curl again.
    asio::post(*strand_, [weak] {
      if (auto s = weak.lock()) s->on_timeout();
    });
    return;
  }
  // A timer already due no later than asked for is kept (re-arming costs a system call each
  // time). curl will not repeat a deadline it already gave, so when that timer fires early,
  // on_timer_fired() asks curl for its next deadline itself.
  const auto due = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  if (timer_armed_ && timer_due_ <= due) return;
  timer_armed_ = true;
  timer_due_ = due;
  timer_.expires_at(due);
  timer_.async_wait(asio::bind_executor(*strand_, [weak](const boost::system::error_code& ec) {
    if (ec) return;
    if (auto s = weak.lock()) s->on_timer_fired();
  }));
}

void multi_loop::on_timer_fired() {
  timer_armed_ = false;
  on_timeout();
  if (timer_armed_ || multi_ == nullptr) return;
  // curl answered nothing new (its deadline is the one it gave before, later than this timer):
  // arm for that deadline, or every transfer waiting on a curl timeout (a held request, a
  // connect that never completes) would wait forever.
  long next = -1;
  if (curl_multi_timeout(multi_, &next) == CURLM_OK && next >= 0) set_timer(next);
}

void multi_loop::on_timeout() {
  if (multi_ == nullptr) return;
  int running = 0;
  curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
  check_done();
}

void multi_loop::check_done() {
  if (multi_ == nullptr) return;
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
    if (m->msg != CURLMSG_DONE) continue;
    CURL* easy = m->easy_handle;
    const CURLcode code = m->data.result;
    auto it = transfers_.find(easy);
    if (it == transfers_.end()) continue;
    std::shared_ptr<http_transfer> t = std::move(it->second);
    transfers_.erase(it);
    curl_multi_remove_handle(multi_, easy);
    t->on_done(code);  // may start new transfers (a retry): fine outside curl's callbacks
    if (multi_ == nullptr) return;
  }
}

}  // namespace covenant::detail
