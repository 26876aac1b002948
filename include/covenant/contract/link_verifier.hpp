// Checks whether URLs (typically links a model put in its answer) really exist, by asking their
// servers over HTTP(S). Standard headers only; libcurl stays inside the library.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/types/config.hpp"

namespace covenant {

/// How a link_verifier checks URLs.
struct link_verifier_options {
  /// Time allowed for the whole check of one URL: name resolution, connection, TLS, every
  /// redirect, and the GET that follows a refused HEAD. Values below 1 ms count as 1 ms.
  std::chrono::milliseconds timeout{5000};
  /// Redirects followed per request; one more makes the check fail with "too many redirects"
  /// (so a redirect loop fails). Negative values count as 0 (no redirect followed).
  long max_redirects = 5;
  /// check_all(): how many URLs are checked at once (0 counts as 1).
  std::size_t max_in_flight = 8;
  /// The User-Agent header sent.
  std::string user_agent = "covenant-link-verifier";
  /// When false, no connection is opened to a loopback or unspecified address (127.0.0.0/8,
  /// 0.0.0.0/8, ::1, ::, and their IPv4-mapped forms): a URL naming such an address is refused
  /// without any network traffic, and one whose host name resolves to it ("localhost") or that
  /// redirects there fails before connecting. Either way the error is "refused to connect to
  /// loopback address <address>". The address checked is the one connected to, so with a proxy
  /// (libcurl reads http_proxy/https_proxy/no_proxy from the environment) it is the proxy's.
  bool allow_loopback = true;
};

/// The verdict on one URL. Errors are values: nothing here throws for a bad URL or a failed check.
struct link_check {
  std::string url;     ///< the URL as given
  bool ok = false;     ///< the final answer (after redirects) had a 2xx status
  long status = 0;     ///< status of the last answer received (a 3xx after too many redirects); 0 when none
  std::string method;  ///< "HEAD" or "GET": the request whose answer decided; empty when nothing was sent
  /// Empty when ok; otherwise why not, e.g. "HTTP 404", "too many redirects", "timed out after
  /// 300 ms", "not an http(s) URL", "empty URL", "not a valid URL: no host" (or another reason),
  /// "redirect to a non-http(s) URL refused", "refused to connect to loopback address 127.0.0.1",
  /// or libcurl's message ("Could not resolve host: ...", TLS errors, ...).
  std::string error;
};

/// Checks that URLs exist.
///
/// Only absolute http:// and https:// URLs are checked (scheme in any case); anything else (empty
/// text, no scheme, another scheme, spaces or control characters, a URL libcurl cannot parse, no
/// host) fails at once without any network traffic. Each URL is asked with HEAD first; when the
/// final answer to the HEAD is 400, 403, 405 or 501 (servers that refuse or mishandle HEAD), the
/// same URL is asked again with GET within what is left of `timeout`. The GET never downloads the
/// body: the transfer is stopped as soon as the headers of the final answer are in (the
/// connection is then closed). Redirects are followed up to `max_redirects`, to http(s) URLs only.
/// A URL is ok when the final answer has a 2xx status; there is no retry, so a 429 or a 5xx is
/// reported as such ("HTTP 503") and the caller decides whether it means "missing".
///
/// TLS certificates are verified with the system's store. Proxies come from the environment, as
/// libcurl reads them.
///
/// A link_verifier holds only its options: one object may be used from several threads at once.
/// check_all() runs one libcurl multi handle on the calling thread (no thread per URL).
class COVENANT_API link_verifier {
 public:
  explicit link_verifier(link_verifier_options opts = {});
  ~link_verifier();
  link_verifier(const link_verifier&) = default;
  link_verifier(link_verifier&&) noexcept = default;
  link_verifier& operator=(const link_verifier&) = default;
  link_verifier& operator=(link_verifier&&) noexcept = default;

  /// Checks one URL; blocks until the verdict (at most about `timeout`).
  [[nodiscard]] link_check check(std::string_view url) const;

  /// Checks every URL, at most `max_in_flight` at once, and returns the verdicts in the order of
  /// `urls` (one per entry, duplicates checked again). Blocks until all are decided.
  [[nodiscard]] std::vector<link_check> check_all(const std::vector<std::string>& urls) const;

  /// check(url).ok, so that a verifier can be used as a predicate (std::erase_if, ...).
  bool operator()(std::string_view url) const { return check(url).ok; }

  [[nodiscard]] const link_verifier_options& options() const noexcept { return opts_; }

 private:
  link_verifier_options opts_;
};

}  // namespace covenant
