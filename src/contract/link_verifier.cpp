// covenant::link_verifier: HEAD (then GET when HEAD is refused) over libcurl's multi interface.
#include "covenant/contract/link_verifier.hpp"

#include <curl/curl.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "engine/curl_handles.hpp"
#include "engine/wire_text.hpp"

namespace covenant {

namespace {

using clock_type = std::chrono::steady_clock;

using detail::wire::iequals;

bool loopback_v4(const unsigned char* a) noexcept { return a[0] == 127 || a[0] == 0; }

/// A loopback or unspecified address: 127.0.0.0/8, 0.0.0.0/8, ::1, ::, ::ffff:127.x.x.x, ::ffff:0.x.x.x.
bool loopback_v6(const unsigned char* b) noexcept {
  const bool zeros10 = std::all_of(b, b + 10, [](unsigned char x) { return x == 0; });
  if (zeros10 && b[10] == 0xff && b[11] == 0xff) return loopback_v4(b + 12);  // ::ffff:a.b.c.d
  const bool zeros15 = std::all_of(b, b + 15, [](unsigned char x) { return x == 0; });
  return zeros15 && (b[15] == 1 || b[15] == 0);
}

/// The address about to be connected to is a loopback one; also fills `text` with its printable
/// form. libcurl stores the whole address (sockaddr_in or sockaddr_in6, `addrlen` bytes) from
/// `addr` on.
bool loopback(const curl_sockaddr* sa, char (&text)[INET6_ADDRSTRLEN]) noexcept {
  text[0] = '\0';
  const void* raw = &sa->addr;
  if (sa->family == AF_INET && sa->addrlen >= sizeof(sockaddr_in)) {
    const auto* in = static_cast<const sockaddr_in*>(raw);
    unsigned char b[4];
    std::memcpy(b, &in->sin_addr, sizeof b);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    return loopback_v4(b);
  }
  if (sa->family == AF_INET6 && sa->addrlen >= sizeof(sockaddr_in6)) {
    const auto* in6 = static_cast<const sockaddr_in6*>(raw);
    unsigned char b[16];
    std::memcpy(b, &in6->sin6_addr, sizeof b);
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    return loopback_v6(b);
  }
  return false;
}

/// The host of a URL (as libcurl gives it: IPv6 in brackets) is a loopback address literal.
bool loopback_literal(std::string host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned char b[16];
  if (inet_pton(AF_INET, host.c_str(), b) == 1) return loopback_v4(b);
  if (inet_pton(AF_INET6, host.c_str(), b) == 1) return loopback_v6(b);
  return false;
}

/// Why `url` is not asked at all, or nothing when it is an absolute http(s) URL with a host (not a
/// loopback address literal unless `allow_loopback`). Host names are checked when connecting.
std::optional<std::string> refusal(std::string_view url, bool allow_loopback) {
  if (url.empty()) return "empty URL";
  const auto sep = url.find("://");
  if (sep == std::string_view::npos) return "not an http(s) URL";
  const std::string_view scheme = url.substr(0, sep);
  if (!iequals(scheme, "http") && !iequals(scheme, "https")) return "not an http(s) URL";
  for (char c : url) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return "not a valid URL: spaces or control characters";
  }
  // libcurl would read "http:///host" as "http://host"; a URL names its host right after "//".
  if (sep + 3 == url.size() || url[sep + 3] == '/' || url[sep + 3] == '\\') return "not a valid URL: no host";
  detail::curl_url_ptr parsed(curl_url());
  if (!parsed) throw std::bad_alloc();
  const std::string text(url);
  if (CURLUcode rc = curl_url_set(parsed.get(), CURLUPART_URL, text.c_str(), 0); rc != CURLUE_OK)
    return std::string("not a valid URL: ") + curl_url_strerror(rc);
  char* host = nullptr;
  const CURLUcode rc = curl_url_get(parsed.get(), CURLUPART_HOST, &host, 0);
  const bool has_host = rc == CURLUE_OK && host != nullptr && host[0] != '\0';
  const std::string host_text = has_host ? host : "";
  curl_free(host);
  if (!has_host) return "not a valid URL: no host";
  if (!allow_loopback && loopback_literal(host_text)) return "refused to connect to loopback address " + host_text;
  return std::nullopt;
}

/// One URL being checked: its easy handle and what the callbacks saw.
struct transfer {
  std::size_t index = 0;
  CURL* easy = nullptr;
  bool get = false;                  ///< the GET after a refused HEAD
  bool stopped_after_headers = false;  ///< the GET was ended on purpose once the final headers were in
  long last_status = 0;              ///< from the last status line seen
  bool allow_loopback = true;
  std::string refused_address;  ///< a loopback address not connected to
  clock_type::time_point started;
  char error[CURL_ERROR_SIZE] = {};

