// The OpenAI-compatible HTTP engine: request bodies, libcurl transfers, transport retries.
#include "covenant/http_engine.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <curl/curl.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <system_error>

#include "covenant/detail/call.hpp"
#include "covenant/json_schema.hpp"
#include "covenant/retry.hpp"
#include "covenant/version.hpp"
#include "log.hpp"

namespace covenant {

namespace json = boost::json;

namespace {

constexpr std::string_view endpoint_suffix = "/chat/completions";
constexpr std::size_t max_pooled_handles = 32;

void global_init() {
  static std::once_flag once;
  static CURLcode result = CURLE_OK;
  std::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (result != CURLE_OK)
    throw engine_error(std::string("http_engine: curl_global_init failed: ") + curl_easy_strerror(result));
}

char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

bool istarts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && static_cast<unsigned char>(s.front()) <= ' ') s.remove_prefix(1);
  while (!s.empty() && static_cast<unsigned char>(s.back()) <= ' ') s.remove_suffix(1);
  return s;
}

bool has_crlf(std::string_view s) noexcept { return s.find_first_of("\r\n") != std::string_view::npos; }

/// One line: control characters and whitespace runs become one space; trimmed; at most
/// `max_chars` bytes (cut on a UTF-8 boundary) followed by "...".
std::string one_line(std::string_view text, std::size_t max_chars) {
  std::string out;
  out.reserve(std::min(text.size(), max_chars + 3));
  bool space = false;
  for (char c : trim(text)) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '\x7f') {
      space = true;
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  if (out.size() > max_chars) {
    std::size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0u) == 0x80u) --cut;
    out.resize(cut);
    out += "...";
  }
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

/// Every occurrence of the secret replaced by "[redacted]".
std::string redact(std::string text, std::string_view secret) {
  if (secret.empty()) return text;
  for (std::size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at)) {
    text.replace(at, secret.size(), "[redacted]");
    at += 10;
  }
  return text;
}

std::string sanitize_schema_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (out.size() == 64) break;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  if (out.empty()) out = "response";
  return out;
}

bool retryable_curl_code(CURLcode code) noexcept {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

std::optional<double> parse_number(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::chrono::nanoseconds seconds_to_ns(double seconds) {
  seconds = std::clamp(seconds, 0.0, 1e9);  // ~31 years: far past any cap, far from overflow
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(seconds * 1e9)));
}

std::uint64_t token_count(const json::object& o, std::string_view key, std::string_view alt) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) v = o.if_contains(alt);
  if (v == nullptr) return 0;
  if (v->is_uint64()) return v->as_uint64();
  if (v->is_int64()) return v->as_int64() > 0 ? static_cast<std::uint64_t>(v->as_int64()) : 0;
  if (v->is_double()) return v->as_double() > 0 ? static_cast<std::uint64_t>(v->as_double()) : 0;
  return 0;
}

std::string string_or_empty(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return (v != nullptr && v->is_string()) ? std::string(v->as_string()) : std::string();
}

[[noreturn]] void bad_body(const std::string& what) { throw engine_error(what, 200, false); }

struct curl_handle_deleter {
  void operator()(CURL* h) const noexcept { curl_easy_cleanup(h); }
};
using curl_handle = std::unique_ptr<CURL, curl_handle_deleter>;

struct slist_deleter {
  void operator()(curl_slist* l) const noexcept { curl_slist_free_all(l); }
};
using header_list = std::unique_ptr<curl_slist, slist_deleter>;

/// What one HTTP attempt produced.
struct transfer {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  bool too_large = false;
  std::size_t max_bytes = 0;
  std::optional<std::string> retry_after;
  std::optional<std::string> retry_after_ms;
  char error[CURL_ERROR_SIZE] = {};
  std::chrono::nanoseconds elapsed{0};
};

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  const std::size_t n = size * count;
  if (t->body.size() + n > t->max_bytes) {
    t->too_large = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  try {
    t->body.append(data, n);
  } catch (...) {  // no exception may cross libcurl's C frames
    t->too_large = true;
    return 0;
  }
  return n;
}

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<transfer*>(user);
  const std::size_t n = size * count;
  const std::string_view line(data, n);
  if (istarts_with(line, "HTTP/")) {  // a new response (after 100 Continue, ...): forget earlier headers
    t->retry_after.reset();
    t->retry_after_ms.reset();
    return n;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  const std::string_view name = trim(line.substr(0, colon));
  const std::string_view value = trim(line.substr(colon + 1));
  if (iequals(name, "retry-after")) t->retry_after = std::string(value);
  else if (iequals(name, "retry-after-ms")) t->retry_after_ms = std::string(value);
  return n;
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
    return seconds_to_ns(*seconds);
  }
  const std::string text(value);
  const std::time_t t = curl_getdate(text.c_str(), nullptr);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  const auto when = std::chrono::system_clock::from_time_t(t);
  if (when <= now) return std::chrono::nanoseconds(0);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(when - now);
}

