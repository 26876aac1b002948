// OTLP/HTTP exports: one POST at a time on the runtime's I/O loop, retried as the OTLP
// specification says (429, 502, 503, 504, no connection), within the export's timeout.
#include "otlp_http.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/parse.hpp>
#include <curl/curl.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <future>
#include <optional>
#include <random>
#include <stdexcept>

#include "covenant/engine/runtime.hpp"
#include "covenant/types/version.hpp"
#include "engine/curl_handles.hpp"
#include "engine/http_transport.hpp"
#include "engine/log.hpp"
#include "engine/wire_dialect.hpp"
#include "engine/wire_text.hpp"

namespace covenant::otlp {

namespace asio = boost::asio;

namespace {

class transfer;

bool has_crlf(std::string_view s) noexcept { return s.find_first_of("\r\n") != std::string_view::npos; }

}  // namespace

struct poster::impl : std::enable_shared_from_this<impl> {
  post_options o;
  std::shared_ptr<detail::multi_loop> loop;
  detail::curl_header_list headers;
  std::string user_agent;

  struct job {
    std::string body;
    std::function<void(const post_result&)> done;
    std::chrono::steady_clock::time_point deadline;
    post_result result;
  };
  // On the strand only.
  std::deque<job> jobs;  // the front one is being sent
  std::shared_ptr<transfer> current;
  std::unique_ptr<asio::steady_timer> timer;
  bool closed = false;

  void start_next();
  void send();
  void on_done(transfer& t, CURLcode code);
  void finish(post_result r);
  void abort_all(const char* why);
};

namespace {

class transfer final : public detail::http_transfer {
 public:
  transfer(detail::multi_loop& loop, std::weak_ptr<poster::impl> owner, const poster::impl& p, const std::string& body,
           std::chrono::milliseconds timeout)
      : detail::http_transfer(loop), owner_(std::move(owner)) {
    CURL* h = easy();
    curl_easy_setopt(h, CURLOPT_URL, p.o.url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, p.headers.get());
    const long ms = std::max<long>(1, static_cast<long>(timeout.count()));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &transfer::on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &transfer::on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, this);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  }

  void on_done(CURLcode code) override {
    curl_easy_getinfo(easy(), CURLINFO_RESPONSE_CODE, &status);
    if (auto p = owner_.lock()) p->on_done(*this, code);
  }

  static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto* t = static_cast<transfer*>(user);
    const std::size_t n = size * count;
    try {
      // The answer is read up to 64 KiB (its partial success); the rest is let through unread.
      if (t->body.size() < 64 * 1024) t->body.append(data, std::min(n, 64 * 1024 - t->body.size()));
    } catch (...) {
      return 0;
    }
    return n;
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    auto* t = static_cast<transfer*>(user);
    const std::size_t n = size * count;
    try {
      std::string_view line(data, n);
      const auto colon = line.find(':');
      if (colon != std::string_view::npos &&
          detail::wire::iequals(detail::wire::trim(line.substr(0, colon)), "retry-after"))
        t->retry_after = std::string(detail::wire::trim(line.substr(colon + 1)));
      else if (line.starts_with("HTTP/"))
        t->retry_after.reset();
    } catch (...) {
      return 0;
    }
    return n;
  }

  long status = 0;
  std::string body;
  std::optional<std::string> retry_after;
  char error_buffer[CURL_ERROR_SIZE] = {};

 private:
  std::weak_ptr<poster::impl> owner_;
};

bool retryable_status(long s) noexcept { return s == 429 || s == 502 || s == 503 || s == 504; }

bool retryable_code(CURLcode c) noexcept {
  switch (c) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      return true;
    default:
      return false;
  }
}

/// OTLP's partial success in a JSON answer: how many items the collector rejected.
std::int64_t rejected_of(const std::string& body) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return 0;
  const boost::json::value* ps = v.as_object().if_contains("partialSuccess");
  if (ps == nullptr || !ps->is_object()) return 0;
  for (const char* key : {"rejectedSpans", "rejectedDataPoints"}) {
    const boost::json::value* r = ps->as_object().if_contains(key);
    if (r == nullptr) continue;
    if (r->is_int64()) return r->as_int64();
    if (r->is_uint64()) return static_cast<std::int64_t>(r->as_uint64());
    if (r->is_string()) {
      try {
        return std::stoll(std::string(r->as_string()));
      } catch (...) {
        return 0;
      }
    }
  }
  return 0;
}

}  // namespace

void poster::impl::start_next() {
  if (current || timer || jobs.empty()) return;
  send();
}

void poster::impl::send() {
  job& j = jobs.front();
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(j.deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) {
    post_result r = j.result;
    r.ok = false;
    r.error = "timeout";
    return finish(std::move(r));
  }
  try {
    current = std::make_shared<transfer>(*loop, weak_from_this(), *this, j.body, left);
  } catch (const std::exception& e) {
    post_result r = j.result;
    r.error = "transport_error";
    return finish(std::move(r));
  }
  loop->add(current);
}