  transfer() = default;
  transfer(const transfer&) = delete;
  transfer& operator=(const transfer&) = delete;
  ~transfer() {
    if (easy != nullptr) curl_easy_cleanup(easy);  // also leaves a multi handle it is still in
  }

  static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    auto& t = *static_cast<transfer*>(user);
    const std::size_t n = size * count;
    const std::string_view line(data, n);
    if (line.size() > 5 && line.substr(0, 5) == "HTTP/") {
      const auto space = line.find(' ');
      long code = 0;
      for (std::size_t i = space == std::string_view::npos ? line.size() : space + 1;
           i < line.size() && line[i] >= '0' && line[i] <= '9' && code < 1000; ++i)
        code = code * 10 + (line[i] - '0');
      t.last_status = code;
    } else if (t.get && (line == "\r\n" || line == "\n")) {
      // End of a header block. 1xx answers are interim and 3xx ones may be followed; any other
      // status is final: stop before the body.
      const long s = t.last_status;
      if (s >= 200 && (s < 300 || s >= 400)) {
        t.stopped_after_headers = true;
        return 0;
      }
    }
    return n;
  }

  static std::size_t on_body(char*, std::size_t size, std::size_t count, void* user) {
    auto& t = *static_cast<transfer*>(user);
    if (!t.get) return size * count;
    // The body of a final answer whose headers did not stop the transfer (a 3xx not followed).
    t.stopped_after_headers = true;
    return 0;
  }

  static curl_socket_t on_open_socket(void* user, curlsocktype purpose, curl_sockaddr* address) {
    auto& t = *static_cast<transfer*>(user);
    if (purpose != CURLSOCKTYPE_IPCXN) return CURL_SOCKET_BAD;
    char text[INET6_ADDRSTRLEN];
    if (!t.allow_loopback && loopback(address, text)) {
      if (t.refused_address.empty()) {
        try {
          t.refused_address = text[0] != '\0' ? text : "?";
        } catch (...) {
        }
      }
      return CURL_SOCKET_BAD;
    }
    return ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
  }
};

long clamp_ms(std::chrono::milliseconds ms) noexcept {
  return static_cast<long>(std::clamp<std::chrono::milliseconds::rep>(ms.count(), 1, 24L * 3600 * 1000));
}

/// Sets every option of a first (HEAD) request; false when libcurl refused one.
bool configure(transfer& t, const std::string& url, const link_verifier_options& o) {
  CURL* e = t.easy;
  bool ok = true;
  auto set = [&ok](CURLcode rc) { ok = ok && rc == CURLE_OK; };
  set(curl_easy_setopt(e, CURLOPT_URL, url.c_str()));
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85
  set(curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https"));
  set(curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"));
#else
  set(curl_easy_setopt(e, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS)));
  set(curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS)));
#endif
  set(curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L));
  set(curl_easy_setopt(e, CURLOPT_NOBODY, 1L));
  set(curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L));
  set(curl_easy_setopt(e, CURLOPT_MAXREDIRS, std::max(0L, o.max_redirects)));
  set(curl_easy_setopt(e, CURLOPT_USERAGENT, o.user_agent.c_str()));
  set(curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, clamp_ms(o.timeout)));
  set(curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L));  // a proxy's CONNECT answer is not the site's
  set(curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.error));
  set(curl_easy_setopt(e, CURLOPT_PRIVATE, static_cast<void*>(&t)));
  set(curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &transfer::on_header));
  set(curl_easy_setopt(e, CURLOPT_HEADERDATA, static_cast<void*>(&t)));
  set(curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &transfer::on_body));
  set(curl_easy_setopt(e, CURLOPT_WRITEDATA, static_cast<void*>(&t)));
  if (!o.allow_loopback) {
    set(curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &transfer::on_open_socket));
    set(curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, static_cast<void*>(&t)));
  }
  return ok;
}

/// Turns the finished HEAD of `t` into a GET of the same URL with the time left.
bool configure_get(transfer& t, const std::string& url, const link_verifier_options& o) {
  t.get = true;
  t.stopped_after_headers = false;
  t.last_status = 0;
  t.error[0] = '\0';
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(o.timeout - (clock_type::now() - t.started));
  return curl_easy_setopt(t.easy, CURLOPT_URL, url.c_str()) == CURLE_OK &&
         curl_easy_setopt(t.easy, CURLOPT_HTTPGET, 1L) == CURLE_OK &&
         curl_easy_setopt(t.easy, CURLOPT_TIMEOUT_MS, clamp_ms(left)) == CURLE_OK;
}

long status_of(const transfer& t) {
  long status = 0;
  if (curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK || status == 0) status = t.last_status;
  return status;
}

/// The answer came (the transfer ended normally, or was stopped on purpose after the headers).
bool answered(const transfer& t, CURLcode rc) noexcept {
  return rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t.stopped_after_headers);
}

bool head_refused(long status) noexcept { return status == 400 || status == 403 || status == 405 || status == 501; }

