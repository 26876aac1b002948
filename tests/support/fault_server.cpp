// The fault-injection model server (see fault_server.hpp).
#include "fault_server.hpp"

#include <boost/json.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ctime>
#include <mutex>
#include <stdexcept>

#include "anthropic_replies.hpp"

namespace covenant_test {

namespace json = boost::json;

std::string_view to_string(fault f) noexcept {
  switch (f) {
    case fault::none: return "none";
    case fault::rate_limited: return "rate_limited";
    case fault::rate_limited_date: return "rate_limited_date";
    case fault::rate_limited_ms: return "rate_limited_ms";
    case fault::rate_limited_bare: return "rate_limited_bare";
    case fault::server_error_html: return "server_error_html";
    case fault::server_error_empty: return "server_error_empty";
    case fault::close_at_once: return "close_at_once";
    case fault::cut_body: return "cut_body";
    case fault::hold: return "hold";
    case fault::trickle: return "trickle";
    case fault::not_json: return "not_json";
    case fault::empty_choices: return "empty_choices";
    case fault::stream_cut: return "stream_cut";
    case fault::stream_comments: return "stream_comments";
    case fault::stream_stall: return "stream_stall";
    case fault::close_reused: return "close_reused";
  }
  return "?";
}

std::vector<fault> all_faults() {
  std::vector<fault> out;
  for (int f = static_cast<int>(fault::none); f <= static_cast<int>(fault::stream_stall); ++f)
    out.push_back(static_cast<fault>(f));
  return out;
}

bool stream_only(fault f) noexcept {
  return f == fault::stream_cut || f == fault::stream_comments || f == fault::stream_stall;
}

std::string_view to_string(dialect d) noexcept { return d == dialect::anthropic ? "anthropic" : "openai"; }

namespace {

std::uint64_t mix64(std::uint64_t x) noexcept {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(std::string_view s) noexcept {
  std::uint64_t h = 1469598103934665603ULL;
  for (const unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

double unit(std::uint64_t x) noexcept { return static_cast<double>(x >> 11) * 0x1.0p-53; }

/// The forced tool's name, when the request forces one (either dialect), else "".
std::string forced_tool(const json::object& body) {
  const json::value* choice = body.if_contains("tool_choice");
  if (choice == nullptr || !choice->is_object()) return {};
  const json::object& c = choice->as_object();
  if (const json::value* n = c.if_contains("name"); n != nullptr && n->is_string()) return std::string(n->as_string());
  if (const json::value* f = c.if_contains("function"); f != nullptr && f->is_object())
    if (const json::value* n = f->as_object().if_contains("name"); n != nullptr && n->is_string())
      return std::string(n->as_string());
  return {};
}

std::string openai_tool_completion(const std::string& name, const std::string& arguments) {
  json::object call{{"id", "call_1"}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
  json::object message{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array{std::move(call)}}};
  return json::serialize(json::object{
      {"id", "chatcmpl-1"},
      {"object", "chat.completion"},
      {"model", "loopback"},
      {"choices", json::array{{{"index", 0}, {"message", std::move(message)}, {"finish_reason", "tool_calls"}}}},
      {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}});
}

std::vector<std::string> openai_tool_stream(const std::string& name, const std::vector<std::string>& pieces) {
  auto event = [](const json::value& v) { return "data: " + json::serialize(v) + "\n\n"; };
  auto chunk = [](json::object delta, json::value finish) {
    return json::value{{"id", "chatcmpl-1"},
                       {"object", "chat.completion.chunk"},
                       {"model", "loopback"},
                       {"choices", json::array{{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish)}}}}};
  };
  std::vector<std::string> out;
  json::object first_call{{"index", 0}, {"id", "call_1"}, {"type", "function"}, {"function", {{"name", name}, {"arguments", ""}}}};
  out.push_back(event(chunk({{"role", "assistant"}, {"tool_calls", json::array{std::move(first_call)}}}, nullptr)));
  for (const std::string& p : pieces)
    out.push_back(event(chunk({{"tool_calls", json::array{{{"index", 0}, {"function", {{"arguments", p}}}}}}}, nullptr)));
  out.push_back(event(chunk({}, json::value("tool_calls"))));
  out.push_back(event(json::value{{"id", "chatcmpl-1"},
                                  {"object", "chat.completion.chunk"},
                                  {"model", "loopback"},
                                  {"choices", json::array{}},
                                  {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}}));
  out.push_back("data: [DONE]\n\n");
  return out;
}

std::string http_date(std::chrono::system_clock::time_point t) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

}  // namespace

std::string fault_server::key_of(std::string_view body) {
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return {};
  const json::value* messages = v.as_object().if_contains("messages");
  if (messages == nullptr || !messages->is_array()) return {};
  for (const json::value& m : messages->as_array()) {
    if (!m.is_object()) continue;
    const json::value* role = m.as_object().if_contains("role");
    if (role == nullptr || !role->is_string() || role->as_string() != "user") continue;
    const json::value* content = m.as_object().if_contains("content");
    if (content == nullptr) return {};
    if (content->is_string()) return std::string(content->as_string());
    std::string text;
    if (content->is_array())
      for (const json::value& block : content->as_array())
        if (block.is_object())
          if (const json::value* t = block.as_object().if_contains("text"); t != nullptr && t->is_string())
            text += t->as_string();
    return text;
  }
  return {};
}

struct fault_server::impl {
  fault_options o;
  mutable std::mutex mutex;
  std::map<std::string, std::vector<fault>> served;
  std::map<fault, std::size_t> counts;
  std::unique_ptr<loopback_server> server;