void poster::impl::on_done(transfer& t, CURLcode code) {
  if (!current || current.get() != &t || jobs.empty()) return;
  const std::shared_ptr<transfer> keep = std::move(current);
  job& j = jobs.front();
  j.result.status = code == CURLE_OK ? static_cast<int>(t.status) : 0;
  if (code == CURLE_OK && t.status >= 200 && t.status < 300) {
    post_result r = j.result;
    r.ok = true;
    r.rejected = rejected_of(t.body);
    return finish(std::move(r));
  }
  const bool retry = code == CURLE_OK ? retryable_status(t.status) : retryable_code(code);
  std::string error = code == CURLE_OK                       ? std::to_string(t.status)
                      : code == CURLE_OPERATION_TIMEDOUT     ? "timeout"
                      : code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ? "connection_failed"
                                                                                            : "transport_error";
  const auto now = std::chrono::steady_clock::now();
  if (!retry || j.result.retries >= o.retry.tries || now >= j.deadline) {
    post_result r = j.result;
    r.error = std::move(error);
    return finish(std::move(r));
  }
  // The wait: the collector's Retry-After (capped at retry.max_delay), else the retry schedule's
  // (retry_options::delay_before, the one schedule of every retry in the library).
  std::chrono::nanoseconds wait{0};
  std::optional<std::chrono::nanoseconds> asked;
  if (t.retry_after) asked = detail::parse_retry_after(*t.retry_after, std::chrono::system_clock::now());
  if (asked) wait = std::min(*asked, std::chrono::duration_cast<std::chrono::nanoseconds>(o.retry.max_delay));
  else wait = o.retry.delay_before(j.result.retries + 1, detail::default_random());
  if (now + wait >= j.deadline) {  // no time left for another try
    post_result r = j.result;
    r.error = std::move(error);
    return finish(std::move(r));
  }
  ++j.result.retries;
  timer = std::make_unique<asio::steady_timer>(loop->io(), wait);
  std::weak_ptr<impl> self = weak_from_this();
  timer->async_wait(asio::bind_executor(loop->strand(), [self](const boost::system::error_code& ec) {
    if (ec) return;
    if (auto p = self.lock()) {
      p->timer.reset();
      if (!p->jobs.empty() && !p->closed) p->send();
    }
  }));
}

void poster::impl::finish(post_result r) {
  if (jobs.empty()) return;
  job j = std::move(jobs.front());
  jobs.pop_front();
  timer.reset();
  try {
    if (j.done) j.done(r);
  } catch (...) {
    detail::log_error("otel: an export's completion threw (ignored)");
  }
  if (!closed) start_next();
}

void poster::impl::abort_all(const char* why) {
  if (current) {
    loop->remove(*current);
    current.reset();
  }
  if (timer) {
    timer->cancel();
    timer.reset();
  }
  while (!jobs.empty()) {
    post_result r = jobs.front().result;
    r.error = why;
    job j = std::move(jobs.front());
    jobs.pop_front();
    try {
      if (j.done) j.done(r);
    } catch (...) {
    }
  }
}

poster::poster(runtime& rt, post_options options) : impl_(std::make_shared<impl>()) {
  impl& p = *impl_;
  auto bad = [](const std::string& what) { throw std::invalid_argument("covenant::otel_tracer: " + what); };
  const std::string_view url = options.url;
  if (!detail::wire::istarts_with(url, "http://") && !detail::wire::istarts_with(url, "https://"))
    bad("the endpoint must be an http:// or https:// URL (got \"" + detail::wire::one_line(url, 100) + "\")");
  if (has_crlf(url) || url.find(' ') != std::string_view::npos) bad("the endpoint must not contain spaces or line breaks");
  if (const CURLcode c = detail::curl_global(); c != CURLE_OK)
    throw std::runtime_error(std::string("covenant::otel_tracer: curl_global_init failed: ") + curl_easy_strerror(c));
  detail::append_header(p.headers, "Content-Type: " + options.content_type);
  detail::append_header(p.headers, "Expect:");
  detail::append_header(p.headers, "User-Agent: covenant/" + std::string(version()));
  for (const auto& [name, value] : options.headers) {
    if (name.empty() || has_crlf(name) || name.find_first_of(": \t") != std::string::npos)
      bad("invalid header name \"" + detail::wire::one_line(name, 60) + "\"");
    if (has_crlf(value)) bad("the value of header \"" + name + "\" must not contain line breaks");
    detail::append_header(p.headers, name + (value.empty() ? ";" : ": " + value));
  }
  p.o = std::move(options);
  p.loop = std::make_shared<detail::multi_loop>(rt, detail::multi_options{});
}

poster::~poster() {
  std::shared_ptr<impl> p = impl_;
  auto stop = [p] {
    p->closed = true;
    p->abort_all("aborted");
    p->loop->shutdown();
  };
  if (p->loop->strand().running_in_this_thread()) {
    stop();
    return;
  }
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  asio::post(p->loop->strand(), [stop, done] {
    stop();
    done->set_value();
  });
  // The I/O loop may be gone (a runtime destroyed first): then nothing would run the stop.
  if (finished.wait_for(std::chrono::seconds(30)) != std::future_status::ready)
    detail::log_error("otel: the I/O loop did not let go of an exporter within 30 s");
}

void poster::post(std::string body, std::function<void(const post_result&)> done) {
  std::shared_ptr<impl> p = impl_;
  impl::job j{std::move(body), std::move(done), std::chrono::steady_clock::now() + p->o.timeout, {}};
  asio::post(p->loop->strand(), [p, j = std::move(j)]() mutable {
    if (p->closed) {
      post_result r;
      r.error = "aborted";
      if (j.done) j.done(r);
      return;
    }
    p->jobs.push_back(std::move(j));
    p->start_next();
  });
}

void poster::abort() {
  std::shared_ptr<impl> p = impl_;
  asio::post(p->loop->strand(), [p] { p->abort_all("aborted"); });
}

}  // namespace covenant::otlp