chat_response parse_chat_completion(std::string_view body) {
  if (trim(body).empty()) bad_body("the response body is empty");
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec) bad_body("the response body is not JSON (" + ec.message() + ")");
  if (!v.is_object()) bad_body("the response body is not a JSON object");
  const json::object& root = v.as_object();
  const json::value* choices = root.if_contains("choices");
  if (choices == nullptr) {
    if (root.contains("error")) bad_body("the server reported an error: " + server_error_message(body));
    bad_body("the response has no \"choices\"");
  }
  if (!choices->is_array() || choices->as_array().empty()) bad_body("the response's \"choices\" is empty or not an array");
  const json::value& first = choices->as_array().front();
  if (!first.is_object()) bad_body("choices[0] is not an object");
  const json::value* msg = first.as_object().if_contains("message");
  if (msg == nullptr || !msg->is_object()) bad_body("choices[0].message is missing or not an object");
  const json::object& m = msg->as_object();

  chat_response out;
  const json::value* content = m.if_contains("content");
  if (content != nullptr && content->is_string()) {
    out.text = std::string(content->as_string());
  } else if (content != nullptr && content->is_array()) {  // content parts: [{"type": "text", "text": ...}]
    for (const json::value& part : content->as_array()) {
      if (const auto* p = part.if_object()) {
        if (const auto* t = p->if_contains("text"); t != nullptr && t->is_string()) out.text += t->as_string();
      }
    }
  } else {
    if (const auto* refusal = m.if_contains("refusal"); refusal != nullptr && refusal->is_string())
      bad_body("the model refused: " + one_line(refusal->as_string(), 300));
    bad_body("choices[0].message.content is missing or not a string");
  }
  out.finish_reason = string_or_empty(first.as_object(), "finish_reason");
  out.model = string_or_empty(root, "model");
  if (const auto* u = root.if_contains("usage"); u != nullptr && u->is_object()) {
    out.usage.input_tokens = token_count(u->as_object(), "prompt_tokens", "input_tokens");
    out.usage.output_tokens = token_count(u->as_object(), "completion_tokens", "output_tokens");
  }
  return out;
}

std::string server_error_message(std::string_view body, std::size_t max_chars) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (!ec) {
    if (const auto* o = v.if_object()) {
      const json::value* e = o->if_contains("error");
      if (e == nullptr) e = o->if_contains("detail");   // FastAPI-style servers
      if (e == nullptr) e = o->if_contains("message");
      if (e != nullptr) {
        if (e->is_string()) return one_line(e->as_string(), max_chars);
        if (const auto* eo = e->if_object()) {
          if (const auto* m = eo->if_contains("message"); m != nullptr && m->is_string())
            return one_line(m->as_string(), max_chars);
        }
        return one_line(json::serialize(*e), max_chars);
      }
    }
  }
  return one_line(body, max_chars);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// http_engine

struct http_engine::impl {
  http_engine_options options;
  std::string endpoint;   // the real URL
  std::string shown_url;  // the URL as logged and put into messages
  std::string user_agent;
  header_list headers;
  std::mutex pool_mutex;
  std::vector<curl_handle> pool;

  curl_handle acquire() {
    {
      std::lock_guard lock(pool_mutex);
      if (!pool.empty()) {
        curl_handle h = std::move(pool.back());
        pool.pop_back();
        return h;
      }
    }
    curl_handle h(curl_easy_init());
    if (!h) throw engine_error("http_engine: curl_easy_init failed");
    return h;
  }

  void release(curl_handle h) {
    curl_easy_reset(h.get());  // keeps the connection cache: the next call can reuse the connection
    std::lock_guard lock(pool_mutex);
    if (pool.size() < max_pooled_handles) pool.push_back(std::move(h));
  }

