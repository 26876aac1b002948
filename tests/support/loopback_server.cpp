// The tests' loopback HTTP server (see loopback_server.hpp).
#include "loopback_server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json.hpp>

#include <time.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <mutex>
#include <thread>

namespace covenant_test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::vector<std::string> openai_stream(const std::vector<std::string>& pieces, const std::string& finish,
                                       int prompt_tokens, int completion_tokens) {
  auto event = [](const boost::json::value& v) { return "data: " + boost::json::serialize(v) + "\n\n"; };
  auto chunk = [](boost::json::object delta, boost::json::value finish_reason) {
    boost::json::object choice{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish_reason)}};
    return boost::json::value{{"id", "chatcmpl-1"},
                              {"object", "chat.completion.chunk"},
                              {"model", "loopback"},
                              {"choices", boost::json::array{std::move(choice)}}};
  };
  std::vector<std::string> out;
  out.push_back(event(chunk({{"role", "assistant"}, {"content", ""}}, nullptr)));
  for (const std::string& p : pieces) out.push_back(event(chunk({{"content", p}}, nullptr)));
  out.push_back(event(chunk({}, boost::json::value(finish))));
  out.push_back(event(boost::json::value{
      {"id", "chatcmpl-1"},
      {"object", "chat.completion.chunk"},
      {"model", "loopback"},
      {"choices", boost::json::array{}},
      {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}}}}));
  out.push_back("data: [DONE]\n\n");
  return out;
}

std::string openai_completion(const std::string& content, int prompt_tokens, int completion_tokens,
                              const std::string& finish) {
  boost::json::value v{{"id", "chatcmpl-1"},
                       {"object", "chat.completion"},
                       {"model", "loopback"},
                       {"choices", boost::json::array{{{"index", 0},
                                                       {"message", {{"role", "assistant"}, {"content", content}}},
                                                       {"finish_reason", finish}}}},
                       {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}}}};
  return boost::json::serialize(v);
}

namespace {

const char* reason_of(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 529: return "Overloaded";
    default: return "Status";
  }
}

}  // namespace

struct loopback_server::impl {
  struct record {
    received_request request;
    std::size_t chunks = 0;
    std::size_t bytes = 0;
    bool left_early = false;
    std::vector<std::chrono::steady_clock::time_point> chunk_at;
  };

  handler answer;
  bool keep_requests = true;
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::thread thread;
  unsigned short port = 0;
  mutable std::mutex mutex;
  mutable std::condition_variable arrived;
  std::vector<record> records;
  std::size_t connections = 0;

  class session : public std::enable_shared_from_this<session> {
   public:
    session(impl& s, tcp::socket socket) : s_(s), socket_(std::move(socket)), timer_(s.io) {}

    void read_request() {
      parser_.emplace();
      parser_->body_limit(64u * 1024u * 1024u);
      http::async_read(socket_, buffer_, *parser_,
                       [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_request(ec); });
    }

   private:
    void on_request(beast::error_code ec) {
      if (ec) return;  // the client closed the connection (or sent garbage)
      http::request<http::string_body> req = parser_->release();
      received_request r;
      r.method = std::string(req.method_string());
      r.target = std::string(req.target());
      for (const auto& f : req) {
        std::string name(f.name_string());
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        // A header sent twice is kept as one, its values joined as HTTP joins them.
        auto [it, fresh] = r.headers.emplace(name, std::string(f.value()));
        if (!fresh) it->second += ", " + std::string(f.value());
      }
      r.body = std::move(req.body());
      r.at = std::chrono::steady_clock::now();
      r.on_connection = served_++;
      keep_alive_ = req.keep_alive();
      {
        std::lock_guard lock(s_.mutex);
        index_ = s_.records.size();
        if (s_.keep_requests) {
          s_.records.push_back({r, 0, 0, false, {}});
        } else {
          received_request brief;
          brief.at = r.at;
          s_.records.push_back({std::move(brief), 0, 0, false, {}});
        }
      }
      s_.arrived.notify_all();
      try {
        plan_ = s_.answer(r, index_);
      } catch (const std::exception& e) {
        plan_ = response_plan{};
        plan_.status = 500;
        plan_.body = std::string(R"({"error": {"message": "the test handler threw: )") + e.what() + "\"}}";
      }
      watch_client();
      if (plan_.close_at_once) return close();
      if (plan_.hang) return;  // watch_client notices when the client goes away
      if (plan_.delay.count() > 0) {
        timer_.expires_after(plan_.delay);
        timer_.async_wait([self = shared_from_this()](beast::error_code e) {
          if (!e) self->send_head();
        });
        return;
      }
      send_head();
    }