  fault draw(const std::string& key, std::size_t n, bool stream) const {
    if (!o.script.empty()) {
      const fault f = n < o.script.size() ? o.script[n] : fault::none;
      return stream_only(f) && !stream ? fault::none : f;
    }
    const std::uint64_t h = mix64(mix64(o.seed ^ fnv1a(key)) + n);
    if (unit(h) >= o.fault_rate) return fault::none;
    double total = 0;
    for (const auto& [f, w] : o.mix)
      if (f != fault::none && (stream || !stream_only(f))) total += w;
    if (total <= 0) return fault::none;
    double at = unit(mix64(h)) * total;
    for (const auto& [f, w] : o.mix) {
      if (f == fault::none || (!stream && stream_only(f))) continue;
      if (at < w) return f;
      at -= w;
    }
    return fault::none;
  }

  /// The good reply to `body` (whole or streamed, in the request's mode).
  response_plan good(const json::object& body, const std::string& key, bool stream) const {
    const std::string answer = o.answer ? o.answer(key) : std::string(R"({"label": "ok"})");
    const std::string tool = forced_tool(body);
    response_plan p;
    if (!stream) {
      if (o.dialect == dialect::anthropic)
        p.body = tool.empty() ? anthropic_message(answer) : anthropic_tool_message(tool, answer);
      else
        p.body = tool.empty() ? openai_completion(answer) : openai_tool_completion(tool, answer);
      return p;
    }
    // Two pieces: the first five bytes, then the rest (a stream cut after the first piece has
    // content that is not yet a value).
    const std::vector<std::string> pieces = answer.size() > 5 ? std::vector<std::string>{answer.substr(0, 5), answer.substr(5)}
                                                              : std::vector<std::string>{answer};
    p.content_type = "text/event-stream";
    if (o.dialect == dialect::anthropic)
      p.chunks = anthropic_stream(pieces, !tool.empty(), tool.empty() ? "end_turn" : "tool_use", 10, 5,
                                  tool.empty() ? "output" : tool);
    else
      p.chunks = tool.empty() ? openai_stream(pieces) : openai_tool_stream(tool, pieces);
    return p;
  }