  void perform(CURL* h, const std::string& body, transfer& t) const {
    t.max_bytes = options.max_response_bytes;
    curl_easy_setopt(h, CURLOPT_URL, endpoint.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(h, CURLOPT_USERAGENT, user_agent.c_str());
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout.count()));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(options.request_timeout.count()));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, t.error);
    const auto t0 = std::chrono::steady_clock::now();
    t.code = curl_easy_perform(h);
    t.elapsed = std::chrono::steady_clock::now() - t0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &t.status);
  }

  /// Text from the server or curl, safe for logs and messages.
  [[nodiscard]] std::string safe(std::string text) const { return redact(std::move(text), options.api_key); }

  [[nodiscard]] std::string curl_reason(const transfer& t) const {
    std::string detail = t.error[0] != '\0' ? std::string(t.error) : std::string(curl_easy_strerror(t.code));
    std::string kind = t.code == CURLE_OPERATION_TIMEDOUT ? "timed out"
                       : (t.code == CURLE_COULDNT_CONNECT || t.code == CURLE_COULDNT_RESOLVE_HOST ||
                          t.code == CURLE_COULDNT_RESOLVE_PROXY)
                           ? "connection failed"
                           : "transport error";
    return kind + ": " + safe(one_line(detail, 300));
  }

  [[nodiscard]] std::chrono::nanoseconds wait_before(int retry, const transfer& t) const {
    const auto cap = std::chrono::duration_cast<std::chrono::nanoseconds>(options.max_backoff);
    if (options.honour_retry_after) {
      std::optional<std::chrono::nanoseconds> asked;
      if (t.retry_after_ms) {
        if (const auto ms = parse_number(*t.retry_after_ms); ms && *ms >= 0) asked = seconds_to_ns(*ms / 1000.0);
      }
      if (!asked && t.retry_after) asked = detail::parse_retry_after(*t.retry_after, std::chrono::system_clock::now());
      if (asked) return std::min(*asked, cap);
    }
    retry_policy p;
    p.tries = options.max_retries;
    p.delay = options.initial_backoff;
    p.backoff = 2.0;
    p.max_delay = options.max_backoff;
    p.jitter = options.jitter;
    const double u = options.random ? options.random() : detail::default_random();
    return p.delay_before(retry, std::clamp(u, 0.0, 1.0));
  }
};

http_engine::http_engine(http_engine_options options) : impl_(std::make_unique<impl>()) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("covenant::http_engine: " + what); };
  std::string base(trim(options.base_url));
  if (base.empty()) bad("base_url is empty (the API root, e.g. https://api.openai.com/v1)");
  if (!istarts_with(base, "http://") && !istarts_with(base, "https://"))
    bad("base_url must start with http:// or https:// (got \"" + one_line(safe_url(base), 100) + "\")");
  if (has_crlf(base) || base.find(' ') != std::string::npos) bad("base_url must not contain spaces or line breaks");
  if (has_crlf(options.api_key)) bad("api_key must not contain line breaks");
  if (options.max_retries < 0) bad("max_retries must be >= 0");
  if (options.connect_timeout.count() <= 0) bad("connect_timeout must be positive");
  if (options.request_timeout.count() <= 0) bad("request_timeout must be positive");
  if (options.initial_backoff.count() < 0) bad("initial_backoff must be >= 0");
  if (options.max_backoff.count() < 0) bad("max_backoff must be >= 0");
  if (!(options.jitter >= 0.0 && options.jitter <= 1.0)) bad("jitter must be in [0, 1]");
  if (options.max_response_bytes == 0) bad("max_response_bytes must be positive");
  if (options.max_tokens_field.empty()) bad("max_tokens_field is empty");
  bool own_authorization = false;
  for (const auto& [name, value] : options.headers) {
    if (name.empty() || has_crlf(name) || name.find_first_of(": \t") != std::string::npos)
      bad("invalid header name \"" + one_line(name, 60) + "\"");
    if (has_crlf(value)) bad("the value of header \"" + name + "\" must not contain line breaks");
    if (iequals(name, "authorization")) own_authorization = true;
  }
  global_init();

  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() >= endpoint_suffix.size() && iequals(std::string_view(base).substr(base.size() - endpoint_suffix.size()), endpoint_suffix))
    impl_->endpoint = base;
  else
    impl_->endpoint = base + std::string(endpoint_suffix);
  impl_->shown_url = safe_url(impl_->endpoint);
  impl_->user_agent = options.user_agent.empty() ? "covenant/" + std::string(version()) : options.user_agent;

  curl_slist* list = nullptr;
  auto append = [&](const std::string& line) {
    curl_slist* next = curl_slist_append(list, line.c_str());
    if (next == nullptr) {
      curl_slist_free_all(list);
      throw std::bad_alloc();
    }
    list = next;
  };
  append("Content-Type: application/json");
  append("Accept: application/json");
  append("Expect:");  // no 100-continue round trip for large bodies
  if (!options.api_key.empty() && !own_authorization) append("Authorization: Bearer " + options.api_key);
  for (const auto& [name, value] : options.headers) append(name + (value.empty() ? ";" : ": " + value));
  impl_->headers.reset(list);
  impl_->options = std::move(options);
  impl_->options.base_url = std::move(base);
}

http_engine::~http_engine() = default;
http_engine::http_engine(http_engine&&) noexcept = default;
http_engine& http_engine::operator=(http_engine&&) noexcept = default;