    // A read while the answer is being written: it ends when the client closes the connection.
    // What it reads is kept for the next request (a client may send it the moment the answer is
    // complete, before this session is done with its own bookkeeping); once the answer is done,
    // arriving bytes start the next request.
    void watch_client() {
      socket_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, std::size_t n) {
        if (!ec) {
          self->buffer_.commit(n);
          if (!self->finished_) return self->watch_client();
          self->finished_ = false;
          return self->read_request();
        }
        if (ec == asio::error::operation_aborted && self->finished_ && !self->closed_) {
          self->finished_ = false;  // done() stopped the watch: a next request is already buffered
          return self->read_request();
        }
        if (!self->finished_) {
          std::lock_guard lock(self->s_.mutex);
          self->s_.records[self->index_].left_early = true;
        }
        self->gone_ = true;
        self->timer_.cancel();
      });
    }

    void send_head() {
      if (gone_) return;
      std::string head = "HTTP/1.1 " + std::to_string(plan_.status) + " " + reason_of(plan_.status) + "\r\n";
      head += "Content-Type: " + plan_.content_type + "\r\n";
      for (const auto& [k, v] : plan_.headers) head += k + ": " + v + "\r\n";
      if (!keep_alive_) head += "Connection: close\r\n";
      if (plan_.chunks.empty() && plan_.keep_alive.empty() && !plan_.close_mid_stream && !plan_.stall) {
        head += "Content-Length: " + std::to_string(plan_.body.size()) + "\r\n\r\n";
        if (plan_.cut_after < plan_.body.size()) {
          out_ = head + plan_.body.substr(0, plan_.cut_after);
          asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](beast::error_code, std::size_t) {
            {
              std::lock_guard lock(self->s_.mutex);
              self->s_.records[self->index_].bytes = self->plan_.cut_after;
            }
            self->close();
          });
          return;
        }
        if (plan_.trickle > 0) {
          out_ = std::move(head);
          asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
            if (!ec) self->send_trickle(0);
          });
          return;
        }
        out_ = head + plan_.body;
        asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
          if (ec) return;
          {
            std::lock_guard lock(self->s_.mutex);
            self->s_.records[self->index_].bytes = self->plan_.body.size();
          }
          self->done();
        });
        return;
      }
      head += "Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n\r\n";
      out_ = std::move(head);
      asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (!ec) self->send_chunk(0);
      });
    }

    // The whole body, plan_.trickle bytes at a time.
    void send_trickle(std::size_t at) {
      if (gone_) return;
      if (at >= plan_.body.size()) return done();
      const std::size_t n = std::min(plan_.trickle, plan_.body.size() - at);
      out_ = plan_.body.substr(at, n);
      asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this(), at, n](beast::error_code ec, std::size_t) {
        if (ec) return;
        {
          std::lock_guard lock(self->s_.mutex);
          self->s_.records[self->index_].bytes = at + n;
        }
        if (at + n >= self->plan_.body.size()) return self->done();
        self->timer_.expires_after(self->plan_.chunk_delay);
        self->timer_.async_wait([self, next = at + n](beast::error_code e) {
          if (!e) self->send_trickle(next);
        });
      });
    }

    // SSE comments until the client goes away.
    void send_keep_alive() {
      if (gone_) return;
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", plan_.keep_alive.size());
      out_ = size + plan_.keep_alive + "\r\n";
      asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
        if (ec) return;
        self->timer_.expires_after(std::max(self->plan_.chunk_delay, std::chrono::milliseconds(1)));
        self->timer_.async_wait([self](beast::error_code e) {
          if (!e) self->send_keep_alive();
        });
      });
    }

    void send_chunk(std::size_t i) {
      if (gone_) return;
      if (i == plan_.chunks.size()) {
        if (!plan_.keep_alive.empty()) return send_keep_alive();
        if (plan_.stall) return;  // watch_client notices when the client goes away
        if (plan_.close_mid_stream) return close();
        out_ = "0\r\n\r\n";
        asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
          if (!ec) self->done();
        });
        return;
      }
      const std::string& piece = plan_.chunks[i];
      char size[32];
      std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
      out_ = size + piece + "\r\n";
      asio::async_write(socket_, asio::buffer(out_), [self = shared_from_this(), i](beast::error_code ec, std::size_t) {
        if (ec) return;
        {
          std::lock_guard lock(self->s_.mutex);
          auto& rec = self->s_.records[self->index_];
          ++rec.chunks;
          rec.bytes += self->plan_.chunks[i].size();
          rec.chunk_at.push_back(std::chrono::steady_clock::now());
        }
        if (self->plan_.chunk_delay.count() > 0 && i + 1 <= self->plan_.chunks.size()) {
          self->timer_.expires_after(self->plan_.chunk_delay);
          self->timer_.async_wait([self, i](beast::error_code e) {
            if (!e) self->send_chunk(i + 1);
          });
        } else {
          self->send_chunk(i + 1);
        }
      });
    }

    void done() {
      finished_ = true;
      if (!keep_alive_) return close();
      // The watching read stays pending and starts the next request when it arrives; one that is
      // already buffered is parsed at once.
      if (buffer_.size() > 0) {
        beast::error_code ignored;
        socket_.cancel(ignored);
      }
    }

    void close() {
      finished_ = true;
      closed_ = true;
      beast::error_code ignored;
      socket_.shutdown(tcp::socket::shutdown_both, ignored);
      socket_.close(ignored);
    }

    impl& s_;
    tcp::socket socket_;
    asio::steady_timer timer_;
    beast::flat_buffer buffer_;
    std::optional<http::request_parser<http::string_body>> parser_;
    response_plan plan_;
    std::string out_;
    std::size_t index_ = 0;
    bool keep_alive_ = true;
    bool finished_ = false;
    bool gone_ = false;
    bool closed_ = false;
    std::size_t served_ = 0;  // requests answered on this connection before the current one
  };

  void accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;
      {
        std::lock_guard lock(mutex);
        ++connections;
      }
      socket.set_option(tcp::no_delay(true));
      std::make_shared<session>(*this, std::move(socket))->read_request();
      accept();
    });
  }
};