link_check verdict(const transfer& t, CURLcode rc, const link_verifier_options& o) {
  link_check r;
  r.method = t.get ? "GET" : "HEAD";
  r.status = status_of(t);
  if (answered(t, rc)) {
    r.ok = r.status >= 200 && r.status < 300;
    if (!r.ok) r.error = r.status == 0 ? "no HTTP status" : "HTTP " + std::to_string(r.status);
    return r;
  }
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      r.error = "timed out after " + std::to_string(clamp_ms(o.timeout)) + " ms";
      break;
    case CURLE_TOO_MANY_REDIRECTS: r.error = "too many redirects"; break;
    case CURLE_UNSUPPORTED_PROTOCOL: r.error = "redirect to a non-http(s) URL refused"; break;
    default:
      if (!t.refused_address.empty()) r.error = "refused to connect to loopback address " + t.refused_address;
      else r.error = t.error[0] != '\0' ? std::string(t.error) : std::string(curl_easy_strerror(rc));
  }
  return r;
}

}  // namespace

link_verifier::link_verifier(link_verifier_options opts) : opts_(std::move(opts)) {}

link_verifier::~link_verifier() = default;

link_check link_verifier::check(std::string_view url) const {
  std::vector<std::string> one;
  one.emplace_back(url);
  return std::move(check_all(one).front());
}

std::vector<link_check> link_verifier::check_all(const std::vector<std::string>& urls) const {
  std::vector<link_check> out(urls.size());
  std::vector<std::size_t> queue;  // indices of the URLs to ask, in order
  for (std::size_t i = 0; i < urls.size(); ++i) {
    out[i].url = urls[i];
    if (auto why = refusal(urls[i], opts_.allow_loopback)) out[i].error = std::move(*why);
    else queue.push_back(i);
  }
  if (queue.empty()) return out;

  auto fail_rest = [&](std::size_t from, const std::string& why) {
    for (std::size_t k = from; k < queue.size(); ++k) out[queue[k]].error = why;
  };
  if (detail::curl_global() != CURLE_OK) {
    fail_rest(0, "libcurl could not be initialised");
    return out;
  }
  detail::curl_multi_ptr multi(curl_multi_init());
  if (!multi) {
    fail_rest(0, "libcurl could not start a transfer");
    return out;
  }

  const std::size_t limit = std::max<std::size_t>(1, opts_.max_in_flight);
  std::vector<std::unique_ptr<transfer>> active;  // destroyed before `multi`
  active.reserve(std::min(limit, queue.size()));
  std::size_t next = 0;

  auto finish = [&](transfer& t, link_check r) {
    r.url = std::move(out[t.index].url);
    out[t.index] = std::move(r);
    auto it = std::find_if(active.begin(), active.end(), [&](const auto& p) { return p.get() == &t; });
    active.erase(it);  // cleans the easy handle up
  };

  for (;;) {
    while (active.size() < limit && next < queue.size()) {
      const std::size_t i = queue[next++];
      auto t = std::make_unique<transfer>();
      t->index = i;
      t->allow_loopback = opts_.allow_loopback;
      t->started = clock_type::now();
      t->easy = curl_easy_init();
      if (t->easy == nullptr || !configure(*t, urls[i], opts_)) {
        out[i].error = "libcurl could not start a transfer";
        continue;
      }
      if (CURLMcode mc = curl_multi_add_handle(multi.get(), t->easy); mc != CURLM_OK) {
        out[i].error = curl_multi_strerror(mc);
        continue;
      }
      active.push_back(std::move(t));
    }
    if (active.empty()) break;

    int running = 0;
    CURLMcode mc = curl_multi_perform(multi.get(), &running);
    bool finished_some = false;
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi.get(), &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL* easy = msg->easy_handle;
      const CURLcode rc = msg->data.result;
      char* user = nullptr;
      curl_easy_getinfo(easy, CURLINFO_PRIVATE, &user);
      auto& t = *reinterpret_cast<transfer*>(user);
      curl_multi_remove_handle(multi.get(), easy);
      if (!t.get && answered(t, rc) && head_refused(status_of(t))) {
        if (configure_get(t, urls[t.index], opts_) && curl_multi_add_handle(multi.get(), easy) == CURLM_OK) continue;
        link_check r;
        r.method = "GET";
        r.error = "libcurl could not start a transfer";
        finish(t, std::move(r));
      } else {
        finish(t, verdict(t, rc, opts_));
      }
      finished_some = true;
    }
    if (mc == CURLM_OK && !active.empty() && !finished_some) mc = curl_multi_poll(multi.get(), nullptr, 0, 1000, nullptr);
    if (mc != CURLM_OK) {
      const std::string why = std::string("libcurl: ") + curl_multi_strerror(mc);
      for (const auto& t : active) out[t->index].error = why;
      active.clear();
      fail_rest(next, why);
      break;
    }
  }
  return out;
}

}  // namespace covenant
