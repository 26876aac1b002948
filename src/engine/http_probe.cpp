// The HTTP engine's health probe: one GET exchange on the engine's own multi loop, with the
// engine's connection options and headers, no retries and no redirects.
#include "http_probe.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <atomic>
#include <exception>
#include <future>
#include <new>
#include <utility>

#include "wire_dialect.hpp"
#include "wire_text.hpp"

namespace covenant::detail {

namespace {

namespace asio = boost::asio;

/// What the waiting caller gets: set once, by the exchange's end or by the transfer's destruction
/// without one (the engine's loop shut down).
struct probe_state {
  std::promise<probe_result> promise;
  std::atomic<bool> set{false};

  void finish(probe_result r) noexcept {
    if (set.exchange(true)) return;
    try {
      promise.set_value(std::move(r));
    } catch (...) {
    }
  }
};

class probe_transfer final : public http_transfer {
 public:
  probe_transfer(multi_loop& loop, probe_request& r, std::shared_ptr<probe_state> state)
      : http_transfer(loop), state_(std::move(state)), headers_(std::move(r.headers)), shown_url_(r.shown_url),
        secret_(r.secret) {
    // A GET with its own target and callbacks: no later exchange of the engine may inherit them.
    keep_out_of_pool();
    CURL* h = easy();
    r.configure(h);
    curl_easy_setopt(h, CURLOPT_CURLU, static_cast<CURLU*>(nullptr));  // a pooled handle's request target
    curl_easy_setopt(h, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, static_cast<const char*>(nullptr));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers_.get());
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(r.timeout, r.connect_timeout).count()));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &probe_transfer::on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &probe_transfer::on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, this);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_);
  }

  ~probe_transfer() override {
    probe_result r;
    r.url = shown_url_;
    r.latency = elapsed();
    r.message = "the probe was aborted: the engine's I/O loop was shut down";
    state_->finish(std::move(r));  // no-op when the exchange ended
  }
  probe_transfer(const probe_transfer&) = delete;
  probe_transfer& operator=(const probe_transfer&) = delete;

  void on_done(CURLcode code) override {
    probe_result r;
    r.url = shown_url_;
    r.latency = elapsed();
    try {
      if (code != CURLE_OK) {
        r.timed_out = code == CURLE_OPERATION_TIMEDOUT;
        if (code == CURLE_ABORTED_BY_CALLBACK) {
          r.message = "the probe was aborted: the engine's I/O loop was shut down";
        } else {
          const std::string reason = error_[0] != '\0' ? std::string(error_) : std::string(curl_easy_strerror(code));
          r.message = wire::redact(wire::one_line(reason, 300), secret_);
        }
      } else {
        long status = 0;
        curl_easy_getinfo(easy(), CURLINFO_RESPONSE_CODE, &status);
        r.status = static_cast<int>(status);
        r.ok = status >= 200 && status < 300;
        if (!r.ok) r.message = wire::redact(server_error_message(body_, 200), secret_);
      }
    } catch (const std::bad_alloc&) {
      r.message = "out of memory reading the answer";
    }
    state_->finish(std::move(r));
  }

 private:
  /// The beginning of the body is kept, for the server's error message; the rest is read and dropped.
  static constexpr std::size_t kept_bytes = 4096;

  static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto* self = static_cast<probe_transfer*>(user);
    const std::size_t n = size * count;
    const std::size_t room = kept_bytes - std::min(kept_bytes, self->body_.size());
    try {
      self->body_.append(data, std::min(room, n));
    } catch (...) {  // no exception may cross libcurl's C frames
      return 0;
    }
    return n;
  }
  static std::size_t on_header(char*, std::size_t size, std::size_t count, void*) { return size * count; }

  [[nodiscard]] std::chrono::nanoseconds elapsed() const noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started_);
  }

  std::shared_ptr<probe_state> state_;
  curl_header_list headers_;
  std::string shown_url_;
  std::string secret_;
  std::string body_;
  char error_[CURL_ERROR_SIZE] = {};
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace

probe_result run_probe(probe_request r) {
  auto state = std::make_shared<probe_state>();
  std::future<probe_result> answer = state->promise.get_future();
  const std::shared_ptr<multi_loop> loop = r.loop;
  const std::chrono::milliseconds timeout = r.timeout;
  const std::string shown_url = r.shown_url;
  auto request = std::make_shared<probe_request>(std::move(r));
  auto running = std::make_shared<std::weak_ptr<probe_transfer>>();  // on the strand only
  asio::post(loop->strand(), [loop, request, state, running] {
    try {
      auto t = std::make_shared<probe_transfer>(*loop, *request, state);
      *running = t;
      loop->add(t);
    } catch (const std::exception& e) {
      probe_result failed;
      failed.url = request->shown_url;
      failed.message = std::string("cannot start the probe: ") + e.what();
      state->finish(std::move(failed));
    }
  });
  // libcurl ends the exchange by its timeout; the margin only guards against a loop that does not
  // run at all (an application's io_context that was stopped).
  if (answer.wait_for(timeout + std::chrono::seconds(2)) == std::future_status::ready) return answer.get();
  asio::post(loop->strand(), [loop, running] {
    if (auto t = running->lock()) loop->remove(*t);
  });
  probe_result late;
  late.url = shown_url;
  late.timed_out = true;
  late.latency = timeout + std::chrono::seconds(2);
  late.message = "the engine's I/O loop did not run the probe (is the runtime's loop running?)";
  return late;
}

}  // namespace covenant::detail