http_engine_options http_engine::options_from_env(http_engine_options defaults) {
  auto get = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
  if (auto v = get("COVENANT_BASE_URL")) defaults.base_url = std::move(*v);
  if (trim(defaults.base_url).empty())
    throw std::invalid_argument(
        "covenant::http_engine::from_env: COVENANT_BASE_URL is not set (the API root, e.g. "
        "https://api.openai.com/v1 or http://localhost:8080/v1)");
  if (auto v = get("COVENANT_API_KEY")) defaults.api_key = std::move(*v);
  if (auto v = get("COVENANT_MODEL")) defaults.model = std::move(*v);
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

const std::string& http_engine::endpoint() const noexcept { return impl_->endpoint; }
const http_engine_options& http_engine::options() const noexcept { return impl_->options; }

json::object http_engine::request_body(const chat_request& request) const {
  const http_engine_options& o = impl_->options;
  json::object body = o.extra_body;
  if (!o.model.empty()) body["model"] = o.model;
  json::array messages;
  messages.reserve(request.messages.size());
  for (const message& m : request.messages) {
    json::object jm;
    jm["role"] = to_string(m.role);
    jm["content"] = m.content;
    messages.emplace_back(std::move(jm));
  }
  body["messages"] = std::move(messages);
  if (request.temperature) body["temperature"] = *request.temperature;
  if (request.max_tokens) body[o.max_tokens_field] = *request.max_tokens;
  if (o.structured_outputs && request.response_schema && request.response_schema->is_object()) {
    json::value rf = detail::response_format(*request.response_schema, request.schema_name);
    json::value& name = rf.as_object()["json_schema"].as_object()["name"];
    name = sanitize_schema_name(name.is_string() ? std::string_view(name.as_string()) : std::string_view());
    body["response_format"] = std::move(rf);
  }
  return body;
}

chat_response http_engine::complete(const chat_request& request) {
  if (!impl_) throw engine_error("http_engine: used after being moved from");
  const impl& self = *impl_;
  const http_engine_options& o = self.options;
  const std::string body = json::serialize(request_body(request));
  const int attempts = 1 + o.max_retries;
  const std::string where = "http_engine: POST " + self.shown_url;

  for (int attempt = 1;; ++attempt) {
    transfer t;
    {
      curl_handle h = impl_->acquire();
      self.perform(h.get(), body, t);
      impl_->release(std::move(h));
    }
    const double ms = std::chrono::duration<double, std::milli>(t.elapsed).count();
    if (t.code == CURLE_OK) {
      detail::log().debug("{} -> HTTP {} in {:.1f} ms (attempt {}/{})", where, t.status, ms, attempt, attempts);
    } else {
      detail::log().debug("{} -> {} in {:.1f} ms (attempt {}/{})", where, self.curl_reason(t), ms, attempt, attempts);
    }

    int status = 0;
    std::string reason;
    if (t.code != CURLE_OK) {
      if (t.too_large)
        throw engine_error(where + ": the response body exceeds max_response_bytes (" +
                               std::to_string(o.max_response_bytes) + ")",
                           static_cast<int>(t.status), false);
      reason = self.curl_reason(t);
      if (!retryable_curl_code(t.code)) throw engine_error(where + ": " + reason, 0, false);
    } else {
      status = static_cast<int>(t.status);
      if (status >= 200 && status < 300) {
        try {
          return detail::parse_chat_completion(t.body);
        } catch (const engine_error& e) {
          std::string what = where + ": HTTP " + std::to_string(status) + ", but " + self.safe(e.what());
          if (std::string_view(e.what()).starts_with("the response body is not JSON"))
            what += ": \"" + self.safe(one_line(t.body, 80)) + "\"";
          throw engine_error(what, status, false);
        }
      }
      reason = "HTTP " + std::to_string(status);
      const std::string server = self.safe(detail::server_error_message(t.body));
      if (!server.empty()) reason += ": " + server;
      if (std::find(o.retry_statuses.begin(), o.retry_statuses.end(), status) == o.retry_statuses.end())
        throw engine_error(where + ": " + reason, status, false);
    }

    // A transient failure: retry while the budget lasts.
    if (attempt >= attempts)
      throw engine_error(where + ": " + reason + " (gave up after " + std::to_string(attempts) +
                             (attempts == 1 ? " attempt)" : " attempts)"),
                         status, true);
    const std::chrono::nanoseconds wait = self.wait_before(attempt, t);
    detail::log().warn("{} failed ({}); transport retry {}/{} in {:.3f} s", where, reason, attempt, o.max_retries,
                       std::chrono::duration<double>(wait).count());
    if (wait.count() > 0) {
      if (o.sleep) o.sleep(wait);
      else detail::default_sleep(wait);
    }
  }
}

}  // namespace covenant
