// The HTTP engine: its options checked, the connection settings made once, from_env, probe and
// the start of a call; each call (its exchanges, transport retries and streamed reply) is
// src/engine/http_call.cpp.
#include "covenant/engine/http_engine.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <future>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <unordered_map>

#include "sse.hpp"
#include "covenant/types/json_schema.hpp"
#include "covenant/engine/rate_limiter.hpp"
#include "covenant/engine/retry.hpp"
#include "covenant/engine/runtime.hpp"
#include "covenant/types/version.hpp"
#include "curl_handles.hpp"
#include "http_probe.hpp"
#include "http_shared.hpp"
#include "http_transport.hpp"
#include "log.hpp"
#include "retry_check.hpp"
#include "wire_dialect.hpp"
#include "wire_text.hpp"

namespace covenant {

namespace json = boost::json;

namespace {

void global_init() {
  if (const CURLcode result = detail::curl_global(); result != CURLE_OK)
    throw engine_error(std::string("http_engine: curl_global_init failed: ") + curl_easy_strerror(result));
}

using detail::wire::iequals;
using detail::wire::istarts_with;
using detail::wire::one_line;
using detail::wire::parse_number;
using detail::wire::redact;
using detail::wire::trim;

bool has_crlf(std::string_view s) noexcept { return s.find_first_of("\r\n") != std::string_view::npos; }

/// The content encodings this libcurl decodes, as CURLOPT_ACCEPT_ENCODING "" would offer them
/// (libcurl's own order: deflate and gzip with zlib, then brotli, then zstd).
std::string accepted_encodings() {
  const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  if (info == nullptr) return {};
  std::string out;
  auto add = [&](const char* name) {
    if (!out.empty()) out += ", ";
    out += name;
  };
  if ((info->features & CURL_VERSION_LIBZ) != 0) {
    add("deflate");
    add("gzip");
  }
  if ((info->features & CURL_VERSION_BROTLI) != 0) add("br");
  if ((info->features & CURL_VERSION_ZSTD) != 0) add("zstd");
  return out;
}

/// The URL without user-info, query and fragment (they may carry credentials).
std::string safe_url(std::string_view url) {
  std::string_view rest = url;
  std::string out;
  if (const auto scheme = rest.find("://"); scheme != std::string_view::npos) {
    out.append(rest.substr(0, scheme + 3));
    rest.remove_prefix(scheme + 3);
  }
  const auto authority_end = std::min(rest.find_first_of("/?#"), rest.size());
  if (const auto at = rest.substr(0, authority_end).rfind('@'); at != std::string_view::npos) rest.remove_prefix(at + 1);
  out.append(rest.substr(0, std::min(rest.find_first_of("?#"), rest.size())));
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// detail

namespace detail {

std::optional<std::chrono::nanoseconds> parse_retry_after(std::string_view value,
                                                          std::chrono::system_clock::time_point now) {
  value = trim(value);
  if (value.empty()) return std::nullopt;
  if (const auto seconds = parse_number(value)) {
    if (*seconds < 0) return std::nullopt;
    return http::seconds_to_ns(*seconds);
  }
  const std::string text(value);
  const std::time_t t = curl_getdate(text.c_str(), nullptr);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  const auto when = std::chrono::system_clock::from_time_t(t);
  if (when <= now) return std::chrono::nanoseconds(0);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(when - now);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// http_engine

using detail::http::http_shared;
namespace asio = boost::asio;

struct http_engine::impl {
  std::shared_ptr<http_shared> s;
};

http_engine::http_engine(http_engine_options options) : impl_(std::make_unique<impl>()) {
  impl_->s = std::make_shared<http_shared>();
  http_shared& s = *impl_->s;
  auto bad = [](const std::string& what) { throw std::invalid_argument("covenant::http_engine: " + what); };
  std::string base(trim(options.base_url));
  if (base.empty()) bad("base_url is empty (the API root, e.g. https://api.openai.com/v1)");
  if (!options.ca_file.empty() && !std::ifstream(options.ca_file).good())
    bad("ca_file \"" + one_line(options.ca_file, 200) + "\" cannot be read");
  if (!istarts_with(base, "http://") && !istarts_with(base, "https://"))
    bad("base_url must start with http:// or https:// (got \"" + one_line(safe_url(base), 100) + "\")");
  if (has_crlf(base) || base.find(' ') != std::string::npos) bad("base_url must not contain spaces or line breaks");
  if (has_crlf(options.api_key)) bad("api_key must not contain line breaks");
  if (has_crlf(options.user_agent)) bad("user_agent must not contain line breaks");
  if (std::string problem = detail::retry_problem(options.retry, "retry."); !problem.empty()) bad(problem);
  if (options.connect_timeout.count() <= 0) bad("connect_timeout must be positive");
  if (options.request_timeout.count() <= 0) bad("request_timeout must be positive");
  if (options.max_response_bytes == 0) bad("max_response_bytes must be positive");
  if (options.max_tokens_field.empty()) bad("max_tokens_field is empty");
  if (options.stream_idle_timeout.count() < 0) bad("stream_idle_timeout must be >= 0");
  if (options.max_connections < 0 || options.max_host_connections < 0) bad("connection limits must be >= 0");
  s.dialect = options.provider == provider::anthropic ? detail::anthropic_dialect() : detail::openai_dialect();
  s.modes = s.dialect->modes();
  bool own_authorization = false;
  for (const auto& [name, value] : options.headers) {
    if (name.empty() || has_crlf(name) || name.find_first_of(": \t") != std::string::npos)
      bad("invalid header name \"" + one_line(name, 60) + "\"");
    if (has_crlf(value)) bad("the value of header \"" + name + "\" must not contain line breaks");
    if (iequals(name, s.dialect->auth_header_name())) own_authorization = true;
  }
  global_init();

  while (!base.empty() && base.back() == '/') base.pop_back();
  s.endpoint = s.dialect->endpoint(base);
  s.shown_url = safe_url(s.endpoint);
  if (CURLU* u = curl_url(); u != nullptr) {
    s.url.reset(u);
    if (curl_url_set(u, CURLUPART_URL, s.endpoint.c_str(), 0) != CURLUE_OK) s.url.reset();  // curl reports it
  }
  s.user_agent = options.user_agent.empty() ? "covenant/" + std::string(version()) : options.user_agent;
  s.info.provider = std::string(s.dialect->name());
  s.info.model = options.model;
  if (s.url) {
    char* host = nullptr;
    if (curl_url_get(s.url.get(), CURLUPART_HOST, &host, 0) == CURLUE_OK && host != nullptr) {
      std::string_view h = host;
      if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);  // an IPv6 literal
      s.info.server_address = std::string(h);
    }
    curl_free(host);
    char* port = nullptr;
    if (curl_url_get(s.url.get(), CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK && port != nullptr)
      s.info.server_port = std::atoi(port);
    curl_free(port);
  }

  // The environment's proxy for this endpoint, as libcurl itself would read it: https_proxy (or
  // HTTPS_PROXY) for https, http_proxy for http (its upper-case form is not trusted), else
  // all_proxy / ALL_PROXY; no_proxy / NO_PROXY.
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
    return v == nullptr ? std::string() : std::string(v);
  };
  if (istarts_with(s.endpoint, "https://")) {
    s.proxy = env("https_proxy");
    if (s.proxy.empty()) s.proxy = env("HTTPS_PROXY");
  } else {
    s.proxy = env("http_proxy");
  }
  if (s.proxy.empty()) s.proxy = env("all_proxy");
  if (s.proxy.empty()) s.proxy = env("ALL_PROXY");
  s.no_proxy = env("no_proxy");
  if (s.no_proxy.empty()) s.no_proxy = env("NO_PROXY");
  // The request headers, in two lists: for whole replies and for streams (which accept server-sent
  // events, and no compression: a stream is read as it comes). libcurl 7.88 writes the header
  // lines it builds itself (the user agent, the accepted encodings) one character at a time,
  // twice; lines of this list are written once. So with no proxy in the way the user agent and the
  // accepted encodings are lines of the list (through a proxy, the user agent is also what the
  // CONNECT request says: libcurl sets it). A header the caller set replaces the engine's own.
  bool own_user_agent = false;
  bool own_encoding = false;
  for (const auto& [name, value] : options.headers) {
    if (iequals(name, "User-Agent")) own_user_agent = true;
    if (iequals(name, "Accept-Encoding")) own_encoding = true;
  }
  s.user_agent_header = s.proxy.empty() && !own_user_agent;
  const std::string encodings = own_encoding ? std::string() : accepted_encodings();
  auto make_list = [&](bool whole_reply) {
    detail::curl_header_list list;
    auto append = [&](const std::string& line) { detail::append_header(list, line); };
    append("Content-Type: application/json");
    append(whole_reply ? "Accept: application/json" : "Accept: text/event-stream");
    append("Expect:");  // no 100-continue round trip for large bodies
    if (s.user_agent_header) append("User-Agent: " + s.user_agent);
    if (whole_reply && !encodings.empty()) append("Accept-Encoding: " + encodings);
    for (const std::string& line : s.dialect->auth_headers(options, own_authorization)) append(line);
    for (const auto& [name, value] : options.headers) append(name + (value.empty() ? ";" : ": " + value));
    return list;
  };
  s.headers = make_list(true);
  s.stream_headers = make_list(false);
  if (options.http_version == http_version::http2_prior_knowledge) {
    const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
    s.h2c_reuse = info != nullptr && info->version_num >= 0x075900;  // 7.89.0
    if (!s.h2c_reuse) {
      static std::once_flag said;
      std::call_once(said, [&] {
        detail::log_warn("http_engine: libcurl {} cannot reuse HTTP/2 prior-knowledge connections (curl issue 10634): "
                         "each request to {} opens its own connection (https:// negotiates HTTP/2 and is not affected)",
                         info != nullptr ? info->version : "?", s.shown_url);
      });
    }
  }
  s.rt = options.runtime != nullptr ? options.runtime : &runtime::shared();
  s.loop = std::make_shared<detail::multi_loop>(
      *s.rt, detail::multi_options{options.max_connections, options.max_host_connections});
  s.options = std::move(options);
  s.options.base_url = std::move(base);
}

http_engine::~http_engine() {
  refuse_calls();
  end_transfers();
  close();
}

void http_engine::end_transfers() noexcept {
  if (impl_ && impl_->s && impl_->s->loop) {
    std::shared_ptr<http_shared> s = impl_->s;
    auto stop_all = [s] {
      detail::http::abort_calls(*s);
      s->loop->shutdown();
    };
    if (s->loop->strand().running_in_this_thread()) {
      stop_all();
    } else {
      std::promise<void> done;
      std::future<void> finished = done.get_future();
      asio::post(s->loop->strand(), [&stop_all, &done] {
        stop_all();
        done.set_value();
      });
      finished.wait();
    }
  }
}

std::string_view to_string(provider p) noexcept { return p == provider::anthropic ? "anthropic" : "openai"; }

http_engine_options http_engine::options_from_env(http_engine_options defaults) {
  auto get = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
  if (auto v = get("COVENANT_PROVIDER")) {
    if (*v == "openai")
      defaults.provider = provider::openai;
    else if (*v == "anthropic")
      defaults.provider = provider::anthropic;
    else
      throw std::invalid_argument("covenant::http_engine::from_env: COVENANT_PROVIDER must be openai or anthropic (got \"" +
                                  one_line(*v, 40) + "\")");
  }
  if (auto v = get("COVENANT_BASE_URL")) defaults.base_url = std::move(*v);
  if (trim(defaults.base_url).empty())
    throw std::invalid_argument(
        "covenant::http_engine::from_env: COVENANT_BASE_URL is not set (the API root, e.g. "
        "https://api.openai.com/v1, http://localhost:8080/v1 or, with COVENANT_PROVIDER=anthropic, https://api.anthropic.com)");
  if (auto v = get("COVENANT_API_KEY")) defaults.api_key = std::move(*v);
  if (auto v = get("COVENANT_MODEL")) defaults.model = std::move(*v);
  if (auto v = get("COVENANT_CA_FILE")) defaults.ca_file = std::move(*v);
  if (auto v = get("COVENANT_TIMEOUT_S")) {
    const auto s = parse_number(*v);
    if (!s || *s <= 0 || *s > 1e6)
      throw std::invalid_argument("covenant::http_engine::from_env: COVENANT_TIMEOUT_S must be a positive number of seconds (got \"" +
                                  one_line(*v, 40) + "\")");
    defaults.request_timeout = std::chrono::milliseconds(std::max<std::int64_t>(1, std::llround(*s * 1000.0)));
  }
  return defaults;
}

http_engine http_engine::from_env(http_engine_options defaults) {
  return http_engine(options_from_env(std::move(defaults)));
}
const std::string& http_engine::endpoint() const noexcept { return impl_->s->endpoint; }
const http_engine_options& http_engine::options() const noexcept { return impl_->s->options; }

std::string http_engine::probe_endpoint() const {
  if (!impl_ || !impl_->s) return {};
  return impl_->s->dialect->probe_url(impl_->s->options.base_url);
}

probe_result http_engine::probe(std::chrono::milliseconds timeout) const {
  probe_result out;
  if (!impl_ || !impl_->s) {
    out.message = "http_engine: used after being moved from";
    return out;
  }
  const std::shared_ptr<http_shared> s = impl_->s;
  detail::probe_request r;
  r.url = s->dialect->probe_url(s->options.base_url);
  r.shown_url = safe_url(r.url);
  out.url = r.shown_url;
  if (timeout.count() <= 0) {
    out.message = "the timeout must be positive (got " + std::to_string(timeout.count()) + " ms)";
    return out;
  }
  if (s->loop->io().get_executor().running_in_this_thread()) {
    out.message = "http_engine::probe() was called on the I/O loop's thread, which it would block";
    return out;
  }
  // The headers of the engine's requests for a whole reply, without those of a body.
  bool own_auth = false;
  for (const auto& [name, value] : s->options.headers) own_auth = own_auth || iequals(name, s->dialect->auth_header_name());
  auto append = [&](const std::string& line) { detail::append_header(r.headers, line); };
  append("Accept: application/json");
  if (s->user_agent_header) append("User-Agent: " + s->user_agent);
  for (const std::string& line : s->dialect->auth_headers(s->options, own_auth)) append(line);
  for (const auto& [name, value] : s->options.headers) append(name + (value.empty() ? ";" : ": " + value));
  r.loop = s->loop;
  r.timeout = std::min<std::chrono::milliseconds>(timeout, std::chrono::hours(24 * 30));  // far from overflow
  r.connect_timeout = s->options.connect_timeout;
  r.secret = s->options.api_key;
  r.configure = [s](CURL* h) { detail::http::set_connection_options(h, *s); };
  return detail::run_probe(std::move(r));
}

json::object http_engine::request_body(const chat_request& request) const {
  const http_shared& s = *impl_->s;
  return s.dialect->body(request, detail::http::resolve_mode(s, request).first, s.options);
}

void http_engine::start(const chat_request& request, std::shared_ptr<reply_receiver> receiver, std::stop_token stop) {
  if (!impl_ || !impl_->s) {
    receiver->on_error(engine_error("http_engine: used after being moved from"));
    return;
  }
  detail::http::start_call(impl_->s, request, std::move(receiver), std::move(stop));
}

engine_capabilities http_engine::capabilities() const noexcept { return {true, true}; }

std::size_t http_engine::calls_in_flight() const noexcept {
  return impl_ && impl_->s ? impl_->s->in_table.load(std::memory_order_relaxed) : 0;
}

const engine_info* http_engine::info() const noexcept { return impl_ && impl_->s ? &impl_->s->info : nullptr; }

const media_limits* http_engine::accepted_media() const noexcept {
  return impl_ && impl_->s ? &impl_->s->dialect->accepted_media() : nullptr;
}

}  // namespace covenant