loopback_server::loopback_server(handler h, bool keep_requests) : impl_(std::make_unique<impl>()) {
  impl_->answer = std::move(h);
  impl_->keep_requests = keep_requests;
  tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(ep.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(ep);
  impl_->acceptor.listen(4096);
  impl_->port = impl_->acceptor.local_endpoint().port();
  impl_->accept();
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

loopback_server::~loopback_server() {
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

unsigned short loopback_server::port() const noexcept { return impl_->port; }
std::string loopback_server::base_url() const { return "http://127.0.0.1:" + std::to_string(impl_->port) + "/v1"; }

std::size_t loopback_server::requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->records.size();
}

received_request loopback_server::request(std::size_t i) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->records.at(i).request;
}

std::size_t loopback_server::connections() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->connections;
}

std::size_t loopback_server::chunks_sent(std::size_t i) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->records.at(i).chunks;
}

std::size_t loopback_server::bytes_sent(std::size_t i) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->records.at(i).bytes;
}

bool loopback_server::client_left_early(std::size_t i) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->records.at(i).left_early;
}

double loopback_server::cpu_seconds() const {
  std::promise<double> cpu;
  std::future<double> out = cpu.get_future();
  asio::post(impl_->io, [&cpu] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    cpu.set_value(static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9);
  });
  return out.get();
}

std::vector<std::chrono::steady_clock::time_point> loopback_server::chunk_times(std::size_t i) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->records.at(i).chunk_at;
}

bool loopback_server::wait_for_requests(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->arrived.wait_for(lock, timeout, [&] { return impl_->records.size() >= n; });
}

}  // namespace covenant_test