  response_plan plan(const received_request& r, const std::string& key, std::size_t n, fault& f) const {
    boost::system::error_code ec;
    const json::value v = json::parse(r.body, ec);
    const json::object empty;
    const json::object& body = !ec && v.is_object() ? v.as_object() : empty;
    const json::value* s = body.if_contains("stream");
    const bool stream = s != nullptr && s->is_bool() && s->as_bool();
    f = draw(key, n, stream);
    const std::uint64_t h = mix64(o.seed ^ fnv1a(key) ^ (n * 0x51ULL));
    response_plan p;
    switch (f) {
      case fault::none: return good(body, key, stream);
      case fault::rate_limited:
      case fault::rate_limited_date:
      case fault::rate_limited_ms:
      case fault::rate_limited_bare:
        p.status = 429;
        p.body = o.dialect == dialect::anthropic
                     ? anthropic_error("rate_limit_error", "Number of request tokens has exceeded your rate limit")
                     : R"({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}})";
        if (f == fault::rate_limited) p.headers = {{"Retry-After", o.retry_after}};
        if (f == fault::rate_limited_ms) p.headers = {{"retry-after-ms", o.retry_after_ms}};
        if (f == fault::rate_limited_date)
          p.headers = {{"Retry-After", http_date(std::chrono::system_clock::now() + std::chrono::seconds(1))}};
        return p;
      case fault::server_error_html:
      case fault::server_error_empty: {
        static constexpr int statuses[] = {500, 502, 503, 529};
        p.status = statuses[h % 4];
        if (f == fault::server_error_html) {
          p.content_type = "text/html";
          p.body = "<html><head><title>" + std::to_string(p.status) +
                   "</title></head><body><center><h1>Bad Gateway</h1></center><hr><center>nginx</center></body></html>\n";
        } else {
          p.content_type = "text/plain";
        }
        return p;
      }
      case fault::close_at_once:
        p.close_at_once = true;
        if (r.on_connection > 0) f = fault::close_reused;
        return p;
      case fault::close_reused: return p;  // never drawn
      case fault::cut_body:
        if (stream) {
          p.content_type = "text/event-stream";
          p.close_mid_stream = true;  // the head, then the connection closed before any event
          return p;
        }
        p = good(body, key, false);
        p.cut_after = p.body.size() / 2;
        return p;
      case fault::hold: p.hang = true; return p;
      case fault::trickle:
        p = good(body, key, stream);
        if (!stream) {
          p.trickle = o.trickle_bytes;
        } else {
          std::string all;
          for (const std::string& c : p.chunks) all += c;
          p.chunks.clear();
          for (std::size_t at = 0; at < all.size(); at += o.trickle_bytes) p.chunks.push_back(all.substr(at, o.trickle_bytes));
        }
        p.chunk_delay = o.trickle_delay;
        return p;
      case fault::not_json:
        p.content_type = "text/html";
        p.body = "<html><body>upstream connect error or disconnect/reset before headers</body></html>";
        return p;
      case fault::empty_choices:
        p.body = o.dialect == dialect::anthropic
                     ? R"({"id": "msg_1", "type": "message", "role": "assistant", "model": "loopback", "content": [],)"
                       R"( "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 10, "output_tokens": 0}})"
                     : R"({"id": "chatcmpl-1", "object": "chat.completion", "model": "loopback", "choices": [],)"
                       R"( "usage": {"prompt_tokens": 10, "completion_tokens": 0}})";
        return p;
      case fault::stream_cut:
      case fault::stream_stall: {
        p = good(body, key, true);
        // Whole events up to the first content piece; then half of the next event and the
        // connection closed, or nothing more on an open connection.
        const std::size_t first_content = o.dialect == dialect::anthropic ? 4 : 2;
        std::vector<std::string> cut(p.chunks.begin(), p.chunks.begin() + static_cast<std::ptrdiff_t>(first_content));
        if (f == fault::stream_cut) {
          cut.push_back(p.chunks[first_content].substr(0, p.chunks[first_content].size() / 2));
          p.close_mid_stream = true;
        } else {
          p.stall = true;
        }
        p.chunks = std::move(cut);
        return p;
      }
      case fault::stream_comments:
        p.content_type = "text/event-stream";
        p.keep_alive = ": keep-alive\n\n";
        p.chunk_delay = o.comment_every;
        return p;
    }
    return p;
  }
};

fault_server::fault_server(fault_options o) : impl_(std::make_unique<impl>()) {
  impl_->o = std::move(o);
  if (impl_->o.mix.empty())
    for (fault f : all_faults())
      if (f != fault::none) impl_->o.mix.emplace_back(f, 1.0);
  impl* self = impl_.get();
  impl_->server = std::make_unique<loopback_server>(
      [self](const received_request& r, std::size_t) {
        const std::string key = key_of(r.body);
        std::size_t n = 0;
        {
          std::lock_guard lock(self->mutex);
          n = self->served[key].size();
          self->served[key].push_back(fault::none);  // its place, filled in below
        }
        fault f = fault::none;
        response_plan p = self->plan(r, key, n, f);
        std::lock_guard lock(self->mutex);
        self->served[key][n] = f;
        ++self->counts[f];
        return p;
      },
      impl_->o.keep_requests);
}

fault_server::~fault_server() = default;

std::string fault_server::base_url() const {
  return impl_->o.dialect == dialect::anthropic ? "http://127.0.0.1:" + std::to_string(port()) : impl_->server->base_url();
}
unsigned short fault_server::port() const noexcept { return impl_->server->port(); }
std::size_t fault_server::requests() const { return impl_->server->requests(); }

std::vector<fault> fault_server::served(const std::string& key) const {
  std::lock_guard lock(impl_->mutex);
  auto it = impl_->served.find(key);
  return it == impl_->served.end() ? std::vector<fault>{} : it->second;
}

std::map<std::string, std::vector<fault>> fault_server::served() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->served;
}

std::map<fault, std::size_t> fault_server::counts() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->counts;
}

const loopback_server& fault_server::server() const noexcept { return *impl_->server; }

unsigned short refused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("refused_port: socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);  // bound and closed, never listened on: connections are refused
  return ntohs(addr.sin_port);
}

}  // namespace covenant_test
